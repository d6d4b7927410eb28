//! The data path's AF_PACKET side: one socket per worker on each interface, the sockets of an interface in
//! one PACKET_FANOUT group (the kernel keeps each flow on one socket, as RSS keeps it on one queue), frames in
//! slots. The kernel copies every frame in and out of a socket anyway, so frames handed to another worker or
//! forwarded are copied here too; bursts between workers travel over bounded channels and come back empty,
//! so steady state allocates nothing.

use std::os::fd::AsRawFd;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};

use dta_netio::{
    AfPacket, AfPacketConfig, FrameBatch, NetioError, RxBurst, RxStats, TxBurst, TxStats,
    JUMBO_SLOT_SIZE,
};
use dta_translator::{Engine, Instant};

use super::io::{Burst, HandoffRx, HandoffTx, Queue};
use super::WorkerRings;

/// Slot size of the frames the engine builds: an RDMA WRITE at the largest IB path MTU (4096 payload
/// bytes, which the engine refuses to exceed) with its headers and iCRC, rounded up.
pub const OUTPUT_SLOT_SIZE: usize = 4096 + 128;
/// Bursts in flight on one handoff ring.
const RING_BURSTS: usize = 16;
/// Longest an idle worker blocks on its sockets: a frame another worker hands it waits at most this long.
const MAX_IDLE_WAIT: std::time::Duration = std::time::Duration::from_micros(200);

/// Received frames in slots, with the port each came in on and the holes left by frames moved out. The
/// slots take a jumbo frame (MTU 9216, VLAN tags included): a bump in the wire on an MTU 9000 link
/// forwards every frame the link carries; a frame still longer is dropped and counted per port
/// (`dta_translator_port_rx_dropped_total`).
pub struct CopyBurst {
    batch: FrameBatch,
    origin: Vec<u16>,
    live: Vec<bool>,
}

impl Burst for CopyBurst {
    fn with_capacity(capacity: usize) -> Self {
        CopyBurst {
            batch: FrameBatch::new(capacity, JUMBO_SLOT_SIZE),
            origin: Vec::with_capacity(capacity),
            live: Vec::with_capacity(capacity),
        }
    }
    fn len(&self) -> usize {
        self.batch.len()
    }
    fn room(&self) -> usize {
        self.batch.free()
    }
    fn frame(&self, i: usize) -> &[u8] {
        match self.live.get(i) {
            Some(true) => self.batch.frame(i),
            _ => &[],
        }
    }
    fn frame_mut(&mut self, i: usize) -> &mut [u8] {
        match self.live.get(i) {
            Some(true) => self.batch.frame_mut(i),
            _ => &mut [],
        }
    }
    fn rewrite(&mut self, i: usize, bytes: &[u8]) -> bool {
        self.live.get(i) == Some(&true) && self.batch.replace(i, bytes).is_ok()
    }
    fn origin(&self, i: usize) -> Option<u16> {
        (self.live.get(i) == Some(&true)).then(|| self.origin[i])
    }
    fn move_to(&mut self, i: usize, to: &mut Self) -> bool {
        if self.live.get(i) != Some(&true) || to.batch.push(self.batch.frame(i)).is_err() {
            return false;
        }
        to.origin.push(self.origin[i]);
        to.live.push(true);
        self.live[i] = false;
        true
    }
    fn drop_one(&mut self, i: usize) {
        if let Some(l) = self.live.get_mut(i) {
            *l = false;
        }
    }
    fn compact(&mut self) {
        let live = &self.live;
        self.batch.retain(|i| live[i]);
        let mut k = 0;
        self.origin.retain(|_| {
            k += 1;
            live[k - 1]
        });
        self.live.clear();
        self.live.resize(self.batch.len(), true);
    }
    fn clear(&mut self) {
        self.batch.clear();
        self.origin.clear();
        self.live.clear();
    }
}

/// One worker's socket on one interface.
pub struct SocketQueue {
    sock: AfPacket,
    /// The port's index, as the frames' origin.
    port: u16,
    /// The engine's frames, built one at a time into slots, sent as a burst.
    out: FrameBatch,
    /// Receive or send failures (a link down): counted and logged once, never fatal.
    errors: u64,
}

impl SocketQueue {
    /// A socket on `ifname` for port index `port`, in fanout group `fanout` when several workers share it.
    pub fn open(
        ifname: &str,
        port: u16,
        burst: usize,
        fanout: Option<u16>,
    ) -> Result<Self, NetioError> {
        let cfg = AfPacketConfig {
            fanout,
            ..AfPacketConfig::daemon(burst)
        };
        Ok(SocketQueue {
            sock: AfPacket::open(ifname, &cfg)?,
            port,
            out: FrameBatch::new(burst, OUTPUT_SLOT_SIZE),
            errors: 0,
        })
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        self.sock.mac()
    }

    /// Blocks up to `timeout` for a frame (an idle worker's sleep).
    pub fn wait(&self, timeout: std::time::Duration) {
        let _ = self.sock.wait_readable(timeout);
    }

    fn failed(&mut self, what: &str, e: &NetioError) {
        self.errors += 1;
        if self.errors == 1 || self.errors.is_power_of_two() {
            log::warn!(
                "{} {what}: {e} ({} failure(s) so far; the worker goes on)",
                self.sock.ifname(),
                self.errors
            );
        }
    }

    /// Sends `self.out` and empties it; how many the kernel took.
    fn flush_out(&mut self) -> usize {
        let sent = match self.sock.send_burst(&self.out) {
            Ok(n) => n,
            Err(e) => {
                self.failed("send", &e);
                0
            }
        };
        self.out.clear();
        sent
    }
}

impl Queue for SocketQueue {
    type Burst = CopyBurst;
    type HandoffTx = CopyTx;
    type HandoffRx = CopyRx;

    fn port_id(&self) -> u16 {
        self.port
    }
    fn recv(&mut self, burst: &mut CopyBurst) -> usize {
        match self.sock.recv_burst(&mut burst.batch) {
            Ok(n) => {
                burst.origin.resize(burst.batch.len(), self.port);
                burst.live.resize(burst.batch.len(), true);
                n
            }
            Err(e) => {
                self.failed("receive", &e);
                0
            }
        }
    }
    fn send(&mut self, burst: &mut CopyBurst) {
        if let Err(e) = self.sock.send_burst(&burst.batch) {
            self.failed("send", &e);
        }
        burst.clear();
    }
    fn send_from_engine(&mut self, e: &mut Engine, now: Instant, want: usize) -> (usize, usize) {
        let mut built = 0;
        while built < want.min(self.out.capacity()) {
            match self
                .out
                .push_with(|slot| e.poll_transmit_into(now, slot).unwrap_or(0))
            {
                Ok(n) if n > 0 => built += 1,
                _ => break,
            }
        }
        (built, self.flush_out())
    }
    fn send_nacks(&mut self, e: &mut Engine, now: Instant, n: usize) {
        for _ in 0..n.min(self.out.capacity()) {
            if !matches!(
                self.out
                    .push_with(|slot| e.poll_transmit_into(now, slot).unwrap_or(0)),
                Ok(n) if n > 0
            ) {
                break;
            }
        }
        self.flush_out();
    }
    fn push_bytes(&self, bytes: &[u8], to: &mut CopyBurst) -> bool {
        if to.batch.push(bytes).is_err() {
            return false;
        }
        to.origin.push(self.port);
        to.live.push(true);
        true
    }
    fn recycle(&mut self, burst: &mut CopyBurst) {
        burst.clear();
    }
    fn stats(&self) -> (RxStats, TxStats) {
        (self.sock.rx_stats(), self.sock.tx_stats())
    }
    fn tx_burst(&self) -> usize {
        self.out.capacity()
    }
    fn idle_spin(&self) -> u32 {
        16
    }
    /// Blocks until a frame arrives on any of the worker's sockets, or `timeout` (at most
    /// [`MAX_IDLE_WAIT`], so that frames handed over by another worker wait no longer): an idle worker
    /// holds no core, which a poll loop of system calls would.
    fn idle_wait(queues: &[Self], timeout: std::time::Duration) {
        let mut fds: Vec<libc::pollfd> = queues
            .iter()
            .map(|q| libc::pollfd {
                fd: q.sock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let t = timeout.min(MAX_IDLE_WAIT);
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: t.subsec_nanos().into(),
        };
        // SAFETY: `fds` holds valid pollfds of open sockets; a null signal mask keeps the thread's own.
        // An error (EINTR) only ends the wait early.
        unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
    }
}

/// The sending end of an AF_PACKET handoff ring: full bursts go over `full`, empty ones come back over
/// `empty`.
pub struct CopyTx {
    full: SyncSender<CopyBurst>,
    empty: Receiver<CopyBurst>,
}

/// The receiving end.
pub struct CopyRx {
    full: Receiver<CopyBurst>,
    empty: SyncSender<CopyBurst>,
}

impl HandoffTx<CopyBurst> for CopyTx {
    fn offer(&mut self, burst: &mut CopyBurst) {
        if burst.is_empty() {
            return;
        }
        // No empty burst back yet: the receiver is behind; the caller holds its frames (backpressure).
        let Ok(mut spare) = self.empty.try_recv() else {
            return;
        };
        spare.clear();
        std::mem::swap(burst, &mut spare);
        match self.full.try_send(spare) {
            Ok(()) => {}
            // Cannot happen (as many bursts circulate as the channel holds), or the receiver is gone:
            // keep the frames.
            Err(TrySendError::Full(back) | TrySendError::Disconnected(back)) => *burst = back,
        }
    }
}

impl HandoffRx<CopyBurst> for CopyRx {
    fn take(&mut self, burst: &mut CopyBurst) -> usize {
        match self.full.try_recv() {
            Ok(mut got) => {
                std::mem::swap(burst, &mut got);
                got.clear();
                let _ = self.empty.try_send(got);
                burst.len()
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => 0,
        }
    }
}

/// One handoff ring of bursts of `burst` frames.
fn ring(burst: usize) -> (CopyTx, CopyRx) {
    let (full_tx, full_rx) = sync_channel(RING_BURSTS);
    let (empty_tx, empty_rx) = sync_channel(RING_BURSTS);
    for _ in 0..RING_BURSTS {
        let _ = empty_tx.try_send(CopyBurst::with_capacity(burst));
    }
    (
        CopyTx {
            full: full_tx,
            empty: empty_rx,
        },
        CopyRx {
            full: full_rx,
            empty: empty_tx,
        },
    )
}

/// The handoff rings of `workers` AF_PACKET workers.
pub fn handoff_mesh(workers: usize, burst: usize) -> Vec<WorkerRings<SocketQueue>> {
    super::mesh::<SocketQueue, _>(workers, |_, _| {
        Ok::<_, std::convert::Infallible>(ring(burst))
    })
    .unwrap_or_else(|e| match e {})
}
