//! DART mode (the earlier DART paper): the reporter writes Key-Write data straight into a collector over
//! its own RDMA RC QP, with no translator in between.
//!
//! All RoCE logic is dta-rc's: its [`Requester`] (the one the translator runs) owns PSNs, AckReq cadence,
//! the retransmission window, go-back-N and timeouts. The N WRITEs of a Key-Write are placed by the
//! region's [`KeyWriteGeometry`] (DESIGN.md section 3), the same slots and entries the translator
//! writes. This type is sans-IO like the translator's engine: frames and a clock in, frames out.
//!
//! The pieces written here are the Key-Write's work requests and picking this QP's responses out of
//! what arrives (the collector's IP and this QPN); [`Requester::on_response_frame`] then handles them
//! as it does for the translator's engine.

use dta_protocol::control::Welcome;
use dta_protocol::layout::{Geometry, KeyWriteGeometry, Region};
use dta_protocol::roce::{FrameRepr, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;
use dta_rc::frames::{FrameBuilder, Op, Payload};
use dta_rc::Instant;
use dta_rc::{QpError, RateConfig, RcStats, Requester, RequesterConfig, RequesterParams, Tag};

use crate::{Error, Result};

/// The reporter's side of the QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DartLocal {
    /// Source MAC.
    pub mac: [u8; 6],
    /// Source IPv4.
    pub ip: [u8; 4],
    /// UDP source port (ECMP entropy).
    pub udp_src_port: u16,
    /// This QP's number, which the collector's QP is connected to.
    pub qpn: u32,
    /// First PSN.
    pub start_psn: u32,
}

/// A DART writer to one collector.
pub struct Dart {
    qp: Requester,
    region: Region,
    /// `region`'s geometry (it is a Key-Write region).
    geometry: KeyWriteGeometry,
    collector_ip: [u8; 4],
    local_qpn: u32,
    counters: RcStats,
}

/// The tag of this QP's work requests: it carries Key-Writes only.
const KEY_WRITE: Tag = Tag(0);

/// The largest Key-Write entry (checksum and data): `KeyWriteGeometry` allows 8, 16 or 32 bytes.
const MAX_ENTRY: usize = 32;

impl Dart {
    /// Connects to the collector that `welcome` describes (its first QP and its Key-Write region).
    pub fn new(
        local: DartLocal,
        welcome: &Welcome,
        requester: RequesterConfig,
        now: Instant,
    ) -> Result<Self> {
        let qp = welcome
            .qps
            .first()
            .ok_or_else(|| Error::Dart("the collector advertises no QP".into()))?;
        let (region, geometry) = welcome
            .regions
            .iter()
            .find_map(|r| match r.geometry {
                Geometry::KeyWrite(g) => Some((*r, g)),
                _ => None,
            })
            .ok_or_else(|| Error::Dart("the collector has no Key-Write region".into()))?;
        let ep = UdpEndpoints::new(
            local.mac,
            welcome.mac,
            local.ip,
            welcome.ip,
            local.udp_src_port,
            ROCEV2_UDP_PORT,
        );
        let params = RequesterParams {
            cfg: requester,
            rate: RateConfig::default(),
            max_atomics: welcome.max_dest_rd_atomic,
            start_psn: local.start_psn,
        };
        Ok(Dart {
            qp: Requester::new(params, FrameBuilder::new(ep, qp.qpn & 0xFF_FFFF), now),
            region,
            geometry,
            collector_ip: welcome.ip,
            local_qpn: local.qpn & 0xFF_FFFF,
            counters: RcStats::default(),
        })
    }

    /// Queues the N WRITEs of a Key-Write of `data` under `key`. Refused when the queue lacks room for
    /// N or the data does not fit the region's entries.
    pub fn key_write(&mut self, key: u32, data: &[u8], redundancy: u8) -> Result<()> {
        if self.qp.queue_room() < usize::from(redundancy) {
            return Err(Error::Dart("send queue full".into()));
        }
        let g = &self.geometry;
        let size = g.entry_size() as usize;
        let mut entry = [0u8; MAX_ENTRY];
        // The entry `checksum(key) LE ‖ data`, refused (as the translator refuses the report) when N or
        // the data's length does not match the region.
        let encoded = match entry.get_mut(..size) {
            Some(room) if redundancy <= g.n_max() => g.encode_entry(key, data, room),
            _ => None,
        };
        if encoded.is_none() {
            return Err(Error::Dart("Key-Write refused: GeometryMismatch".into()));
        }
        let (va, rkey) = (self.region.va, self.region.rkey);
        // Copy `n` at its slot; the last copy completes the report.
        self.qp.push_n_with(KEY_WRITE, redundancy, |n| Op::Write {
            va: va + g.offset(key, n),
            rkey,
            payload: Payload::from_slice(&entry[..size]),
        });
        Ok(())
    }

    /// The next frame to send, if any may go now.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        self.qp.poll_transmit(now, &mut self.counters, out)
    }

    /// Handles a frame from the collector; frames that are not its responses to this QP are ignored.
    pub fn handle_response(&mut self, now: Instant, frame: &[u8]) {
        let Ok(f) = FrameRepr::parse(frame) else {
            return;
        };
        if f.endpoints.src_ip != self.collector_ip || f.bth.dest_qp != self.local_qpn {
            return;
        }
        // ACK / ATOMIC ACK dispatch is the requester's own; nothing else concerns this QP.
        let _ = self
            .qp
            .on_response_frame(now, self.local_qpn, &f, &mut self.counters);
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.qp.poll_timeout()
    }

    /// Runs the retransmit timer; returns the error if the QP just failed.
    pub fn handle_timeout(&mut self, now: Instant) -> Option<QpError> {
        self.qp.on_timeout(now, &mut self.counters)
    }

    /// Whether every write was acknowledged.
    pub fn is_idle(&self) -> bool {
        self.qp.is_idle()
    }

    /// The requester's counts.
    pub fn counters(&self) -> &RcStats {
        &self.counters
    }
}
