//! The wire contract as data: every header's fields, widths and order, the UDP ports and the opcodes.
//!
//! Each header module publishes a `LAYOUT` table, and a unit test beside it checks that table against the
//! module's own accessors, so the table cannot drift from the code. The P4 programs are checked against
//! these tables (see `examples/contract.rs`, which prints them as JSON).

pub use crate::field::{f, layout_bytes, FieldSpec};

/// Every header's layout under the name its P4 header type carries (`<name>_h`).
pub fn headers() -> Vec<(&'static str, &'static [FieldSpec])> {
    use crate::{dta, roce};
    vec![
        ("dta_base_compact", dta::base::LAYOUT_COMPACT),
        ("dta_base_seq", dta::base::LAYOUT_SEQ),
        ("dta_keywrite", dta::keywrite::LAYOUT),
        ("dta_append", dta::append::LAYOUT),
        ("dta_keyincrement", dta::keyincrement::LAYOUT),
        ("dta_postcard", dta::postcard::LAYOUT),
        ("dta_postcard_pathlen", dta::postcard::LAYOUT_PATH_LEN),
        ("dta_sketch", dta::sketch::LAYOUT),
        ("dta_nack", dta::nack::LAYOUT),
        ("bth", roce::bth::LAYOUT),
        ("reth", roce::reth::LAYOUT),
        ("atomic_eth", roce::atomic_eth::LAYOUT),
        ("aeth", roce::aeth::LAYOUT),
        ("atomic_ack_eth", roce::atomic_ack_eth::LAYOUT),
    ]
}

/// Every header's fixed length in bytes, by the names of [`headers`]: the `HEADER_LEN` constants that code
/// building or patching frames uses, so a test can hold them to the layouts.
pub fn header_lengths() -> Vec<(&'static str, usize)> {
    use crate::{dta, roce};
    vec![
        ("dta_base_compact", dta::base::COMPACT_LEN),
        ("dta_base_seq", dta::base::SEQ_LEN),
        ("dta_keywrite", dta::keywrite::HEADER_LEN),
        ("dta_append", dta::append::HEADER_LEN),
        ("dta_keyincrement", dta::keyincrement::HEADER_LEN),
        ("dta_postcard", dta::postcard::HEADER_LEN),
        ("dta_postcard_pathlen", dta::postcard::HEADER_LEN_PATH_LEN),
        ("dta_sketch", dta::sketch::HEADER_LEN),
        ("dta_nack", dta::nack::HEADER_LEN),
        ("bth", roce::bth::HEADER_LEN),
        ("reth", roce::reth::HEADER_LEN),
        ("atomic_eth", roce::atomic_eth::HEADER_LEN),
        ("aeth", roce::aeth::HEADER_LEN),
        ("atomic_ack_eth", roce::atomic_ack_eth::HEADER_LEN),
    ]
}

/// The UDP ports of the contract, by name.
pub fn udp_ports() -> Vec<(&'static str, u16)> {
    vec![
        ("dta", crate::dta::DTA_UDP_PORT),
        ("dta_nack", crate::dta::DTA_NACK_UDP_PORT),
        ("rocev2", crate::roce::ROCEV2_UDP_PORT),
    ]
}

/// The DTA opcodes, by name.
pub fn dta_opcodes() -> Vec<(&'static str, u8)> {
    use crate::dta::Opcode;
    Opcode::ALL
        .iter()
        .map(|o| (o.contract_name(), o.code()))
        .collect()
}

/// The RoCEv2 BTH opcodes dta sends or consumes, by name.
pub fn bth_opcodes() -> Vec<(&'static str, u8)> {
    use crate::roce::BthOpcode;
    [
        ("rc_rdma_write_only", BthOpcode::RdmaWriteOnly),
        ("rc_rdma_write_only_imm", BthOpcode::RdmaWriteOnlyImm),
        ("rc_acknowledge", BthOpcode::Acknowledge),
        ("rc_atomic_acknowledge", BthOpcode::AtomicAcknowledge),
        ("rc_compare_swap", BthOpcode::CompareSwap),
        ("rc_fetch_add", BthOpcode::FetchAdd),
        ("cnp", BthOpcode::Cnp),
    ]
    .into_iter()
    .map(|(n, o)| (n, o.code()))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_header_length_is_its_layout() {
        let layouts = headers();
        let lengths = header_lengths();
        let names = |v: &[(&'static str, usize)]| v.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        let layout_names: Vec<_> = layouts.iter().map(|(n, _)| *n).collect();
        assert_eq!(names(&lengths), layout_names, "same headers, same order");
        for ((name, layout), (_, len)) in layouts.iter().zip(&lengths) {
            assert_eq!(layout_bytes(layout), *len, "{name}");
        }
    }
}
