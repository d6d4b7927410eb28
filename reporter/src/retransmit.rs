//! The bounded buffer of retransmittable reports that a DTA NACK replays.
//!
//! A NACK names the last seqnum the translator received in order; every buffered report after it was lost
//! or dropped behind the gap and is sent again, byte for byte, in the original order. Reports at or before
//! it were received, so the NACK also frees them. The translator calls a seqnum up to 127 ahead of the one
//! it expects a gap and anything further a duplicate, so a stream never keeps more than 127 reports: a
//! replay longer than that would be discarded by the translator anyway.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};

use dta_protocol::dta::Opcode;

/// Most reports one (collector, opcode) stream keeps.
pub const MAX_PER_STREAM: usize = 127;

/// A report as sent: where to, its seqnum and its UDP payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The destination it was sent to (collector IP, translator UDP port).
    pub to: SocketAddrV4,
    /// Its seqnum.
    pub seqnum: u8,
    /// Its UDP payload.
    pub payload: Vec<u8>,
}

/// What a NACK did to the buffer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Replay {
    /// The reports to send again, oldest first.
    pub resend: Vec<Sent>,
    /// Reports the NACK acknowledged (freed).
    pub acknowledged: usize,
    /// Whether the first missing report (the NACK's seqnum + 1) was no longer buffered: the gap cannot be
    /// repaired, and the translator will keep dropping this stream until it resynchronises.
    pub unrecoverable: bool,
}

/// Retransmittable reports per (collector, opcode), each stream bounded.
#[derive(Debug, Clone)]
pub struct RetransmitBuffer {
    capacity: usize,
    streams: HashMap<(Ipv4Addr, u8), VecDeque<Sent>>,
    evicted: u64,
}

impl RetransmitBuffer {
    /// A buffer keeping up to `capacity` reports per stream (clamped to `1..=MAX_PER_STREAM`).
    pub fn new(capacity: usize) -> Self {
        RetransmitBuffer {
            capacity: capacity.clamp(1, MAX_PER_STREAM),
            streams: HashMap::new(),
            evicted: 0,
        }
    }

    /// Reports per stream kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Reports pushed out by newer ones before any NACK freed them.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Reports buffered for `(collector, op)`.
    pub fn len(&self, collector: Ipv4Addr, op: Opcode) -> usize {
        self.streams
            .get(&(collector, op.code()))
            .map_or(0, VecDeque::len)
    }

    /// Keeps a report just sent; the oldest of its stream goes when the stream is full.
    pub fn push(&mut self, op: Opcode, sent: Sent) {
        let q = self.streams.entry((*sent.to.ip(), op.code())).or_default();
        if q.len() >= self.capacity {
            q.pop_front();
            self.evicted += 1;
        }
        q.push_back(sent);
    }

    /// Handles a NACK from `collector` for `op` whose last in-order seqnum is `last`.
    pub fn on_nack(&mut self, collector: Ipv4Addr, op: Opcode, last: u8) -> Replay {
        let mut out = Replay::default();
        let Some(q) = self.streams.get_mut(&(collector, op.code())) else {
            // Nothing was ever buffered: whatever is missing is not ours to repair.
            out.unrecoverable = true;
            return out;
        };
        let first_missing = last.wrapping_add(1);
        // Behind `first_missing` (in the 8-bit circle) means received: free those.
        while let Some(s) = q.front() {
            if s.seqnum.wrapping_sub(first_missing) >= 128 {
                q.pop_front();
                out.acknowledged += 1;
            } else {
                break;
            }
        }
        out.unrecoverable = q.front().map_or(true, |s| s.seqnum != first_missing);
        out.resend = q.iter().cloned().collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

    fn sent(seq: u8) -> Sent {
        Sent {
            to: SocketAddrV4::new(C, 40040),
            seqnum: seq,
            payload: vec![1, seq, 0x40],
        }
    }

    #[test]
    fn nack_frees_the_received_and_replays_the_rest() {
        let mut b = RetransmitBuffer::new(8);
        for s in 250..=255u8 {
            b.push(Opcode::KeyWrite, sent(s));
        }
        for s in 0..2u8 {
            b.push(Opcode::KeyWrite, sent(s));
        }
        b.push(Opcode::Append, sent(7));
        // Last in order 253: 250..=253 acknowledged, 254, 255, 0, 1 resent in order (across the wrap).
        let r = b.on_nack(C, Opcode::KeyWrite, 253);
        assert_eq!(r.acknowledged, 4);
        assert!(!r.unrecoverable);
        let seqs: Vec<u8> = r.resend.iter().map(|s| s.seqnum).collect();
        assert_eq!(seqs, [254, 255, 0, 1]);
        assert_eq!(r.resend[0].payload, [1, 254, 0x40]);
        assert_eq!(b.len(C, Opcode::KeyWrite), 4);
        assert_eq!(b.len(C, Opcode::Append), 1);
        // The same NACK again replays the same four.
        assert_eq!(b.on_nack(C, Opcode::KeyWrite, 253).resend.len(), 4);
    }

    #[test]
    fn eviction_makes_a_gap_unrecoverable() {
        let mut b = RetransmitBuffer::new(2);
        for s in 0..4u8 {
            b.push(Opcode::KeyWrite, sent(s));
        }
        assert_eq!(b.evicted(), 2);
        let r = b.on_nack(C, Opcode::KeyWrite, 0);
        assert!(r.unrecoverable);
        assert_eq!(
            r.resend.iter().map(|s| s.seqnum).collect::<Vec<_>>(),
            [2, 3]
        );
        assert!(b.on_nack(C, Opcode::Postcard, 0).unrecoverable);
        assert_eq!(RetransmitBuffer::new(1000).capacity(), MAX_PER_STREAM);
    }
}
