//! The real translator engine wired to the real software responder core over in-memory frames.
//!
//! Reports are built as whole Ethernet frames, handed to [`dta_translator::Engine`], and every RoCEv2
//! frame it emits goes through [`dta_collector::responder::Responder`] into one byte vector that holds the
//! regions; the responder's ACKs go back to the engine so its window keeps moving. No sockets, no clock:
//! virtual time only advances to fire the engine's timers.

use anyhow::{anyhow, bail, Result};
use dta_collector::memory::RegionSlot;
use dta_collector::responder::{Outcome, Responder, ResponderConfig, RESPONSE_MAX};
use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::dta::{Body, HeaderForm, ReportFormat, ReportRepr};
use dta_protocol::layout::{Geometry, Region};
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};
use dta_translator::{Config, Counters, Engine, Handled, Instant};

const COLLECTOR_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const COLLECTOR_IP: [u8; 4] = [198, 18, 0, 2];
const COLLECTOR_QPN: u32 = 0x11;
/// Where the regions appear in the collector's (virtual) address space; any value works, as the responder
/// resolves VAs through its region table, not through pointers.
const VA_BASE: u64 = 0x1000_0000;
/// Regions start on this alignment: atomics need 8, and a cache line keeps the layout like the arena's.
const ALIGN: usize = 64;
/// Virtual nanoseconds per report: enough that idle timers never fire between the postcards of one flow
/// (the default idle timeout is 1 ms).
const STEP_NS: u64 = 10;

/// The engine, the responder and the regions' bytes.
pub struct Rig {
    engine: Engine,
    responder: Responder,
    mem: Vec<u8>,
    slots: Vec<RegionSlot>,
    fmt: ReportFormat,
    reporter: UdpEndpoints,
    int_reporter: UdpEndpoints,
    now: Instant,
    frame: Vec<u8>,
    payload: Vec<u8>,
    tx: Vec<u8>,
    resp: Vec<u8>,
    seq: u8,
}

impl Rig {
    /// A rig with one region per geometry in `regions` (at most one of each kind, as the engine expects),
    /// and the translator configured by `cfg` (its Key-Write data length must match the region's).
    pub fn new(cfg: Config, regions: &[Geometry]) -> Result<Self> {
        let mut slots = Vec::with_capacity(regions.len());
        let mut end = 0usize;
        for (i, g) in regions.iter().enumerate() {
            let offset = end.div_ceil(ALIGN) * ALIGN;
            let len = usize::try_from(g.len())?;
            slots.push(RegionSlot {
                region: Region {
                    id: 0,
                    va: VA_BASE + offset as u64,
                    rkey: 0x1000 + i as u32,
                    geometry: *g,
                },
                offset,
            });
            end = offset + len;
        }
        let mut responder = Responder::new(ResponderConfig::default(), slots.clone());
        responder.open_qp(
            COLLECTOR_QPN,
            cfg.local.ip,
            cfg.local.qpn_base,
            cfg.local.start_psn,
        );
        let welcome = Welcome {
            version: CONTROL_VERSION,
            mac: COLLECTOR_MAC,
            ip: COLLECTOR_IP,
            qps: vec![ResponderQp {
                qpn: COLLECTOR_QPN,
                peer_qpn: cfg.local.qpn_base,
            }],
            max_dest_rd_atomic: responder.config().max_dest_rd_atomic,
            path_mtu: responder.config().path_mtu,
            regions: slots.iter().map(|s| s.region).collect(),
            append_heads: Vec::new(),
        };
        let fmt = cfg.report.format();
        let reporter = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 0x10],
            cfg.local.mac,
            [10, 0, 0, 1],
            COLLECTOR_IP,
            5000,
            cfg.report.udp_port,
        );
        let int_reporter = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 0x20],
            cfg.local.mac,
            [10, 0, 0, 2],
            COLLECTOR_IP,
            5001,
            cfg.int.udp_port,
        );
        let now = Instant(0);
        let engine = Engine::new(cfg, &[welcome], now).map_err(|e| anyhow!("engine: {e}"))?;
        Ok(Rig {
            engine,
            responder,
            mem: vec![0u8; end],
            slots,
            fmt,
            reporter,
            int_reporter,
            now,
            frame: Vec::new(),
            payload: Vec::new(),
            tx: Vec::new(),
            resp: vec![0u8; RESPONSE_MAX],
            seq: 0,
        })
    }

    /// Sends one report through the engine and applies everything it emits, so the collector memory
    /// reflects the report when this returns (for the primitives that write at once). The clock moves on
    /// by a few nanoseconds first, without firing timers.
    pub fn report(&mut self, body: Body) -> Result<()> {
        self.now = Instant(self.now.0 + STEP_NS);
        self.report_now(body)
    }

    /// Sends one DTA report at the current virtual time (see [`Rig::advance_to`]) and applies what the
    /// engine emits.
    pub fn report_now(&mut self, body: Body) -> Result<()> {
        // The retransmit flag stays clear, so the engine does not sequence-track this reporter.
        let r = ReportRepr::new(body, HeaderForm::Seq, self.seq);
        self.seq = self.seq.wrapping_add(1);
        self.payload.resize(r.buffer_len(&self.fmt), 0);
        r.emit(&mut self.payload, &self.fmt)?;
        self.frame.resize(HEADERS_LEN + self.payload.len(), 0);
        self.reporter.emit_frame(&mut self.frame, &self.payload)?;
        if self.engine.handle_frame(self.now, &self.frame) != Handled::Consumed {
            bail!("the engine did not take a DTA report");
        }
        self.pump()
    }

    /// Sends one INT report (`payload`: the UDP payload, e.g. a fabric-tna v0.5 report) to the INT port at
    /// the current virtual time and applies what the engine emits. Needs `[int]` enabled.
    pub fn int_report(&mut self, payload: &[u8]) -> Result<()> {
        self.frame.resize(HEADERS_LEN + payload.len(), 0);
        self.int_reporter.emit_frame(&mut self.frame, payload)?;
        if self.engine.handle_frame(self.now, &self.frame) != Handled::Consumed {
            bail!("the engine did not take an INT report (is [int] enabled?)");
        }
        let int_drops: u64 = self.engine.counters().int.drops.iter().sum();
        if int_drops > 0 {
            bail!("the INT front end refused {int_drops} reports");
        }
        self.pump()
    }

    /// Moves virtual time to `t`, firing every engine timer due by then at its own instant (idle postcard
    /// flushes, batching timers) and applying what each writes. Time never goes back: an earlier `t` only
    /// fires what is already due.
    pub fn advance_to(&mut self, t: Instant) -> Result<()> {
        while let Some(due) = self.engine.poll_timeout().filter(|&d| d <= t) {
            self.now = self.now.max(due);
            self.engine.handle_timeout(self.now);
            self.pump()?;
            if self.engine.poll_timeout() == Some(due) && due <= self.now {
                bail!("an engine timer due at {} ns did not move", due.0);
            }
        }
        self.now = self.now.max(t);
        Ok(())
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The engine's counters.
    pub fn counters(&self) -> &Counters {
        self.engine.counters()
    }

    /// Writes out whatever the engine still caches or batches (postcards of incomplete flows, coalesced
    /// increments) and applies it.
    pub fn flush(&mut self) -> Result<()> {
        self.engine.flush(self.now);
        self.pump()
    }

    fn pump(&mut self) -> Result<()> {
        while self.engine.poll_transmit(self.now, &mut self.tx) {
            match self
                .responder
                .handle(&self.tx, &mut self.mem, &mut self.resp)
            {
                Outcome::Respond(n) => {
                    self.engine.handle_frame(self.now, &self.resp[..n]);
                }
                Outcome::Silent => {}
                Outcome::Dropped(why) => bail!("the responder dropped a frame: {why:?}"),
            }
        }
        if let Some(ev) = self.engine.poll_event() {
            bail!("translator event {ev:?}");
        }
        let drops: u64 = self.engine.counters().drops.iter().sum();
        if drops > 0 {
            bail!("the translator dropped {drops} reports");
        }
        Ok(())
    }

    /// The bytes of region `i` (in the order given to [`Rig::new`]).
    pub fn region(&self, i: usize) -> &[u8] {
        let s = &self.slots[i];
        &self.mem[s.offset..s.offset + s.len()]
    }

    /// The bytes of region `i`, writable: only for the checksum-width lens, which restores what it changes.
    pub fn region_mut(&mut self, i: usize) -> &mut [u8] {
        let s = self.slots[i];
        &mut self.mem[s.offset..s.offset + s.len()]
    }
}
