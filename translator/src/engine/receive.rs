//! The engine's receive path: a frame, or a burst of them, sorted into DTA reports, INT reports, RoCE
//! responses from a collector, and frames to forward; runs of plain Key-Write reports go to the run loop.

use dta_protocol::dta::Opcode;
use dta_protocol::roce::ROCEV2_UDP_PORT;
use dta_protocol::udp::{UdpView, Uncommon, HEADERS_LEN as UDP_PAYLOAD_AT};

use super::outputs::Handled;
use super::state::Engine;
use crate::int::IntFrontEnd;
use crate::time::Instant;

impl Engine {
    /// Handles one received frame.
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) -> Handled {
        self.frame::<true>(now, frame)
    }

    /// Handles a burst of received frames in order, as [`handle_frame`](Self::handle_frame) on each
    /// (the same state, counters and output), and hands each frame that is not for the translator to
    /// `not_for_us` for the I/O layer to forward. One call per receive burst instead of one per frame: the
    /// per-frame path is inlined into this loop.
    pub fn handle_frames<'f>(
        &mut self,
        now: Instant,
        frames: impl IntoIterator<Item = &'f [u8]>,
        not_for_us: impl FnMut(&'f [u8]),
    ) {
        self.burst::<true>(now, frames, not_for_us);
    }

    /// [`handle_frames`](Self::handle_frames) for a burst from a port that faces the reporters, not the
    /// collectors: RoCE responses there are not for the translator (a host on the reporters' side could
    /// otherwise forge ACKs that retire writes the collector never applied, or NAKs that break a QP), and
    /// go to `not_for_us` like any other frame.
    pub fn handle_reporter_frames<'f>(
        &mut self,
        now: Instant,
        frames: impl IntoIterator<Item = &'f [u8]>,
        not_for_us: impl FnMut(&'f [u8]),
    ) {
        self.burst::<false>(now, frames, not_for_us);
    }

    /// The loop of both: `RESPONSES` says whether RoCE responses are taken.
    #[inline(always)]
    fn burst<'f, const RESPONSES: bool>(
        &mut self,
        now: Instant,
        frames: impl IntoIterator<Item = &'f [u8]>,
        mut not_for_us: impl FnMut(&'f [u8]),
    ) {
        let mut frames = frames.into_iter();
        while let Some(mut f) = frames.next() {
            // A frame that looks like a Key-Write report (the opcode where a report without IP options has
            // it) starts a run of them, which one call handles; it gives back the first frame it leaves to
            // the general path. (One general call site: with two, LLVM took the report path out of line.)
            if f.get(UDP_PAYLOAD_AT) == Some(&Opcode::KeyWrite.code()) {
                match self.key_write_run(f, &mut frames) {
                    Some(other) => f = other,
                    None => return,
                }
            }
            if self.frame::<RESPONSES>(now, f) == Handled::NotForUs {
                not_for_us(f);
            }
        }
    }

    /// [`handle_frame`](Self::handle_frame)'s body, inlined into it and into
    /// [`handle_frames`](Self::handle_frames)' loop.
    #[inline(always)]
    fn frame<const RESPONSES: bool>(&mut self, now: Instant, frame: &[u8]) -> Handled {
        self.counters.frames_in += 1;
        // Fixed offsets, etherparse's checks (dta-protocol tests that both agree), and only the fields a
        // report needs: once per report. Other frames take the general parse apart, so that the common
        // frame's fields stay in registers.
        match UdpView::parse_common(frame) {
            Ok(Some(udp)) => self.udp::<RESPONSES>(now, frame, udp),
            Ok(None) => self.not_for_us(),
            Err(Uncommon) => self.uncommon::<RESPONSES>(now, frame),
        }
    }

    /// A frame that [`UdpView::parse_common`] leaves to the general parse.
    #[cold]
    #[inline(never)]
    fn uncommon<const RESPONSES: bool>(&mut self, now: Instant, frame: &[u8]) -> Handled {
        match UdpView::parse(frame) {
            Some(udp) => self.udp::<RESPONSES>(now, frame, udp),
            None => self.not_for_us(),
        }
    }

    /// Handles a UDP datagram, `frame` seen through `udp`.
    #[inline]
    fn udp<const RESPONSES: bool>(&mut self, now: Instant, frame: &[u8], udp: UdpView) -> Handled {
        if udp.dst_port == self.cfg.report.udp_port {
            // Fields by value, so that they stay in registers on the way.
            self.handle_report(now, frame, udp.payload, udp.src_ip, udp.dst_ip);
            return Handled::Consumed;
        }
        if self.int.as_ref().map(IntFrontEnd::udp_port) == Some(udp.dst_port) {
            // No handoff here: several workers split INT frames with `handle_int_frames`. On a sharded
            // engine the reports of other workers' flows are counted as not this engine's, never lost.
            self.handle_int_alone(now, udp.dst_ip, udp.payload);
            return Handled::Consumed;
        }
        // RoCE between a collector and another host crosses a bump in the wire too: only what is
        // addressed to us is a response.
        if RESPONSES && udp.dst_port == ROCEV2_UDP_PORT && udp.dst_ip == self.cfg.local.ip {
            return self.roce(now, frame, udp.src_ip, udp.payload_offset, udp.payload);
        }
        self.not_for_us()
    }
}
