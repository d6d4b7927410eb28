//! Fuzzes the INT report parsers (v0.5 as fabric-tna sends it, v2.0 with every individual report walked
//! by its Report Length, the INT-MD stack and the inner packet): arbitrary bytes must never panic or read
//! past the input, every hop of a parsed stack must be readable, and a parsed v0.5 report must re-emit to
//! a report that parses the same (reserved bits and pads are written as zeros).
#![no_main]

use dta_protocol::int::inner::{InnerRepr, IntDetect, Start};
use dta_protocol::int::md::IntMdRepr;
use dta_protocol::int::v05;
use dta_protocol::int::v2::GroupRepr;
use libfuzzer_sys::fuzz_target;

const DETECT: IntDetect = IntDetect {
    udp_port: Some(6000),
    dscp: Some((0x01, 0x01)),
};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = v05::ReportRepr::parse(data) {
        assert_eq!(r.buffer_len(), data.len());
        let mut out = vec![0u8; r.buffer_len()];
        r.emit(&mut out).expect("a parsed v0.5 report re-emits");
        assert_eq!(v05::ReportRepr::parse(&out).expect("re-parses"), r);
        let _ = InnerRepr::parse(Start::Ethernet, r.inner, DETECT);
    }
    if let Ok((_, reports)) = GroupRepr::parse(data) {
        // Reports are delimited by their lengths: one that does not parse is skipped, and together they
        // never span more than the input (at most one report per 4 bytes).
        let mut spanned = 0usize;
        for (i, report) in reports.enumerate() {
            assert!(i < data.len() / 4);
            let Ok(r) = report else { continue };
            spanned += r.inner.len();
            assert!(spanned <= data.len());
            let _ = InnerRepr::parse(Start::Ip, r.inner, DETECT);
            let _ = InnerRepr::parse(Start::Ethernet, r.inner, DETECT);
        }
    }
    if let Ok((md, rest)) = IntMdRepr::parse(data) {
        assert_eq!(md.hops().count(), md.hop_count());
        assert!(rest.len() < data.len());
    }
    let _ = InnerRepr::parse(Start::Ip, data, DETECT);
});
