//! One worker's data path, run to completion (DPDK l3fwd, VPP): the worker owns queue `k` of every port
//! and, in one [`DataPlane::poll`], receives a burst on each, classifies every frame once ([`Steering`]),
//! and sends each where it belongs:
//!
//! * a frame that is not ours goes to the other port's TX queue as it is (the bump in the wire);
//! * an ARP request for our address is turned into its reply in place and sent back;
//! * a report or RoCE response whose state another worker owns goes to that worker's handoff ring (when
//!   the ring is full, the worker holds it and receives nothing more until the owner catches up);
//! * an INT report goes to this worker's engine first (its packet, its switch's sequence numbers, what
//!   needs no flow's state), then to the owners of the flows its reports name, through the same rings;
//! * the rest is handed to this worker's engine as one burst, read where it lies.
//!
//! Then the handoff rings from the other workers are drained into the engine the same way, the engine's RoCE
//! frames are built in bursts and sent out of the collector port, DTA NACKs go back out of the port their
//! report came in on, and due timers run. No I/O thread, no channel per frame.
//!
//! The same loop runs over DPDK ([`dpdk`]: mbufs moved without a copy, the engine's frames built into the
//! reports' own mbufs) and AF_PACKET ([`afpacket`]: one socket per worker in a PACKET_FANOUT group); [`io`]
//! says what it needs of either.

pub mod afpacket;
#[cfg(feature = "dpdk")]
pub mod dpdk;
pub mod io;

use dta_netio::{RxStats, TxStats};
use dta_protocol::udp::{ether_type, ETHERTYPE_ARP};
use dta_translator::{Engine, Instant};

use super::arp;
use super::steer::{Steering, Target};
use super::worker::PlaneCounters;
use io::{Burst, HandoffRx, HandoffTx, Queue};

/// Most frames of one receive burst (the `[io] burst` limit).
const MAX_MARKS: usize = 1024;
/// Mbufs a DPDK handoff ring holds: a few bursts of slack between two workers.
pub const HANDOFF_RING: u32 = 4096;

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
    /// (frame of `int_rx`, workers) the engine asked to hand INT frames to.
    int_hand: Vec<(usize, u64)>,
    forward: Q::Burst,
    replies: Q::Burst,
    /// Per worker, the frames staged for its ring in this burst.
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
        let staged = (0..to.len())
            .map(|_| Q::Burst::with_capacity(burst))
            .collect();
        DataPlane {
            cfg,
            queues,
            to,
            from,
            port_ids,
            rx: Q::Burst::with_capacity(burst),
            int_rx: Q::Burst::with_capacity(burst),
            int_hand: Vec::with_capacity(burst),
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
        // Backpressure: while another worker's ring is full, this worker receives nothing more (the
        // frames wait in the NIC's ring, whose overflow the device counts) but keeps draining its own rings
        // and transmitting, so two workers waiting on each other still make progress.
        // Checked before every port: the ring may fill while the previous port's burst is staged, and a
        // staging burst has room for one receive burst only.
        for p in 0..self.queues.len() {
            if !self.offer_staged() {
                busy = true;
                self.counters.handoff_waits += 1;
                break;
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
            self.int_takes(engine, now, false);
        }
        true
    }

    /// Moves INT report `i` of the receive burst to the INT burst, which the engine takes on its own.
    fn set_int_aside(&mut self, i: usize) {
        if !self.rx.move_to(i, &mut self.int_rx) {
            // The INT burst has room for a whole receive burst: only a hole fails to move.
            self.rx.drop_one(i);
        }
    }

    /// Hands the INT burst to the engine (`handed`: other workers received it and handed it here), stages
    /// each received frame for the workers whose flows it also names (the frame itself to the last of
    /// them, a copy to each other one: only a v2.0 group of several flows needs more than one), and
    /// recycles the rest.
    fn int_takes(&mut self, engine: Option<&mut Engine>, now: Instant, handed: bool) {
        let Some(e) = engine else {
            self.counters.startup_drops += self.int_rx.len() as u64;
            self.int_rx.clear();
            return;
        };
        let hand = &mut self.int_hand;
        hand.clear();
        e.handle_int_frames(now, self.int_rx.frames(), handed, |i, workers| {
            hand.push((i, workers))
        });
        let me = self.cfg.index;
        for &(i, workers) in &self.int_hand {
            let mut left = workers & !(1 << (me % 64));
            while left != 0 {
                let k = left.trailing_zeros() as usize;
                left &= left - 1;
                let staged = match self.staged.get_mut(k) {
                    Some(s) => s,
                    None => {
                        self.counters.handoff_full += 1;
                        continue;
                    }
                };
                let done = if left == 0 {
                    self.int_rx.move_to(i, staged)
                } else {
                    self.queues[self.cfg.collector_port].copy_to(&self.int_rx, i, staged)
                };
                if done {
                    self.counters.handed_off += 1;
                } else {
                    self.counters.handoff_full += 1;
                }
            }
        }
        if !self.int_hand.is_empty() {
            self.int_rx.compact();
            self.offer_staged();
        }
        self.queues[self.cfg.collector_port].recycle(&mut self.int_rx);
    }

    /// The burst of port `p` when this is the only worker: every frame is the engine's or the wire's, so the
    /// engine classifies the burst itself (one parse a frame) and gives back what is not for it, which is
    /// then answered (ARP) or forwarded.
    #[inline]
    fn alone(&mut self, p: usize, e: &mut Engine, now: Instant) {
        let mut cursor = 0;
        let mut foreign = false;
        let rx = &self.rx;
        // One bit a frame of the burst: not for the engine.
        let mut marks = [0u64; MAX_MARKS / 64];
        let foreign_frame = |f: &[u8]| {
            // Frames come back in order: find this one's index from where the last one was.
            while cursor < rx.len() && !std::ptr::eq(rx.frame(cursor).as_ptr(), f.as_ptr()) {
                cursor += 1;
            }
            if let Some(m) = marks.get_mut(cursor / 64) {
                *m |= 1 << (cursor % 64);
                foreign = true;
            }
            cursor += 1;
        };
        if self.faces_reporters(p) {
            e.handle_reporter_frames(now, rx.frames(), foreign_frame);
        } else {
            e.handle_frames(now, rx.frames(), foreign_frame);
        }
        if foreign {
            for i in 0..self.rx.len().min(MAX_MARKS) {
                if marks[i / 64] & (1 << (i % 64)) == 0 {
                    continue;
                }
                if ether_type(self.rx.frame(i)) == Some(ETHERTYPE_ARP) {
                    self.arp(i);
                } else {
                    self.forward_one(i);
                }
            }
            self.send_side_bursts(p);
        }
        if e.pending_nacks() > 0 {
            self.send_nacks(p, e, now);
        }
        self.recycle_rx();
    }

    /// The engine has read the receive burst: its mbufs become rooms for the collector port's next transmit
    /// burst (no free to one pool and allocation from another per report).
    #[inline]
    fn recycle_rx(&mut self) {
        self.queues[self.cfg.collector_port].recycle(&mut self.rx);
    }

    /// Whether port `p` faces the reporters only (a bump in the wire's other port): RoCE responses are not
    /// taken from it. With one port, that port faces both.
    fn faces_reporters(&self, p: usize) -> bool {
        self.queues.len() == 2 && p != self.cfg.collector_port
    }

    /// Hands frame `i` of the receive burst to worker `k`'s staging burst.
    fn stage(&mut self, i: usize, k: usize) {
        let moved = match self.staged.get_mut(k) {
            Some(s) => self.rx.move_to(i, s),
            None => false,
        };
        if moved {
            self.counters.handed_off += 1;
        } else {
            // A worker index beyond the rings cannot come from steering (it knows the worker count); a
            // full staging burst cannot either (it holds a whole receive burst).
            self.rx.drop_one(i);
        }
    }

    /// Answers ARP request `i` in its own mbuf when it asks for our address; forwards it otherwise.
    fn arp(&mut self, i: usize) {
        let ip = self.cfg.steering.local_ip;
        let mut reply = [0u8; arp::ARP_FRAME_LEN];
        let answered = arp::reply(self.rx.frame(i), ip, self.cfg.local_mac, &mut reply).is_some();
        if !answered {
            return self.forward_one(i);
        }
        // The reply is 42 bytes, as the request was at least: written over its first 42, the length kept
        // (a padded request gives a padded reply, as a NIC pads a short frame anyway).
        let frame = self.rx.frame_mut(i);
        match frame.get_mut(..arp::ARP_FRAME_LEN) {
            Some(head) => {
                head.copy_from_slice(&reply);
                if self.rx.move_to(i, &mut self.replies) {
                    self.counters.arp_replies += 1;
                }
            }
            None => self.rx.drop_one(i),
        }
    }

    /// Moves frame `i` to the other port's TX burst (bump in the wire), or frees and counts it with one port.
    fn forward_one(&mut self, i: usize) {
        if self.queues.len() == 2 && self.rx.move_to(i, &mut self.forward) {
            self.counters.forwarded += 1;
        } else {
            self.rx.drop_one(i);
            self.counters.not_forwarded += 1;
        }
    }

    /// Sends what the burst from port `p` produced besides the engine's input: forwarded frames, ARP
    /// replies, handoffs.
    fn send_side_bursts(&mut self, p: usize) {
        if !self.forward.is_empty() {
            let other = 1 - p;
            self.queues[other].send(&mut self.forward);
        }
        if !self.replies.is_empty() {
            self.queues[p].send(&mut self.replies);
        }
        self.offer_staged();
    }

    /// Offers every staged handoff to its ring; true when none is left waiting.
    fn offer_staged(&mut self) -> bool {
        let mut all = true;
        for (k, staged) in self.staged.iter_mut().enumerate() {
            if staged.is_empty() {
                continue;
            }
            match self.to.get_mut(k).and_then(Option::as_mut) {
                Some(ring) => {
                    ring.offer(staged);
                    all &= staged.is_empty();
                }
                None => staged.clear(),
            }
        }
        all
    }

    /// Hands the frames left in the receive burst (all from port `p`) to the engine in one call, sends the
    /// DTA NACKs they caused back out of port `p`, and frees them.
    #[inline]
    fn engine_takes(
        &mut self,
        p: usize,
        responses: bool,
        engine: Option<&mut Engine>,
        now: Instant,
    ) {
        match engine {
            Some(e) => {
                // Frames the engine finds not for it after all (RoCE from an address that is no collector)
                // are dropped, as steering sent them here as ours: counted by the engine (not_for_us).
                if !responses {
                    e.handle_reporter_frames(now, self.rx.frames(), |_| {});
                } else {
                    e.handle_frames(now, self.rx.frames(), |_| {});
                }
                if e.pending_nacks() > 0 {
                    self.send_nacks(p, e, now);
                }
            }
            None => self.counters.startup_drops += self.rx.len() as u64,
        }
        self.recycle_rx();
    }

    /// Builds the engine's waiting DTA NACKs into mbufs of port `p` and sends them there.
    #[cold]
    fn send_nacks(&mut self, p: usize, e: &mut Engine, now: Instant) {
        let n = e.pending_nacks();
        self.queues[p].send_nacks(e, now, n);
    }

    /// Drains the ring from worker `j` into the engine, or frees what it holds when there is no engine yet.
    fn take_handoff(&mut self, j: usize, mut engine: Option<&mut Engine>, now: Instant) -> bool {
        let n = self.from[j].take(&mut self.rx);
        if n == 0 {
            return false;
        }
        // INT reports handed over go to the engine apart (it translates only its own flows' reports of
        // them); the rest are reports and responses like those received.
        if self.cfg.steering.int_port.is_some() {
            let mut int = 0;
            for i in 0..n {
                if self.cfg.steering.target(self.rx.frame(i)) == Target::Int {
                    self.set_int_aside(i);
                    int += 1;
                }
            }
            if int > 0 {
                self.rx.compact();
                self.int_takes(engine.as_deref_mut(), now, true);
                if int == n {
                    return true;
                }
            }
        }
        // Handed-off frames came in on one port in the common case (reports on the reporter side,
        // responses on the collector side): NACKs go back out of the first frame's. Responses among them
        // are taken: the worker that received them forwarded those from the reporters' side instead.
        let p = self
            .rx
            .origin(0)
            .and_then(|id| self.port_ids.iter().position(|&q| q == id))
            .unwrap_or(0);
        self.engine_takes(p, true, engine, now);
        true
    }

    /// Builds the engine's RoCE frames for the collector port, a burst at a time, and sends them.
    #[inline]
    fn transmit(&mut self, e: &mut Engine, now: Instant) -> bool {
        let q = &mut self.queues[self.cfg.collector_port];
        let most = q.tx_burst();
        let mut any = false;
        loop {
            let want = e.pending_frames().min(most);
            if want == 0 {
                return any;
            }
            let (built, sent) = q.send_from_engine(e, now, want);
            self.counters.engine_frames_out += sent as u64;
            any |= built > 0;
            // A short burst means the window, the rate limiter or the queue stopped it: done for now.
            if built < most {
                return any;
            }
        }
    }
}
