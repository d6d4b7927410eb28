//! The engine's INT path: a report on the INT port becomes [`Action`]s, each routed and handed to a
//! primitive as the DTA report it stands for would be; with several workers, the work on other workers'
//! flows leaves as [`handoff`] messages, and the messages other workers sent are applied.

use dta_protocol::dta::{AppendRepr, KeyIncrementRepr, KeyWriteRepr, Opcode};
use dta_protocol::hash::key_checksum;
use dta_protocol::int::mapping::{drop_counter_key, flow_hop_key, HOP_RECORD_LEN};
use dta_protocol::udp::{UdpView, Uncommon};

use super::state::Engine;
use super::submit::Work;
use crate::counters::DropReason;
use crate::int::handoff::{self, Message, MAX_ITEMS, MAX_LEN};
use crate::int::{Action, Actions, IntDrop, IntFrontEnd, Shard, Translated};
use crate::primitives::keywrite::KeyWriteReport;
use crate::primitives::postcard::Postcard;
use crate::primitives::Outcome;
use crate::time::Instant;

/// Key-Write data is at most this long (the 32-byte entry's 28 bytes).
const MAX_DATA: usize = 28;

impl Engine {
    /// Makes this engine worker `index` of `count` for INT: it translates every report it receives and
    /// applies the work on its own flows; [`handle_int_frames`](Self::handle_int_frames) gives the work
    /// on other workers' flows to the caller to carry. One worker (the default) does everything.
    pub fn set_int_shard(&mut self, index: usize, count: usize) {
        if let Some(front) = self.int.as_mut() {
            front.set_shard(Shard {
                index,
                count: count.clamp(1, 64),
            });
        }
    }

    /// Handles a burst of INT report frames this worker received (steering found them on the INT port).
    /// For each received frame whose reports name flows of other workers, `hand_over(i, worker,
    /// message)` is called once a worker (more than once when its work exceeds one message's
    /// [`MAX_ITEMS`]), in frame order: frame `i` of the burst left `message` for `worker`, to be given to
    /// its [`handle_int_work`](Self::handle_int_work).
    pub fn handle_int_frames<'f>(
        &mut self,
        now: Instant,
        frames: impl IntoIterator<Item = &'f [u8]>,
        mut hand_over: impl FnMut(usize, usize, &[u8]),
    ) {
        let mut out = Translated::default();
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
            let Some(front) = self.int.as_mut() else {
                continue;
            };
            out.clear();
            front.translate(udp.payload, &mut self.counters.int, &mut out);
            self.int_actions(now, udp.dst_ip, &out.actions);
            if !out.handed.is_empty() {
                emit_handed(udp.dst_ip, &out, |worker, m| hand_over(i, worker, m));
            }
        }
    }

    /// Applies messages of work on this worker's flows that other workers' [`handle_int_frames`]
    /// (Self::handle_int_frames) left for it. A message that does not read as one (a bug between
    /// workers, never a frame of the wire) is counted as a malformed INT report.
    pub fn handle_int_work<'m>(
        &mut self,
        now: Instant,
        messages: impl IntoIterator<Item = &'m [u8]>,
    ) {
        let mut actions = Actions::new();
        for m in messages {
            let m = match Message::parse(m) {
                Ok(m) => m,
                Err(_) => {
                    self.counters.int.drop(IntDrop::Malformed);
                    continue;
                }
            };
            for w in m.items() {
                // One item at a time: a postcard of hop 1 stands for every hop remembered of its flow.
                let Some(front) = self.int.as_mut() else {
                    return;
                };
                actions.clear();
                front.apply(w, &mut actions);
                self.int_actions(now, m.dst_ip(), &actions);
            }
        }
    }

    /// The UDP port this engine takes INT reports on, when it does.
    pub fn int_port(&self) -> Option<u16> {
        self.int.as_ref().map(IntFrontEnd::udp_port)
    }

    /// Handles the UDP payload of an INT report on a path with no handoff (see
    /// [`IntFrontEnd::translate_alone`]).
    pub(super) fn handle_int_alone(&mut self, now: Instant, dst_ip: [u8; 4], payload: &[u8]) {
        let Some(front) = self.int.as_mut() else {
            return;
        };
        let mut out = Translated::default();
        front.translate_alone(payload, &mut self.counters.int, &mut out);
        self.int_actions(now, dst_ip, &out.actions);
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

/// Items a message of the common case holds (see `emit_handed`).
const SMALL: usize = 4;

/// Writes the work `out` left for other workers as messages, one owner after another (in the order
/// each first appears), each owner's items in report order, and gives each to `send(worker, message)`.
fn emit_handed(dst_ip: [u8; 4], out: &Translated, mut send: impl FnMut(usize, &[u8])) {
    // A per-hop report leaves one or two items: no need to clear a buffer for 64.
    let mut small = [0u8; handoff::HEADER_LEN + SMALL * handoff::ITEM_LEN];
    let mut large;
    let buf: &mut [u8] = if out.handed.len() <= SMALL {
        &mut small
    } else {
        large = [0u8; MAX_LEN];
        &mut large
    };
    let mut done: u64 = 0;
    for &(owner, _) in &out.handed {
        let bit = 1u64 << (owner % 64);
        if done & bit != 0 {
            continue;
        }
        done |= bit;
        let mut mine = out
            .handed
            .iter()
            .filter(|&&(o, _)| o == owner)
            .map(|&(_, w)| w);
        while let Some(len) = handoff::emit(dst_ip, mine.by_ref().take(MAX_ITEMS), buf) {
            send(owner, &buf[..len]);
        }
    }
}
