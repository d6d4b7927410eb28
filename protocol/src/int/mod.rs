//! In-band Network Telemetry reports, as switches already export them: the input of the translator's INT
//! front end (issue 17), parsed here like every other header of the contract.
//!
//! Two formats are in use:
//!
//! * [`v05`]: Telemetry Report v0.5 as `stratum/fabric-tna` emits it (`p4src/shared/header.p4`, SD-Fabric
//!   and ONOS), to UDP port 32766 by default: a 12-byte fixed header, then either the inner Ethernet
//!   frame (next protocol 0) or a 9-byte common header with a 3-byte drop header (1) or a 7-byte
//!   switch-local header (2), then the inner frame.
//! * [`v2`]: Telemetry Report v2.0 (p4lang/p4-applications `telemetry/specs/telemetry_report.mdk`, 2020):
//!   an 8-byte group header, then one or more individual reports, each with its own length; an INT
//!   individual report carries the metadata its `RepMdBits` select ([`metadata`]), then the truncated
//!   inner packet.
//!
//! A sink's report carries the whole path in the inner packet's INT-MD stack ([`md`], INT 2.1 over UDP
//! or TCP); [`inner`] finds the flow's 5-tuple and that stack in the truncated inner packet.
//!
//! Every fixed header has a zero-copy view with a field table (`LAYOUT`, checked against the accessors
//! by a test beside it) and a `Repr`; variable parts parse into `Repr`s that borrow the buffer. Every
//! length a report states is checked against the bytes present: a report that lies about its length is an
//! error, never a read past the end.

pub mod inner;
pub mod mapping;
pub mod md;
pub mod metadata;
pub mod v05;
pub mod v2;

/// The UDP port fabric-tna sends its reports to (its `INT_REPORT_PORT`, ONOS's default collector port).
pub const FABRIC_TNA_REPORT_PORT: u16 = 32766;

#[cfg(test)]
pub(crate) mod test_bits {
    //! Builds byte strings from bit fields written out as the specification draws them, so the test
    //! vectors come from the spec's diagrams, not from the code under test.

    /// Packs `(value, width)` pairs, most significant bit first, into bytes (the total must be whole bytes).
    pub fn pack(fields: &[(u64, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut acc: u128 = 0;
        let mut bits = 0u32;
        for &(v, w) in fields {
            assert!(
                w <= 64 && (w == 64 || v < 1 << w),
                "{v:#x} does not fit {w} bits"
            );
            acc = (acc << w) | u128::from(v);
            bits += w;
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1u128 << bits) - 1;
            }
        }
        assert_eq!(bits, 0, "fields are not whole bytes");
        out
    }
}
