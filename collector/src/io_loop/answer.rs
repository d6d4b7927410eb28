//! The one call path from received frames to the responder, whatever holds them: a [`FrameBatch`]
//! (AF_PACKET), mbufs where the device wrote them (DPDK), or the fault injector's copies. Each response is
//! built by the responder straight into its room in the transmit burst (a batch slot or an mbuf's data
//! room); nothing here knows the protocol.

use std::sync::{Mutex, MutexGuard, RwLockWriteGuard};

use dta_netio::FrameBatch;

use crate::memory::{Arena, Mapping};
use crate::responder::{Outcome, Responder};

/// Where a burst's responses are built, one room each (at least
/// [`RESPONSE_MAX`](crate::responder::RESPONSE_MAX) bytes).
pub trait Rooms {
    /// Whether every room is taken.
    fn full(&self) -> bool;
    /// Lets `write` build a response in the next room and keeps it when `write` returns its length (0:
    /// no response; the room stays free). Only called when not [`full`](Self::full).
    fn build(&mut self, write: impl FnOnce(&mut [u8]) -> usize);
}

impl Rooms for FrameBatch {
    #[inline]
    fn full(&self) -> bool {
        self.free() == 0
    }

    #[inline]
    fn build(&mut self, write: impl FnOnce(&mut [u8]) -> usize) {
        // Fails only when full, which the caller checked first.
        let _ = self.push_with(write);
    }
}

/// The data rooms of a transmit burst's mbufs and their frame lengths, as
/// `DpdkQueue::send_burst_in_place` hands them to its builder; `built` rooms hold responses so far.
pub struct MbufRooms<'r, 'b> {
    pub rooms: &'r mut [&'b mut [u8]],
    pub lens: &'r mut [usize],
    pub built: usize,
}

impl Rooms for MbufRooms<'_, '_> {
    #[inline]
    fn full(&self) -> bool {
        self.built >= self.rooms.len()
    }

    #[inline]
    fn build(&mut self, write: impl FnOnce(&mut [u8]) -> usize) {
        let (Some(room), Some(len)) = (
            self.rooms.get_mut(self.built),
            self.lens.get_mut(self.built),
        ) else {
            return;
        };
        let n = write(room);
        if n > 0 {
            *len = n;
            self.built += 1;
        }
    }
}

/// The responder and the region memory, locked once for a whole burst (the control thread opens QPs and
/// the queries read memory between bursts, never within one).
pub struct Locked<'a> {
    responder: MutexGuard<'a, Responder>,
    mem: RwLockWriteGuard<'a, Mapping>,
}

impl<'a> Locked<'a> {
    /// Takes both locks; a poisoned responder lock only means a panicking holder, and its state is still
    /// the state to answer from.
    pub fn new(responder: &'a Mutex<Responder>, arena: &'a Arena) -> Self {
        Locked {
            responder: responder.lock().unwrap_or_else(|e| e.into_inner()),
            mem: arena.write(),
        }
    }

    /// Hands frames from `frames` to the responder in order, each response built in the next room of `out`,
    /// until `frames` ends or `out` is full (a frame is taken only while a room is free, as any frame may
    /// earn a response). Returns how many frames were taken.
    #[inline]
    pub fn answer<'f>(
        &mut self,
        frames: &mut impl Iterator<Item = &'f [u8]>,
        out: &mut impl Rooms,
    ) -> usize {
        let mem = self.mem.as_mut_slice();
        let r = &mut *self.responder;
        let mut taken = 0;
        while !out.full() {
            let Some(frame) = frames.next() else {
                break;
            };
            out.build(|room| match r.handle(frame, mem, room) {
                Outcome::Respond(n) => n,
                Outcome::Silent | Outcome::Dropped(_) => 0,
            });
            taken += 1;
        }
        taken
    }
}
