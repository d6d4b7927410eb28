//! Connections in service, counted in total and per address against the limits.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use super::ControlLimits;

/// Connections in service, in total and per address.
#[derive(Default)]
pub(super) struct Slots(Mutex<SlotCount>);

#[derive(Default)]
pub(super) struct SlotCount {
    pub(super) total: usize,
    by_ip: HashMap<IpAddr, usize>,
}

impl Slots {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, SlotCount> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a slot for a connection from `ip`, or says which limit it would exceed.
    pub(super) fn take(
        self: &Arc<Self>,
        ip: IpAddr,
        limits: &ControlLimits,
    ) -> std::result::Result<Slot, String> {
        let mut g = self.lock();
        let mine = g.by_ip.get(&ip).copied().unwrap_or(0);
        if g.total >= limits.max_connections {
            return Err(format!(
                "too many control connections ({} at once); try again later",
                limits.max_connections
            ));
        }
        if mine >= limits.max_per_address {
            return Err(format!(
                "too many control connections from {ip} ({} at once); try again later",
                limits.max_per_address
            ));
        }
        g.total += 1;
        *g.by_ip.entry(ip).or_default() += 1;
        Ok(Slot {
            slots: self.clone(),
            ip,
        })
    }
}

/// A connection's place in [`Slots`], given back when the connection ends.
pub(super) struct Slot {
    slots: Arc<Slots>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut g = self.slots.lock();
        g.total -= 1;
        if let Some(n) = g.by_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                g.by_ip.remove(&self.ip);
            }
        }
    }
}
