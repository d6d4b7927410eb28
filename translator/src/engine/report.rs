//! A DTA report from its UDP payload to its primitive: parsed, counted, its seqnum tracked, its body
//! lowered into [`Work`] and submitted, a refusal counted (and NACKed where the reporter can resend).

use dta_protocol::dta::{BaseRepr, Body, Opcode, ReportRepr};
use dta_protocol::hash::key_checksum;
use dta_protocol::Error as WireError;

use super::state::Engine;
use super::submit::Work;
use crate::counters::DropReason;
use crate::primitives::keywrite::KeyWriteReport;
use crate::primitives::postcard::Postcard;
use crate::primitives::Outcome;
use crate::sequence::Stream;
use crate::time::Instant;

impl Engine {
    #[inline]
    pub(super) fn handle_report(
        &mut self,
        now: Instant,
        frame: &[u8],
        payload: &[u8],
        src_ip: [u8; 4],
        dst_ip: [u8; 4],
    ) {
        // Key-Write, the common report, parsed straight into its values (the same checks and result as
        // `parse_quick`'s, which dta-protocol tests), so that its body is not matched twice.
        if payload.first() == Some(&Opcode::KeyWrite.code()) {
            let Some((base, kw)) = ReportRepr::parse_key_write(payload, &self.fmt) else {
                self.malformed(payload);
                return;
            };
            self.report(now, frame, base, src_ip, dst_ip, |e| {
                e.key_write_parts(kw.redundancy, kw.key, kw.data, dst_ip)
            });
            return;
        }
        // Fixed offsets for the configured format; a report that does not pass goes through the layered
        // parse for its error (dta-protocol tests that both agree, errors included).
        let Some(r) = ReportRepr::parse_quick(payload, &self.fmt) else {
            self.malformed(payload);
            return;
        };
        self.report(now, frame, r.base, src_ip, dst_ip, |e| {
            e.dispatch(now, &r, frame, dst_ip)
        });
    }

    /// A parsed report with base header `base`: counted, its seqnum tracked, then handed to `dispatch`,
    /// whose drop is counted (a full queue rolls the seqnum back and NACKs).
    #[inline(always)]
    fn report(
        &mut self,
        now: Instant,
        frame: &[u8],
        base: BaseRepr,
        src_ip: [u8; 4],
        dst_ip: [u8; 4],
        dispatch: impl FnOnce(&mut Self) -> Result<(), DropReason>,
    ) {
        let op = base.opcode;
        self.counters.reports_in[op.index()] += 1;
        // Built where it is used, off the common path (an untracked report needs none).
        let stream = || Stream {
            reporter: src_ip,
            collector: dst_ip,
            opcode: op,
        };
        // Sequence tracking (`tracks`). Set inside the tracked branch rather than matched out of it: the
        // match made the untracked path store a `None` and test it again before `dispatch` (~2
        // instructions a report).
        let mut tracked = None;
        if let (Some(seq), true) = (base.seqnum, self.tracks(&base)) {
            let Some(seq) = self.track(now, frame, stream(), seq) else {
                return;
            };
            tracked = Some(seq);
        }
        if let Err(reason) = dispatch(self) {
            // Refused for now (no room, or a collector that cannot be used until it comes back): a
            // retransmittable report is NACKed so that its reporter sends it again.
            if matches!(
                reason,
                DropReason::QueueFull | DropReason::CollectorUnusable
            ) {
                if let Some(seq) = tracked {
                    let last = self.seq.rollback(stream(), seq);
                    self.send_nack(frame, op, last);
                }
            }
            self.counters.drop(reason);
        }
    }

    /// Counts the drop of a report that does not parse, by [`ReportRepr::parse`]'s reason.
    #[cold]
    fn malformed(&mut self, payload: &[u8]) {
        let reason = match ReportRepr::parse(payload, &self.fmt) {
            Err(WireError::BadRedundancy { .. }) => DropReason::BadRedundancy,
            // `parse_quick` refused it, so `parse` does too (dta-protocol tests that they agree).
            _ => DropReason::Malformed,
        };
        self.counters.drop(reason);
    }

    // Inlined into its one caller: the report is then read from registers, not spilled for a call.
    #[inline(always)]
    pub(super) fn dispatch(
        &mut self,
        now: Instant,
        r: &ReportRepr,
        frame: &[u8],
        dst: [u8; 4],
    ) -> Result<(), DropReason> {
        // Each arm submits the work its body lowers to, so that `submit` (inlined) is specialised to it.
        let outcome = match r.body {
            // `handle_report` takes Key-Write reports through `ReportRepr::parse_key_write` before
            // dispatch (and the burst loop's `key_write_run` takes runs of them before even that), so
            // this arm is the general path only: correct if reached, never a panic on input.
            Body::KeyWrite(repr) => {
                let kw = KeyWriteReport {
                    repr,
                    checksum: key_checksum(repr.key),
                };
                self.submit(now, dst, Work::KeyWrite(kw))?
            }
            Body::KeyIncrement(ki) => self.submit(now, dst, Work::KeyIncrement(ki))?,
            Body::Append(a) => self.submit(now, dst, Work::Append(a))?,
            Body::Postcard(p) => {
                let p = Postcard {
                    key: p.key,
                    hop: p.hop,
                    path_len: self.cfg.postcard.hops,
                    data: p.data,
                    opcode: Opcode::Postcard,
                    // Opcode 0x04's paths are B hops long by definition.
                    length_known: true,
                };
                self.submit(now, dst, Work::Postcard(p))?
            }
            Body::PostcardPathLen(p) => {
                let p = Postcard {
                    key: p.key,
                    hop: p.hop,
                    path_len: p.path_len,
                    data: p.data,
                    opcode: Opcode::PostcardPathLen,
                    length_known: true,
                };
                self.submit(now, dst, Work::Postcard(p))?
            }
            Body::SketchMerge(s) => self.submit(now, dst, Work::SketchMerge(s))?,
        };
        match outcome {
            Outcome::Accepted => Ok(()),
            Outcome::Duplicate => Err(DropReason::Duplicate),
            Outcome::Gap { last_in_order } => {
                self.send_nack(frame, r.base.opcode, last_in_order);
                Err(DropReason::OutOfOrder)
            }
        }
    }
}
