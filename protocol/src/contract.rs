//! The wire contract as data: every header's fields, widths and order, the UDP ports and the opcodes.
//!
//! Each header module publishes a `LAYOUT` table, and a unit test beside it checks that table against the
//! module's own accessors, so the table cannot drift from the code. The P4 programs are checked against
//! these tables (see `examples/contract.rs`, which prints them as JSON).

/// One field of a header: its name and its width in bits, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    /// Field name, as the P4 header declares it too.
    pub name: &'static str,
    /// Width in bits.
    pub bits: u32,
}

/// Shorthand for building `LAYOUT` tables.
pub const fn f(name: &'static str, bits: u32) -> FieldSpec {
    FieldSpec { name, bits }
}

/// Total width of a layout in bytes (layouts are whole bytes).
pub const fn layout_bytes(layout: &[FieldSpec]) -> usize {
    let mut bits = 0;
    let mut i = 0;
    while i < layout.len() {
        bits += layout[i].bits;
        i += 1;
    }
    (bits / 8) as usize
}
