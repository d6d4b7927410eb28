//! Sequence numbers per collector and opcode.
//!
//! DESIGN.md section 2: the translator tracks each reporter's retransmittable reports per opcode and NACKs
//! a gap with the last in-order seqnum, so each (collector, opcode) stream counts on its own, from 0,
//! wrapping at 256.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use dta_protocol::dta::Opcode;

/// The next seqnum of every (collector, opcode) stream.
#[derive(Debug, Default, Clone)]
pub struct SeqNumbers {
    next: HashMap<(Ipv4Addr, u8), u8>,
}

impl SeqNumbers {
    /// An empty table: every stream starts at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next seqnum of `(collector, op)` and advances it.
    pub fn take(&mut self, collector: Ipv4Addr, op: Opcode) -> u8 {
        let n = self.next.entry((collector, op.code())).or_insert(0);
        let s = *n;
        *n = n.wrapping_add(1);
        s
    }

    /// The seqnum the next report of `(collector, op)` will get.
    pub fn peek(&self, collector: Ipv4Addr, op: Opcode) -> u8 {
        self.next.get(&(collector, op.code())).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_independent_and_wrap() {
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let b = Ipv4Addr::new(10, 0, 0, 2);
        let mut s = SeqNumbers::new();
        assert_eq!(s.take(a, Opcode::KeyWrite), 0);
        assert_eq!(s.take(a, Opcode::KeyWrite), 1);
        assert_eq!(s.take(a, Opcode::Append), 0);
        assert_eq!(s.take(b, Opcode::KeyWrite), 0);
        for _ in 2..256 {
            s.take(a, Opcode::KeyWrite);
        }
        assert_eq!(s.peek(a, Opcode::KeyWrite), 0);
        assert_eq!(s.take(a, Opcode::KeyWrite), 0);
        assert_eq!(s.peek(a, Opcode::Append), 1);
    }
}
