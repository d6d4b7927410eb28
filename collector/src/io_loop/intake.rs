//! What stands between a port and the responder: nothing (the frames are answered where they were
//! received), or the fault injector, which holds frames back to reorder them and so copies every frame it
//! lets through. Fault injection is a test feature; its copies are the price of holding a frame across
//! bursts while the port's buffers go back to the device.

use crate::responder::{FaultConfig, FaultCounts, FaultInjector};

/// The fault injector and the frames it delivers now.
pub struct Intake {
    injector: Option<FaultInjector>,
    deliver: Vec<Vec<u8>>,
}

impl Intake {
    /// Direct when `faults` enables nothing.
    pub fn new(faults: FaultConfig) -> Self {
        Intake {
            injector: faults.is_active().then(|| FaultInjector::new(faults)),
            deliver: Vec::new(),
        }
    }

    /// Whether received frames go to the responder as they are.
    #[inline]
    pub fn is_direct(&self) -> bool {
        self.injector.is_none()
    }

    /// Passes a burst of received frames through the injector; an empty burst releases a held frame (an
    /// idle input never turns a reordering into a loss). Does nothing when direct.
    pub fn inject<'f>(&mut self, received: impl ExactSizeIterator<Item = &'f [u8]>) {
        let Some(inj) = self.injector.as_mut() else {
            return;
        };
        if received.len() == 0 {
            inj.flush(&mut self.deliver);
        } else {
            received.for_each(|f| inj.push(f, &mut self.deliver));
        }
    }

    /// The frames the injector delivers now, in order.
    pub fn delivered(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.deliver.iter().map(Vec::as_slice)
    }

    /// Forgets the delivered frames once answered.
    pub fn clear(&mut self) {
        self.deliver.clear();
    }

    /// What the injector has done so far (zeros when direct).
    pub fn counts(&self) -> FaultCounts {
        self.injector
            .as_ref()
            .map(FaultInjector::counts)
            .unwrap_or_default()
    }
}
