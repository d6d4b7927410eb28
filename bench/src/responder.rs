//! The software RoCEv2 responder (the collector of every user without an RDMA NIC) on one core: a ring of
//! pre-built RDMA WRITE ONLY or FETCH_ADD frames, as the translator sends them, goes through
//! `Responder::handle`. That is the whole per-frame work of the collector's soft backend except the port:
//! iCRC check, QP and PSN checks, R_Key and bounds, the memory written (or the atomic applied) and the
//! ACKNOWLEDGE or ATOMIC ACKNOWLEDGE built, iCRC and all. Packet I/O is left out on purpose; testpmd's
//! io-forward rate in the same run is the I/O cost's yardstick.
//!
//! The ring holds consecutive PSNs; between passes the QP is opened again at the ring's first PSN (once per
//! 65,536 frames, so its cost vanishes). WRITEs ask for an ACK every 16th frame, the translator's default
//! cadence; every FETCH_ADD is answered. The run checks what it measured: no frame dropped, the number of
//! responses, and the memory (every FETCH_ADD applied exactly once; the last pass's WRITEs in place).

use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use dta_collector::memory::{Arena, RegionSlot};
use dta_collector::responder::{Outcome, Responder, ResponderConfig, RESPONSE_MAX};
use dta_protocol::layout::{Geometry, KeyIncrementGeometry, KeyWriteGeometry};
use dta_protocol::roce::FrameRepr;
use serde::Serialize;

use crate::sys::thread_cpu_ns;
use crate::workloads::{self, COLLECTOR_IP, TRANSLATOR_IP};

/// Frames in the ring (consecutive PSNs).
pub const RING: usize = 1 << 16;
/// The translator's default AckReq cadence.
const ACK_EVERY: usize = 16;
pub const QPN: u32 = 0x100;
const PEER_QPN: u32 = 0x200;
const ADD: u64 = 3;
/// Key-Write entries (8 bytes each: checksum and 4 data bytes, the translator's N = 1, D = 4) and
/// Key-Increment counters.
const SLOTS: u64 = 1 << 18;

/// Which requests the ring holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// RDMA WRITE ONLY of one 8-byte Key-Write entry.
    Write,
    /// FETCH_ADD on one 8-byte Key-Increment counter.
    FetchAdd,
}

impl Mode {
    /// Parses `write` or `fetch-add`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "write" => Ok(Mode::Write),
            "fetch-add" => Ok(Mode::FetchAdd),
            other => bail!("unknown responder mode {other:?} (write, fetch-add)"),
        }
    }
}

/// What one run measured.
#[derive(Debug, Serialize)]
pub struct ResponderResult {
    pub mode: Mode,
    pub frames: u64,
    pub frames_per_s: f64,
    /// Thread CPU time per frame.
    pub cpu_ns_per_frame: f64,
    /// Responses built per frame (1/16 for WRITEs, 1 for FETCH_ADDs).
    pub responses_per_frame: f64,
    pub drops: u64,
}

/// xorshift64*: addresses spread over the region, as hashed keys are.
fn next(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// The arena both responder benches answer into: a Key-Write and a Key-Increment region of [`SLOTS`] each.
pub fn arena() -> Result<Arena> {
    let kw = KeyWriteGeometry::new(SLOTS, 8, 1).map_err(|e| anyhow!("{e}"))?;
    let ki = KeyIncrementGeometry::new(SLOTS, 1).map_err(|e| anyhow!("{e}"))?;
    Arena::new_normal(&[(0, Geometry::KeyWrite(kw)), (0, Geometry::KeyIncrement(ki))])
        .map_err(|e| anyhow!("arena: {e}"))
}

/// A ring of `mode`'s requests, as the translator sends them, into one region of the [`arena`].
pub struct Ring {
    pub mode: Mode,
    /// The frames, PSNs 0 to [`RING`] - 1 on QP [`QPN`].
    pub frames: Vec<Vec<u8>>,
    /// WRITEs: the offset in the region and the entry of each frame.
    targets: Vec<(usize, [u8; 8])>,
    /// The region the ring addresses.
    slot: RegionSlot,
}

impl Ring {
    /// The ring into `arena`: consecutive PSNs from 0, addresses drawn once.
    pub fn new(mode: Mode, arena: &Arena) -> Result<Self> {
        let slot = arena.slots()[usize::from(mode == Mode::FetchAdd)];
        let (va, rkey, len) = (slot.region.va, slot.region.rkey, slot.len() as u64);
        let ep = workloads::roce_endpoints();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut frames = Vec::with_capacity(RING);
        let mut targets = Vec::with_capacity(RING);
        let emit = |f: FrameRepr| -> Result<Vec<u8>> {
            let mut buf = vec![0u8; f.buffer_len()];
            f.emit(&mut buf)
                .map_err(|e| anyhow!("building the ring: {e}"))?;
            Ok(buf)
        };
        for psn in 0..RING as u32 {
            let at = (next(&mut x) % (len / 8)) * 8;
            let frame = match mode {
                Mode::Write => {
                    let mut cell = [0u8; 8];
                    cell[..4].copy_from_slice(&(at as u32).to_be_bytes());
                    cell[4..].copy_from_slice(&psn.to_be_bytes());
                    targets.push((at as usize, cell));
                    let ack = (psn as usize + 1) % ACK_EVERY == 0;
                    emit(FrameRepr::write_only(
                        ep,
                        QPN,
                        psn,
                        ack,
                        va + at,
                        rkey,
                        &cell,
                    ))?
                }
                Mode::FetchAdd => {
                    emit(FrameRepr::fetch_add(ep, QPN, psn, true, va + at, rkey, ADD))?
                }
            };
            frames.push(frame);
        }
        Ok(Ring {
            mode,
            frames,
            targets,
            slot,
        })
    }

    /// The responses `frames` requests of whole passes are due.
    pub fn responses_due(&self, frames: u64) -> u64 {
        match self.mode {
            Mode::Write => frames / ACK_EVERY as u64,
            Mode::FetchAdd => frames,
        }
    }

    /// Checks what the arena's memory `mem` must hold after `passes` whole passes of the ring: every
    /// FETCH_ADD applied exactly once; the last pass's WRITEs in place.
    pub fn check_memory(&self, mem: &[u8], passes: u64) -> Result<()> {
        let region = &mem[self.slot.offset..self.slot.offset + self.slot.len()];
        match self.mode {
            Mode::Write => {
                // Every pass writes the same ring, so each entry holds the ring's last WRITE to it.
                let mut last = std::collections::HashMap::new();
                for (at, cell) in &self.targets {
                    last.insert(*at, *cell);
                }
                for (at, cell) in &last {
                    let have = &region[*at..*at + 8];
                    if have != cell {
                        bail!("entry at {at:#x} holds {have:02x?}, the last WRITE put {cell:02x?}");
                    }
                }
            }
            Mode::FetchAdd => {
                let sum: u64 = region
                    .chunks_exact(8)
                    .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
                    .sum();
                if sum != passes * RING as u64 * ADD {
                    bail!(
                        "counters sum to {sum}, {passes} passes of {RING} FETCH_ADDs of {ADD} give {}",
                        passes * RING as u64 * ADD
                    );
                }
            }
        }
        Ok(())
    }
}

/// The collector's responder over `arena`, as `serve` configures it.
pub fn responder(arena: &Arena) -> Responder {
    let config = ResponderConfig {
        local_ip: Some(COLLECTOR_IP),
        ..ResponderConfig::default()
    };
    Responder::new(config, arena.slots().to_vec())
}

/// Opens the ring's QP afresh at PSN 0, for the next pass.
pub fn reopen(resp: &mut Responder) {
    resp.close_qp(QPN);
    resp.open_qp(QPN, TRANSLATOR_IP, PEER_QPN, 0);
}

/// The responder alone over its own arena and ring: `run`'s loop, which `dta-bench responder-daemon` also
/// alternates with the daemon's loop as its same-process baseline. Its arena is written by every pass, so
/// a slice after the first finds the memory mapped and warm (no page faults in a timed slice).
pub struct Baseline {
    arena: Arena,
    ring: Ring,
    resp: Responder,
    frames: u64,
    responses: u64,
    drops: u64,
    passes: u64,
    wall_secs: f64,
    cpu_ns: u64,
}

impl Baseline {
    pub fn new(mode: Mode) -> Result<Self> {
        let arena = arena()?;
        let ring = Ring::new(mode, &arena)?;
        let resp = responder(&arena);
        Ok(Baseline {
            arena,
            ring,
            resp,
            frames: 0,
            responses: 0,
            drops: 0,
            passes: 0,
            wall_secs: 0.0,
            cpu_ns: 0,
        })
    }

    /// Whole passes of the ring for about `secs` seconds, added to the totals.
    pub fn run_for(&mut self, secs: f64) {
        let mut out = [0u8; RESPONSE_MAX];
        let mut mem = self.arena.write();
        let mem = mem.as_mut_slice();
        let cpu0 = thread_cpu_ns();
        let t = Instant::now();
        while t.elapsed().as_secs_f64() < secs {
            reopen(&mut self.resp);
            for f in &self.ring.frames {
                match self.resp.handle(f, mem, &mut out) {
                    Outcome::Respond(n) => {
                        self.responses += 1;
                        // The response is built; reading its last byte keeps the work from being elided.
                        std::hint::black_box(out[n - 1]);
                    }
                    Outcome::Silent => {}
                    Outcome::Dropped(_) => self.drops += 1,
                }
            }
            self.frames += RING as u64;
            self.passes += 1;
        }
        self.wall_secs += t.elapsed().as_secs_f64();
        self.cpu_ns += thread_cpu_ns() - cpu0;
    }

    /// The totals so far, checked: no drop, the responses due, the memory as the passes leave it.
    pub fn result(&self) -> Result<ResponderResult> {
        self.ring
            .check_memory(self.arena.read().as_slice(), self.passes)?;
        let expected = self.ring.responses_due(self.frames);
        if self.drops != 0 || self.responses != expected {
            bail!(
                "{} frames dropped, {} responses where {expected} were due",
                self.drops,
                self.responses
            );
        }
        let frames = self.frames as f64;
        Ok(ResponderResult {
            mode: self.ring.mode,
            frames: self.frames,
            frames_per_s: frames / self.wall_secs,
            cpu_ns_per_frame: self.cpu_ns as f64 / frames,
            responses_per_frame: self.responses as f64 / frames,
            drops: self.drops,
        })
    }
}

/// Runs `mode` for about `secs` seconds.
pub fn run(mode: Mode, secs: f64) -> Result<ResponderResult> {
    let mut b = Baseline::new(mode)?;
    b.run_for(secs);
    b.result()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pass at least of each ring, with the run's own checks (responses, drops, memory) passing.
    #[test]
    fn both_rings_run_and_check_themselves() {
        for mode in [Mode::Write, Mode::FetchAdd] {
            let r = run(mode, 0.01).unwrap();
            assert!(r.frames >= RING as u64);
            assert_eq!(r.drops, 0);
            let want = if mode == Mode::Write { 1.0 / 16.0 } else { 1.0 };
            assert_eq!(r.responses_per_frame, want);
        }
        assert!(Mode::parse("read").is_err());
    }
}
