//! Fuzzes the DTA report and NACK parsers: arbitrary UDP payloads under both base-header forms and several
//! configured data sizes must never panic, and whatever parses must re-emit to exactly the input bytes.
#![no_main]

use dta_protocol::dta::{HeaderForm, NackRepr, ReportFormat, ReportRepr};
use libfuzzer_sys::fuzz_target;

/// Key-Write data and Append entry sizes to try: every allowed D, small and large E.
const SIZES: [(usize, usize); 4] = [(4, 4), (12, 8), (28, 1), (4, 1024)];

fuzz_target!(|data: &[u8]| {
    // Large enough for any report or NACK a fuzzer input of this size can parse into.
    let mut out = vec![0u8; data.len()];
    for form in [HeaderForm::Compact, HeaderForm::Seq] {
        for (kw, ap) in SIZES {
            let fmt = ReportFormat::new(form, kw, ap).expect("valid format");
            if let Ok(report) = ReportRepr::parse(data, &fmt) {
                assert_eq!(report.buffer_len(&fmt), data.len());
                let n = report
                    .emit(&mut out, &fmt)
                    .expect("a parsed report re-emits");
                assert_eq!(&out[..n], data, "report did not round-trip: {report:?}");
            }
        }
        if let Ok(nack) = NackRepr::parse(data, form) {
            let n = nack.emit(&mut out, form).expect("a parsed NACK re-emits");
            assert_eq!(&out[..n], data, "NACK did not round-trip: {nack:?}");
        }
    }
});
