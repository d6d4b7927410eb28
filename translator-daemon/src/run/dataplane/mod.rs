//! One worker's data path, run to completion (DPDK l3fwd, VPP): the worker owns queue `k` of every port
//! and, in one [`DataPlane::poll`], receives a burst on each, classifies every frame once ([`Steering`]),
//! and sends each where it belongs:
//!
//! * a frame that is not ours goes to the other port's TX queue as it is (the bump in the wire);
//! * an ARP request for our address is turned into its reply in place and sent back;
//! * a report or RoCE response whose state another worker owns goes to that worker's handoff ring (when
//!   the ring is full, the worker holds it and receives nothing more until the owner catches up);
//! * an INT report goes to this worker's engine, which translates it whole and leaves what touches other
//!   workers' flows (their paths, their hop records) as messages, written into the report's own buffer,
//!   which go to those flows' owners through the same rings;
//! * the rest is handed to this worker's engine as one burst, read where it lies.
//!
//! Then the handoff rings from the other workers are drained into the engine the same way, the engine's RoCE
//! frames are built in bursts and sent out of the collector port, DTA NACKs go back out of the port their
//! report came in on, and due timers run. No I/O thread, no channel per frame.
//!
//! The same loop runs over DPDK ([`dpdk`]: mbufs moved without a copy, the engine's frames built into the
//! reports' own mbufs) and AF_PACKET ([`afpacket`]: one socket per worker in a PACKET_FANOUT group); [`io`]
//! says what it needs of either.
//!
//! Over this root (the worker's state, `poll` and the receive that classifies each frame): `route`
//! (frames that are not this engine's: staged, answered, forwarded), `int` (INT reports apart) and
//! `engine` (the engine's side: its bursts, NACKs, handoffs and transmit).

pub mod afpacket;
#[cfg(feature = "dpdk")]
pub mod dpdk;
mod engine;
mod int;
pub mod io;
mod route;

use dta_netio::{RxStats, TxStats};
use dta_translator::{Engine, Instant};

use super::steer::{Steering, Target};
use super::worker::PlaneCounters;
use io::{Burst, Queue};

/// Most frames of one receive burst (the `[io] burst` limit).
const MAX_MARKS: usize = 1024;
/// Mbufs each worker brings to a DPDK port's pool: its RX ring full, its TX ring, its handoff rings and
/// the bursts in flight.
pub const MBUFS_PER_WORKER: u32 = 8192;

/// The mbufs of a DPDK port's pool for `workers` workers (the daemon's, and the bench's, which measures
/// it).
pub fn pool_mbufs(workers: usize) -> u32 {
    let w = u32::try_from(workers.max(1)).unwrap_or(u32::MAX);
    MBUFS_PER_WORKER.saturating_mul(w).max(8191)
}

/// Mbufs the DPDK handoff rings into one worker hold together, at most: half of the mbufs each worker
/// brings to a port's pool, so that however far one owner falls behind, the rings can never park more
/// than half of the pool and starve every worker's receive.
const HANDOFF_SHARE: u32 = MBUFS_PER_WORKER / 2;
/// The fewest mbufs one ring holds: 8 bursts of 32.
const HANDOFF_MIN: u32 = 255;

/// The capacity of each DPDK handoff ring between `workers` workers: [`HANDOFF_SHARE`] split over the
/// other workers' rings into one, down to a power of two less one (an `rte_ring` of 2^k slots holds
/// 2^k - 1), at least [`HANDOFF_MIN`]. Two workers: 4,095 (until this was sized, each ring of two
/// workers held 8,191, so the two could park the whole pool); 16: 255.
pub fn handoff_capacity(workers: usize) -> u32 {
    let others = u32::try_from(workers.max(2) - 1).unwrap_or(u32::MAX);
    let share = (HANDOFF_SHARE / others).max(HANDOFF_MIN + 1);
    (1 << (31 - share.leading_zeros())) - 1
}

/// One worker's handoff rings: to each worker (`None` at its own index), and from each other one.
pub type WorkerRings<Q> = (
    Vec<Option<<Q as Queue>::HandoffTx>>,
    Vec<<Q as Queue>::HandoffRx>,
);

/// Each worker's rings of the full mesh between `workers` workers, `ring(from, to)` making one.
fn mesh<Q: Queue, E>(
    workers: usize,
    mut ring: impl FnMut(usize, usize) -> Result<(Q::HandoffTx, Q::HandoffRx), E>,
) -> Result<Vec<WorkerRings<Q>>, E> {
    let mut mesh: Vec<WorkerRings<Q>> = (0..workers).map(|_| (Vec::new(), Vec::new())).collect();
    for j in 0..workers {
        for k in 0..workers {
            let tx = if j == k {
                None
            } else {
                let (tx, rx) = ring(j, k)?;
                mesh[k].1.push(rx);
                Some(tx)
            };
            mesh[j].0.push(tx);
        }
    }
    Ok(mesh)
}

/// The fixed facts a data path needs.
#[derive(Debug, Clone, Copy)]
pub struct PlaneConfig {
    /// This worker's index.
    pub index: usize,
    /// The classification of frames.
    pub steering: Steering,
    /// Index of the port facing the collectors.
    pub collector_port: usize,
    /// The MAC our ARP replies carry.
    pub local_mac: [u8; 6],
    /// Most frames received per port and call.
    pub burst: usize,
}

/// The queue a [`DataPlane`] runs on unless said otherwise: DPDK's where the build has it.
#[cfg(feature = "dpdk")]
pub type DefaultQueue = dta_netio::dpdk::DpdkQueue;
/// The queue a [`DataPlane`] runs on unless said otherwise: DPDK's where the build has it.
#[cfg(not(feature = "dpdk"))]
pub type DefaultQueue = afpacket::SocketQueue;

#[cfg(feature = "dpdk")]
pub use dpdk::handoff_mesh;

/// One worker's queues, rings and scratch bursts.
pub struct DataPlane<Q: Queue = DefaultQueue> {
    cfg: PlaneConfig,
    /// Queue `index` of every port, in port order.
    queues: Vec<Q>,
    /// Rings to each other worker (`None` at this worker's own index).
    to: Vec<Option<Q::HandoffTx>>,
    /// Rings from the other workers.
    from: Vec<Q::HandoffRx>,
    /// DPDK port id of each port, in port order (to find the port a handed-off report came in on).
    port_ids: Vec<u16>,
    rx: Q::Burst,
    /// The INT reports of a burst, which the engine takes apart from the rest.
    int_rx: Q::Burst,
    /// The messages of work the INT burst left for other workers.
    int_hand: int::IntHandoff,
    forward: Q::Burst,
    replies: Q::Burst,
    /// Per worker, the frames staged for its ring (room for two receive bursts).
    staged: Vec<Q::Burst>,
    counters: PlaneCounters,
}

impl<Q: Queue> DataPlane<Q> {
    /// A data path over `queues` (this worker's queue of every port), with rings `to` each other worker
    /// (`None` at `cfg.index`) and `from` each of them.
    pub fn new(
        cfg: PlaneConfig,
        queues: Vec<Q>,
        to: Vec<Option<Q::HandoffTx>>,
        from: Vec<Q::HandoffRx>,
    ) -> Self {
        let port_ids = queues.iter().map(Q::port_id).collect();
        let burst = cfg.burst.max(1);
        // Room for two receive bursts: see `takes_while_held_back`.
        let staged = (0..to.len())
            .map(|_| Q::Burst::with_capacity(2 * burst))
            .collect();
        DataPlane {
            cfg,
            queues,
            to,
            from,
            port_ids,
            rx: Q::Burst::with_capacity(burst),
            int_rx: Q::Burst::with_capacity(burst),
            int_hand: int::IntHandoff::with_capacity(burst),
            forward: Q::Burst::with_capacity(burst),
            replies: Q::Burst::with_capacity(burst),
            staged,
            counters: PlaneCounters::default(),
        }
    }

    /// What this data path counted.
    pub fn counters(&self) -> PlaneCounters {
        PlaneCounters { ..self.counters }
    }

    /// An idle worker's wait between polls, at most `timeout` (its queues' kind decides how).
    pub fn idle_wait(&self, timeout: std::time::Duration) {
        Q::idle_wait(&self.queues, timeout);
    }

    /// Empty polls in a row before an idle worker sleeps (its queues' kind decides).
    pub fn idle_spin(&self) -> u32 {
        self.queues.first().map_or(0, Q::idle_spin)
    }

    /// The link state of every port, in port order, where the port can tell.
    pub fn link_states(&self) -> Vec<Option<bool>> {
        self.queues.iter().map(Q::link_up).collect()
    }

    /// Receive and transmit counters of this worker's queue on each port, in port order.
    pub fn port_stats(&self) -> Vec<(RxStats, TxStats)> {
        self.queues.iter().map(Q::stats).collect()
    }

    /// One pass over every port, the handoff rings, the engine's output and its timers; `engine` is `None`
    /// until the collectors have answered (frames for it are then dropped and counted, while ARP and
    /// forwarding already work). Returns whether there was anything to do.
    #[inline(never)]
    pub fn poll(&mut self, mut engine: Option<&mut Engine>, now: Instant) -> bool {
        let mut busy = false;
        // Backpressure: while another worker's ring is full, this worker receives no more reports (they
        // wait in the NIC's ring, whose overflow the device counts) but keeps draining its own rings and
        // transmitting, so two workers waiting on each other still make progress. The collectors' port is
        // still received while every staging burst has room for a whole burst of it: the ACKs on it are
        // what opens this worker's window; had they waited too, two workers backed up on each other's
        // rings would stall their windows, time out and retransmit while their queues overflowed
        // (measured: the bench's INT on two workers dropped millions once the rings were sized).
        // Checked before every port: the ring may fill while the previous port's burst is staged.
        let mut waited = false;
        for p in 0..self.queues.len() {
            if !self.offer_staged() {
                busy = true;
                if !waited {
                    waited = true;
                    self.counters.handoff_waits += 1;
                }
                if !self.takes_while_held_back(p) {
                    continue;
                }
            }
            busy |= self.receive(p, engine.as_deref_mut(), now);
        }
        for j in 0..self.from.len() {
            busy |= self.take_handoff(j, engine.as_deref_mut(), now);
        }
        if let Some(e) = engine {
            busy |= self.transmit(e, now);
            if e.poll_timeout().is_some_and(|t| t <= now) {
                e.handle_timeout(now);
            }
        }
        busy
    }

    /// Receives a burst on port `p` and sends every frame on its way.
    #[inline]
    fn receive(&mut self, p: usize, mut engine: Option<&mut Engine>, now: Instant) -> bool {
        let n = self.queues[p].recv(&mut self.rx);
        if n == 0 {
            return false;
        }
        if self.to.len() == 1 {
            if let Some(e) = engine {
                self.alone(p, e, now);
                return true;
            }
        }
        let me = self.cfg.index;
        let reporters_side = self.faces_reporters(p);
        let mut ours = 0;
        for i in 0..n {
            match self.cfg.steering.target(self.rx.frame(i)) {
                // A response is taken only from the collectors' side: one from the reporters' could be
                // forged. It crosses the bump like any frame not ours.
                Target::Response(_) if reporters_side => self.forward_one(i),
                Target::Any => ours += 1,
                Target::Worker(k) | Target::Response(k) if k == me => ours += 1,
                Target::Worker(k) | Target::Response(k) => self.stage(i, k),
                Target::Int => self.set_int_aside(i),
                Target::Arp => self.arp(i),
                Target::Forward => self.forward_one(i),
            }
        }
        if ours < n {
            self.rx.compact();
            self.send_side_bursts(p);
        }
        self.engine_takes(p, !reporters_side, engine.as_deref_mut(), now);
        if !self.int_rx.is_empty() {
            self.int_takes(engine, now);
        }
        true
    }

    /// The engine has read the receive burst: its mbufs become rooms for the collector port's next transmit
    /// burst (no free to one pool and allocation from another per report).
    #[inline]
    pub(super) fn recycle_rx(&mut self) {
        self.queues[self.cfg.collector_port].recycle(&mut self.rx);
    }

    /// Whether port `p` is received while a handoff ring is full: the collectors' port of a bump in the
    /// wire, when every staging burst has room for a whole receive burst (staging bursts hold two, and
    /// the reporters' port is received only when they are empty, so one burst of it always fits then).
    fn takes_while_held_back(&self, p: usize) -> bool {
        self.queues.len() == 2
            && p == self.cfg.collector_port
            && self
                .staged
                .iter()
                .all(|s| s.room() >= self.cfg.burst.max(1))
    }

    /// Whether port `p` faces the reporters only (a bump in the wire's other port): RoCE responses are not
    /// taken from it. With one port, that port faces both.
    pub(super) fn faces_reporters(&self, p: usize) -> bool {
        self.queues.len() == 2 && p != self.cfg.collector_port
    }
}

#[cfg(test)]
mod tests {
    use super::handoff_capacity;

    #[test]
    fn handoff_rings_into_one_worker_hold_at_most_half_its_mbufs() {
        let caps: Vec<u32> = [1, 2, 3, 4, 5, 9, 16, 17, 64]
            .iter()
            .map(|&w| handoff_capacity(w))
            .collect();
        assert_eq!(caps, [4095, 4095, 2047, 1023, 1023, 511, 255, 255, 255]);
        for w in 2..=16 {
            let into_one = (w as u32 - 1) * handoff_capacity(w);
            assert!(into_one <= 4096, "{w} workers: {into_one}");
            assert!((handoff_capacity(w) + 1).is_power_of_two());
        }
    }
}
