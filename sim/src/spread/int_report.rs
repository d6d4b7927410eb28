//! fabric-tna v0.5 switch-local reports for a flow's hops: what a switch mirrors after routing, so the inner
//! IPv4 TTL of hop h's copy is 64 - h (the translator's default `initial_ttls` and `hop_offset` 0).

use std::collections::HashMap;

use anyhow::{bail, Result};
use dta_protocol::int::v05::{Body, CommonRepr, ReportRepr};
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};

use super::schedule::Tuple;

/// The TTL the flows' senders start with.
pub const INITIAL_TTL: u8 = 64;
/// Bytes of the mirrored packet's UDP payload.
const INNER_PAYLOAD: usize = 8;

/// Builds reports, numbering each switch's reports in the order they are built.
#[derive(Debug, Default)]
pub struct IntReporter {
    seq: HashMap<u32, u32>,
    inner: Vec<u8>,
    out: Vec<u8>,
}

impl IntReporter {
    /// A reporter whose switches have sent nothing yet.
    pub fn new() -> Self {
        IntReporter::default()
    }

    /// The UDP payload of switch `switch`'s report of `flow`'s packet at hop `hop` (1-based), sent at
    /// `t_ns` virtual nanoseconds.
    pub fn report(&mut self, flow: &Tuple, hop: u8, switch: u32, t_ns: u64) -> Result<&[u8]> {
        if hop == 0 || hop >= INITIAL_TTL {
            bail!("hop {hop} has no TTL below {INITIAL_TTL}");
        }
        let mut inner = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 0xA],
            [2, 0, 0, 0, 0, 0xB],
            flow.src,
            flow.dst,
            flow.src_port,
            flow.dst_port,
        );
        inner.ttl = INITIAL_TTL - hop;
        self.inner.resize(HEADERS_LEN + INNER_PAYLOAD, 0);
        inner.emit_frame(&mut self.inner, &[0xEE; INNER_PAYLOAD])?;
        let seq = self.seq.entry(switch).or_insert(0);
        *seq = seq.wrapping_add(1);
        // Switch clocks are 32-bit nanosecond counters.
        let ig_tstamp = t_ns as u32;
        let r = ReportRepr {
            dropped: false,
            congested: false,
            tracked_flow: true,
            hw_id: 1,
            seq_no: *seq,
            ig_tstamp,
            body: Body::Local {
                common: CommonRepr {
                    switch_id: switch,
                    ig_port: 1,
                    eg_port: 2,
                    queue_id: 0,
                },
                queue_occupancy: 0,
                eg_tstamp: ig_tstamp.wrapping_add(500),
            },
            inner: &self.inner,
        };
        self.out.resize(r.buffer_len(), 0);
        r.emit(&mut self.out)?;
        Ok(&self.out)
    }
}
