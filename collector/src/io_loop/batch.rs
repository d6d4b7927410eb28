//! The responder on a port through frame batches: AF_PACKET, where the kernel copies every frame into and
//! out of its ring anyway. A burst is received into a batch, answered ([`Locked::answer`]) into a batch of
//! responses, and sent.

use std::sync::Mutex;
use std::time::Duration;

use dta_netio::{FrameBatch, NetioError, PollPort, RxStats, TxStats};

use super::answer::Locked;
use super::intake::Intake;
use super::PortLoop;
use crate::memory::Arena;
use crate::responder::{FaultConfig, FaultCounts, Responder, RESPONSE_MAX};

/// Frames per burst.
const BURST: usize = 64;
/// Largest frame received (jumbo frames included).
const MAX_FRAME: usize = 9216;
/// How long an idle loop waits for input before it checks for shutdown and releases held frames.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// One port's receive and response batches.
pub struct BatchLoop<'a> {
    port: &'a mut dyn PollPort,
    responder: &'a Mutex<Responder>,
    arena: &'a Arena,
    intake: Intake,
    rx: FrameBatch,
    tx: FrameBatch,
}

impl<'a> BatchLoop<'a> {
    /// The loop on `port`, answering from `responder` into `arena`, behind `faults`.
    pub fn new(
        port: &'a mut dyn PollPort,
        responder: &'a Mutex<Responder>,
        arena: &'a Arena,
        faults: FaultConfig,
    ) -> Self {
        BatchLoop {
            port,
            responder,
            arena,
            intake: Intake::new(faults),
            rx: FrameBatch::new(BURST, MAX_FRAME),
            tx: FrameBatch::new(BURST * 2, RESPONSE_MAX),
        }
    }
}

impl PortLoop for BatchLoop<'_> {
    fn poll(&mut self) -> Result<usize, NetioError> {
        self.rx.clear();
        let got = self.port.recv_burst(&mut self.rx)?;
        let (port, tx) = (&mut *self.port, &mut self.tx);
        if self.intake.is_direct() {
            if got > 0 {
                let mut locked = Locked::new(self.responder, self.arena);
                answer(port, tx, &mut locked, &mut self.rx.iter())?;
            }
        } else {
            self.intake.inject(self.rx.iter());
            if self.intake.delivered().len() > 0 {
                let mut locked = Locked::new(self.responder, self.arena);
                answer(port, tx, &mut locked, &mut self.intake.delivered())?;
            }
            self.intake.clear();
        }
        Ok(got)
    }

    fn idle(&mut self, _empty_polls: u32) -> Result<(), NetioError> {
        // The socket can wait for a frame: no spinning.
        self.port.wait(IDLE_WAIT)
    }

    fn stats(&self) -> (RxStats, TxStats, FaultCounts) {
        (
            self.port.rx_stats(),
            self.port.tx_stats(),
            self.intake.counts(),
        )
    }
}

/// Answers every frame of `frames` into `tx`, sending it whenever it fills and at the end.
fn answer<'f>(
    port: &mut dyn PollPort,
    tx: &mut FrameBatch,
    locked: &mut Locked<'_>,
    frames: &mut impl Iterator<Item = &'f [u8]>,
) -> Result<(), NetioError> {
    loop {
        locked.answer(frames, tx);
        if tx.is_empty() {
            return Ok(());
        }
        // Frames the port refuses are counted in its TX statistics (published as drops); the translator
        // retransmits what was not acknowledged.
        let full = tx.free() == 0;
        port.send_burst(tx)?;
        tx.clear();
        if !full {
            return Ok(());
        }
    }
}
