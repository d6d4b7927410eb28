//! The responder run to completion on a DPDK queue, without copying a frame: a burst of requests is
//! received as mbufs and handed to the responder where the device wrote them; the responses (ACK, ATOMIC
//! ACK, NAK, from the per-QP templates) are built by the responder straight into the data rooms of a
//! transmit burst, which are the mbufs of earlier requests (`DpdkQueue::reuse_as_spares`: a request's mbuf
//! carries a later response out instead of going back to the pool while another comes out of it), and sent
//! as one burst. [`MbufLoop::poll`] is the whole data path; the daemon calls it in a loop and so does
//! `dta-bench responder-daemon`.

use std::sync::Mutex;
use std::time::Duration;

use dta_netio::dpdk::{DpdkQueue, MbufBurst};
use dta_netio::{NetioError, RxBurst, RxStats, TxBurst, TxStats};

use super::answer::{Locked, MbufRooms, Rooms};
use super::intake::Intake;
use super::PortLoop;
use crate::memory::Arena;
use crate::responder::{FaultConfig, FaultCounts, Responder, RESPONSE_MAX};

/// Most requests received per burst (the queue's own `max_burst` may be lower).
const BURST: usize = 64;
/// Empty polls in a row before the loop sleeps between polls: at full load it never sleeps, and a burst
/// after a pause finds it spinning for a while (the translator's workers do the same).
const SPIN_POLLS: u32 = 4096;
/// Longest sleep of an idle loop, which keeps an idle collector from holding a core on a shared machine.
const IDLE_SLEEP: Duration = Duration::from_micros(50);
/// Fewest mbufs offered to the responder for a burst's responses.
const MIN_ROOMS: usize = 8;

/// One DPDK queue pair's run-to-completion responder.
pub struct MbufLoop<'a> {
    queue: &'a mut DpdkQueue,
    responder: &'a Mutex<Responder>,
    arena: &'a Arena,
    intake: Intake,
    rx: MbufBurst,
    /// Where a response goes when no mbuf can take it (the pool is empty): the request is still carried
    /// out, its response lost as a NIC without descriptors loses a frame.
    discard: [u8; RESPONSE_MAX],
    /// Mbufs offered for the responses of the next burst: twice what the last burst built, at least
    /// [`MIN_ROOMS`]. WRITEs are answered one in 16 (the translator's AckReq cadence), so offering a room
    /// per request would take 64 mbufs to build 4 frames, and put 60 back, every burst; a burst that needs
    /// more simply takes another transmit burst.
    rooms: usize,
}

impl<'a> MbufLoop<'a> {
    /// The loop on `queue`, answering from `responder` into `arena`, behind `faults`.
    pub fn new(
        queue: &'a mut DpdkQueue,
        responder: &'a Mutex<Responder>,
        arena: &'a Arena,
        faults: FaultConfig,
    ) -> Self {
        MbufLoop {
            queue,
            responder,
            arena,
            intake: Intake::new(faults),
            rx: MbufBurst::with_capacity(BURST),
            discard: [0; RESPONSE_MAX],
            rooms: DpdkQueue::TX_ROOMS,
        }
    }

    /// One pass: receives a burst, answers it, sends the responses, and keeps the requests' mbufs as rooms
    /// for the next burst's responses. Returns how many frames were received.
    #[inline(never)]
    pub fn poll(&mut self) -> usize {
        let got = self.queue.recv_mbufs(&mut self.rx);
        if self.intake.is_direct() {
            if got > 0 {
                let mut locked = Locked::new(self.responder, self.arena);
                let frames = &mut self.rx.frames();
                let built = answer(
                    self.queue,
                    &mut locked,
                    frames,
                    got,
                    self.rooms,
                    &mut self.discard,
                );
                self.rooms = (built * 2).clamp(MIN_ROOMS, DpdkQueue::TX_ROOMS);
            }
        } else {
            self.intake.inject(self.rx.frames());
            let n = self.intake.delivered().len();
            if n > 0 {
                let mut locked = Locked::new(self.responder, self.arena);
                let frames = &mut self.intake.delivered();
                let rooms = DpdkQueue::TX_ROOMS;
                answer(self.queue, &mut locked, frames, n, rooms, &mut self.discard);
            }
            self.intake.clear();
        }
        if !self.rx.is_empty() {
            self.queue.reuse_as_spares(&mut self.rx);
        }
        got
    }

    /// Receive counters of the queue.
    pub fn rx_stats(&self) -> RxStats {
        self.queue.rx_stats()
    }

    /// Transmit counters of the queue (responses sent, and those refused or without an mbuf as dropped).
    pub fn tx_stats(&self) -> TxStats {
        self.queue.tx_stats()
    }

    /// What fault injection did.
    pub fn fault_counts(&self) -> FaultCounts {
        self.intake.counts()
    }
}

impl PortLoop for MbufLoop<'_> {
    fn poll(&mut self) -> Result<usize, NetioError> {
        Ok(MbufLoop::poll(self))
    }

    fn idle(&mut self, empty_polls: u32) -> Result<(), NetioError> {
        if empty_polls > SPIN_POLLS {
            std::thread::sleep(IDLE_SLEEP);
        }
        Ok(())
    }

    fn stats(&self) -> (RxStats, TxStats, FaultCounts) {
        (self.rx_stats(), self.tx_stats(), self.fault_counts())
    }

    fn link_up(&self) -> Option<bool> {
        self.queue.link_up()
    }
}

/// Answers the `n` frames of `frames`, a transmit burst of up to `rooms` mbufs at a time, each response
/// built in an mbuf of the burst. Returns how many responses were built.
#[inline]
fn answer<'f>(
    queue: &mut DpdkQueue,
    locked: &mut Locked<'_>,
    frames: &mut impl Iterator<Item = &'f [u8]>,
    mut n: usize,
    rooms: usize,
    discard: &mut [u8; RESPONSE_MAX],
) -> usize {
    let mut built = 0;
    while n > 0 {
        // No more rooms than frames: each frame earns at most one response.
        let want = n.min(rooms).max(1);
        let mut taken = 0;
        queue.send_burst_in_place(want, |rooms, lens| {
            let mut out = MbufRooms {
                rooms,
                lens,
                built: 0,
            };
            taken = locked.answer(frames, &mut out);
            built += out.built;
            out.built
        });
        if taken == 0 {
            // The builder was not called: no mbuf for the burst (counted as dropped by the queue).
            taken = locked.answer(&mut frames.take(want), &mut Discard(discard));
            if taken == 0 {
                break;
            }
        }
        n = n.saturating_sub(taken);
    }
    built
}

/// Rooms that never fill and keep nothing.
struct Discard<'s>(&'s mut [u8; RESPONSE_MAX]);

impl Rooms for Discard<'_> {
    fn full(&self) -> bool {
        false
    }

    fn build(&mut self, write: impl FnOnce(&mut [u8]) -> usize) {
        write(self.0);
    }
}
