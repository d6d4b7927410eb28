//! The engine's INT path: a report on the INT port becomes [`Action`]s, each routed and handed to a
//! primitive as the DTA report it stands for would be.

use dta_protocol::dta::{AppendRepr, KeyIncrementRepr, KeyWriteRepr, Opcode};
use dta_protocol::hash::key_checksum;
use dta_protocol::int::mapping::{drop_counter_key, flow_hop_key, HOP_RECORD_LEN};
use dta_protocol::udp::{UdpView, Uncommon};

use super::state::Engine;
use super::submit::Work;
use crate::counters::DropReason;
use crate::int::{Action, Actions, HandOver, IntFrontEnd, Shard};
use crate::primitives::keywrite::KeyWriteReport;
use crate::primitives::postcard::Postcard;
use crate::primitives::Outcome;
use crate::time::Instant;

/// Key-Write data is at most this long (the 32-byte entry's 28 bytes).
const MAX_DATA: usize = 28;

impl Engine {
    /// Makes this engine worker `index` of `count` for INT: it translates the reports of its own flows,
    /// and [`handle_int_frames`](Self::handle_int_frames) says which frames other workers must see too.
    /// One worker (the default) translates everything.
    pub fn set_int_shard(&mut self, index: usize, count: usize) {
        if let Some(front) = self.int.as_mut() {
            front.set_shard(Shard {
                index,
                count: count.clamp(1, 64),
            });
        }
    }

    /// Handles a burst of INT report frames (steering found them on the INT port), `handed` whether
    /// another worker received them and handed them over (this engine then translates only its own
    /// flows' reports). For a received frame whose reports belong to other workers' flows too,
    /// `hand_over(i, workers)` names frame `i` of the burst and those workers (bit `k`: worker `k`).
    pub fn handle_int_frames<'f>(
        &mut self,
        now: Instant,
        frames: impl IntoIterator<Item = &'f [u8]>,
        handed: bool,
        mut hand_over: impl FnMut(usize, HandOver),
    ) {
        for (i, frame) in frames.into_iter().enumerate() {
            self.counters.frames_in += 1;
            let udp = match UdpView::parse_common(frame) {
                Ok(Some(udp)) => Some(udp),
                Ok(None) => None,
                Err(Uncommon) => UdpView::parse(frame),
            };
            let Some(udp) = udp.filter(|u| Some(u.dst_port) == self.int_port()) else {
                // Steering said INT: a frame that is not after all is nothing of ours.
                self.counters.not_for_us += 1;
                continue;
            };
            let others = if handed {
                self.handle_handed_int(now, udp.dst_ip, udp.payload);
                0
            } else {
                self.handle_int(now, udp.dst_ip, udp.payload)
            };
            if others != 0 {
                hand_over(i, others);
            }
        }
    }

    /// The UDP port this engine takes INT reports on, when it does.
    pub fn int_port(&self) -> Option<u16> {
        self.int.as_ref().map(IntFrontEnd::udp_port)
    }

    /// Handles the UDP payload of an INT report sent to `dst_ip`, received by this worker: what other
    /// workers must still translate of it.
    pub(super) fn handle_int(&mut self, now: Instant, dst_ip: [u8; 4], payload: &[u8]) -> HandOver {
        let Some(front) = self.int.as_mut() else {
            return 0;
        };
        let mut actions = Actions::new();
        let others = front.translate(payload, &mut self.counters.int, &mut actions);
        self.int_actions(now, dst_ip, &actions);
        others
    }

    /// Handles the UDP payload of an INT report on a path with no handoff (see
    /// [`IntFrontEnd::translate_alone`]).
    pub(super) fn handle_int_alone(&mut self, now: Instant, dst_ip: [u8; 4], payload: &[u8]) {
        let Some(front) = self.int.as_mut() else {
            return;
        };
        let mut actions = Actions::new();
        front.translate_alone(payload, &mut self.counters.int, &mut actions);
        self.int_actions(now, dst_ip, &actions);
    }

    /// The part of an INT report another worker received that is this worker's.
    fn handle_handed_int(&mut self, now: Instant, dst_ip: [u8; 4], payload: &[u8]) {
        let Some(front) = self.int.as_mut() else {
            return;
        };
        let mut actions = Actions::new();
        front.translate_handed(payload, &mut self.counters.int, &mut actions);
        self.int_actions(now, dst_ip, &actions);
    }

    fn int_actions(&mut self, now: Instant, dst_ip: [u8; 4], actions: &Actions) {
        for a in actions {
            if let Err(reason) = self.int_action(now, dst_ip, a) {
                self.counters.drop(reason);
            }
        }
    }

    fn int_action(&mut self, now: Instant, dst: [u8; 4], a: &Action) -> Result<(), DropReason> {
        let Some(front) = self.int.as_ref() else {
            return Ok(());
        };
        let n = front.redundancy();
        // Each arm submits its own work: a hop record's data and an event's entry are built in the arm
        // that needs them, not for every action.
        let outcome = match *a {
            Action::Postcard {
                flow,
                hop,
                path_len,
                length_known,
                node,
            } => {
                let p = Postcard {
                    key: flow,
                    hop,
                    path_len,
                    data: node,
                    opcode: if length_known {
                        Opcode::PostcardPathLen
                    } else {
                        Opcode::Postcard
                    },
                    // A sink report, or a topology placement, knows the path's length; a per-hop report
                    // placed by its TTL only bounds it.
                    length_known,
                };
                self.submit(now, dst, Work::Postcard(p))?
            }
            Action::Hop { flow, hop, record } => {
                let key = flow_hop_key(flow, hop);
                let mut data = [0u8; MAX_DATA];
                data[..HOP_RECORD_LEN].copy_from_slice(&record.encode());
                let len = self.cfg.report.keywrite_data_len.min(MAX_DATA);
                let kw = KeyWriteReport {
                    repr: KeyWriteRepr {
                        redundancy: n,
                        key,
                        data: &data[..len],
                    },
                    checksum: key_checksum(key),
                };
                self.submit(now, dst, Work::KeyWrite(kw))?
            }
            Action::DropCount { node, reason } => {
                let ki = KeyIncrementRepr {
                    redundancy: n,
                    key: drop_counter_key(node, reason),
                    counter: 1,
                };
                self.submit(now, dst, Work::KeyIncrement(ki))?
            }
            Action::DropEvent(e) => {
                let list_id = front.drop_list().ok_or(DropReason::NoRegion)?;
                let data = &e.encode();
                self.submit(now, dst, Work::Append(AppendRepr { list_id, data }))?
            }
            Action::QueueEvent(e) => {
                let list_id = front.queue_list().ok_or(DropReason::NoRegion)?;
                let data = &e.encode();
                self.submit(now, dst, Work::Append(AppendRepr { list_id, data }))?
            }
        };
        match outcome {
            Outcome::Accepted => Ok(()),
            // Only Sketch-Merge and sequence-tracked reports come back otherwise; INT uses neither.
            Outcome::Duplicate | Outcome::Gap { .. } => Err(DropReason::Duplicate),
        }
    }
}
