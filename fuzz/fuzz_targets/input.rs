//! The fuzz input read front to back as the numbers and byte strings a target decodes its operations
//! from; past the end every read is zero, so every input, however short, runs to completion.

// Each target uses the readers it needs.
#![allow(dead_code)]

/// Reads the input front to back; past the end every read is zero.
pub struct Src<'a>(pub &'a [u8]);

impl<'a> Src<'a> {
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | u32::from(self.u16()) << 16
    }
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
