//! RoCE responses from a collector: ACKNOWLEDGEs and ATOMIC ACKNOWLEDGEs read as their few fields, any
//! other response parsed whole, both handed to the collector's requester; a QP error becomes an event.

use dta_protocol::roce::{FrameRepr, QPN_MASK};
use dta_protocol::udp::{UdpFrame, UdpView};
use dta_protocol::Error as WireError;

use super::outputs::{Event, Handled};
use super::state::Engine;
use crate::time::Instant;
use dta_rc::requester::Response;

impl Engine {
    /// A RoCEv2 datagram: a collector's response, or not for us. Out of line, so that the report path
    /// around it keeps its registers (responses come in bursts of their own).
    ///
    /// Takes the few fields of the view that an ACKNOWLEDGE needs, in registers, so that the report path
    /// does not keep the whole view in memory for this call; other responses take the view again from
    /// `frame` (the same view: the caller's came from `UdpView::parse` or its common path).
    #[inline(never)]
    pub(super) fn roce(
        &mut self,
        now: Instant,
        frame: &[u8],
        src_ip: [u8; 4],
        payload_offset: usize,
        payload: &[u8],
    ) -> Handled {
        // The first collector on its own first: with one (the common case), no search loop.
        let i = match self.collectors.first() {
            Some(c) if c.ip == src_ip => Some(0),
            _ => self.collectors.iter().position(|c| c.ip == src_ip),
        };
        match i {
            Some(i) => self.handle_roce(now, i, frame, payload_offset, payload),
            None => self.not_for_us(),
        }
    }

    /// Handles a RoCEv2 datagram from collector `i`. A well-formed ACKNOWLEDGE or ATOMIC ACKNOWLEDGE
    /// (the requester's one response per AckReq, or per FETCH_ADD) is read as its few fields, without
    /// the UDP endpoints or the whole repr; anything else takes the full parse of
    /// [`handle_roce_frame`](Self::handle_roce_frame), which gives the same result for those
    /// (dta-protocol tests that both parses agree; the dispatch below is `Requester::on_response_frame`'s
    /// for them).
    #[inline]
    fn handle_roce(
        &mut self,
        now: Instant,
        i: usize,
        frame: &[u8],
        payload_offset: usize,
        payload: &[u8],
    ) -> Handled {
        let col = &mut self.collectors[i];
        match FrameRepr::parse_ack_cached(frame, payload_offset, payload, &mut col.icrc) {
            Some(Ok(a)) => {
                let ours = self.cfg.local.qpn_base + i as u32;
                let c = &mut self.counters;
                if a.dest_qp != ours & QPN_MASK {
                    c.stale_responses += 1;
                } else {
                    col.qp.on_response(now, a.psn, a.aeth.kind, a.orig, c);
                }
                // `qp_event`'s test on the collector at hand (not found again by index, with its
                // bounds check, for every response).
                if col.qp.error().is_some() {
                    self.qp_event(i);
                }
            }
            Some(Err(e)) => self.count_bad_response(&e),
            None => match UdpView::parse(frame).and_then(|udp| udp.frame(frame)) {
                // The whole envelope, which the general parse reads (`frame` is the view's own frame,
                // so this is always there).
                Some(full) => self.handle_roce_frame(now, i, frame, &full),
                None => return self.not_for_us(),
            },
        }
        Handled::Consumed
    }

    /// Counts a response whose parse failed, by why.
    #[cold]
    fn count_bad_response(&mut self, e: &WireError) {
        match e {
            WireError::IcrcMismatch { .. } => self.counters.bad_icrc_responses += 1,
            _ => self.counters.stale_responses += 1,
        }
    }

    /// A RoCEv2 frame from collector `i` other than a well-formed ACKNOWLEDGE or ATOMIC ACKNOWLEDGE.
    #[cold]
    #[inline(never)]
    pub(super) fn handle_roce_frame(
        &mut self,
        now: Instant,
        i: usize,
        frame: &[u8],
        udp: &UdpFrame,
    ) {
        let c = &mut self.counters;
        let col = &mut self.collectors[i];
        // The UDP layer parsed once, responses read at fixed offsets, the iCRC of the collector's constant
        // headers remembered (dta-protocol tests that this equals `FrameRepr::parse`, errors included).
        let f = match FrameRepr::parse_udp_cached(frame, udp, &mut col.icrc) {
            Ok(f) => f,
            Err(WireError::IcrcMismatch { .. }) => {
                c.bad_icrc_responses += 1;
                return;
            }
            Err(_) => {
                c.stale_responses += 1;
                return;
            }
        };
        let ours = self.cfg.local.qpn_base + i as u32;
        match col.qp.on_response_frame(now, ours, &f, c) {
            Response::Handled => {}
            Response::Cnp => c.cnps += 1,
            Response::NotOurs => c.stale_responses += 1,
        }
        self.qp_event(i);
    }

    /// Queues collector `i`'s QP error as an event, once.
    #[inline]
    fn qp_event(&mut self, i: usize) {
        if let Some(error) = self.collectors[i].qp.error() {
            if !self.events.iter().any(|e| {
                *e == Event::QpError {
                    collector: i,
                    error,
                }
            }) {
                self.events.push_back(Event::QpError {
                    collector: i,
                    error,
                });
            }
        }
    }
}
