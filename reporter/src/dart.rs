//! DART mode (the earlier DART paper): the reporter writes Key-Write data straight into a collector over
//! its own RDMA RC QP, with no translator in between.
//!
//! All RoCE logic is the translator's: [`keywrite::handle`] turns a report into the N WRITEs at the slots of
//! DESIGN.md section 3, and the translator's [`Requester`] owns PSNs, AckReq cadence, the retransmission
//! window, go-back-N and timeouts. This type is sans-IO like the translator's engine: frames and a clock
//! in, frames out.
//!
//! The one piece written here is picking this QP's responses out of what arrives (the collector's IP and
//! this QPN); [`Requester::on_response_frame`] then handles them as it does for the translator's engine.

use dta_protocol::control::Welcome;
use dta_protocol::dta::KeyWriteRepr;
use dta_protocol::layout::{Geometry, Region};
use dta_protocol::roce::{FrameRepr, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;
use dta_translator::config::{RateConfig, RequesterConfig};
use dta_translator::frames::FrameBuilder;
use dta_translator::primitives::keywrite;
use dta_translator::requester::{QpError, Requester, RequesterParams};
use dta_translator::{Counters, Instant};

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
    collector_ip: [u8; 4],
    local_qpn: u32,
    counters: Counters,
}

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
        let region = *welcome
            .regions
            .iter()
            .find(|r| matches!(r.geometry, Geometry::KeyWrite(_)))
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
            collector_ip: welcome.ip,
            local_qpn: local.qpn & 0xFF_FFFF,
            counters: Counters::default(),
        })
    }

    /// Queues the N WRITEs of a Key-Write of `data` under `key`. Refused when the queue lacks room for
    /// N or the data does not fit the region's entries.
    pub fn key_write(&mut self, key: u32, data: &[u8], redundancy: u8) -> Result<()> {
        if self.qp.queue_room() < usize::from(redundancy) {
            return Err(Error::Dart("send queue full".into()));
        }
        let r = KeyWriteRepr {
            redundancy,
            key,
            data,
        };
        keywrite::handle(&r, &self.region, &mut self.qp)
            .map_err(|why| Error::Dart(format!("Key-Write refused: {why:?}")))
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
        // ACK / ATOMIC ACK dispatch is the translator requester's own; nothing else concerns this QP.
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

    /// The requester's counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}
