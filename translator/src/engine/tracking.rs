//! Sequence tracking of DTA reports: which reports are tracked, the check of a tracked one's seqnum,
//! and the DTA NACK back to its reporter after a gap or a refusal.

use dta_protocol::dta::{BaseRepr, Opcode};
use dta_protocol::udp::UdpFrame;

use super::state::Engine;
use crate::counters::DropReason;
use crate::sequence::{nack_frame, Stream, Verdict};
use crate::time::Instant;

impl Engine {
    /// Whether the report with base header `base` has its seqnum tracked under this configuration.
    #[inline(always)]
    pub(super) fn tracks(&self, base: &BaseRepr) -> bool {
        tracked(base, self.cfg.sequence.enabled)
    }

    /// Checks a tracked report's seqnum: `Some(seq)` to go on, `None` when it was dropped (and NACKed
    /// after a gap).
    #[cold]
    pub(super) fn track(
        &mut self,
        now: Instant,
        frame: &[u8],
        stream: Stream,
        seq: u8,
    ) -> Option<u8> {
        match self.seq.check(now, stream, seq) {
            Some(Verdict::Accept) | None => Some(seq),
            Some(Verdict::Gap { nack }) => {
                if let Some(s) = nack {
                    self.send_nack(frame, stream.opcode, s);
                }
                self.counters.drop(DropReason::OutOfOrder);
                None
            }
            Some(Verdict::Duplicate) => {
                self.counters.drop(DropReason::Duplicate);
                None
            }
        }
    }

    /// Queues a DTA NACK to the reporter of `frame` (a report frame that [`UdpView::parse`] took).
    #[cold]
    pub(super) fn send_nack(&mut self, frame: &[u8], op: Opcode, seqnum: u8) {
        let Ok(report) = UdpFrame::parse(frame) else {
            return;
        };
        if let Some(f) = nack_frame(&report.endpoints, self.fmt.form, op, seqnum) {
            self.counters.dta_nacks_sent += 1;
            self.nacks.push_back(f);
        }
    }
}

/// Whether a report with base header `base` has its seqnum tracked, tracking on or not (`enabled`): a
/// retransmittable report in the seq form (the compact form has no seqnum). [`Engine::tracks`]'s rule,
/// and the Key-Write run's.
#[inline(always)]
pub(super) fn tracked(base: &BaseRepr, enabled: bool) -> bool {
    base.seqnum.is_some() && base.retransmit && enabled
}
