//! What every workload shares: the workload and its check, the report's emit, a value mix.

use std::net::SocketAddr;

use anyhow::Result;
use dta_protocol::dta::{Body, HeaderForm, ReportFormat, ReportRepr};

fn format() -> ReportFormat {
    ReportFormat {
        form: HeaderForm::Seq,
        keywrite_data_len: 4,
        append_entry_len: 4,
    }
}

pub(super) fn emit(body: Body<'_>, seq: u32) -> Vec<u8> {
    let fmt = format();
    let r = ReportRepr::new(body, HeaderForm::Seq, seq as u8);
    let mut buf = vec![0u8; r.buffer_len(&fmt)];
    let n = r
        .emit(&mut buf, &fmt)
        .expect("a report the harness built is valid");
    buf.truncate(n);
    buf
}

/// A small deterministic mix for values (splitmix64's finaliser).
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Queries the collector and compares; returns how many answers were checked.
pub type Verify = Box<dyn Fn(SocketAddr) -> Result<u64> + Send + Sync>;

/// Reports to send and the check to run afterwards.
pub struct Workload {
    /// Name for tables and errors.
    pub name: &'static str,
    /// UDP payloads in send order.
    pub reports: Vec<Vec<u8>>,
    /// The check.
    pub verify: Verify,
}
pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
