//! Watching the ports' links from a worker, between polls: a link that goes down (a `net_memif` port whose
//! peer process stopped or died, a NIC unplugged) is logged and counted when it goes, and logged again with
//! how long it was away when it comes back. Frames meant for a port whose link is down are refused by its
//! device and counted as that port's TX drops; the engine resends what was not acknowledged, or counts the
//! loss when its collector comes back with new memory.

use dta_translator::Instant;

/// Link state of every port of one worker, as last seen.
#[derive(Debug, Clone, Default)]
pub struct LinkWatch {
    names: Vec<String>,
    /// Per port: up, down, or `None` where the port cannot tell (AF_PACKET sockets report nothing here).
    up: Vec<Option<bool>>,
    /// Per port: times the link was seen going down.
    downs: Vec<u64>,
    /// Per port: when it was seen going down, while it is down.
    since: Vec<Option<Instant>>,
}

impl LinkWatch {
    /// A watch over the ports named `names` (in port order), their state unknown until the first look.
    pub fn new(names: &[String]) -> Self {
        LinkWatch {
            names: names.to_vec(),
            up: vec![None; names.len()],
            downs: vec![0; names.len()],
            since: vec![None; names.len()],
        }
    }

    /// Records the states seen at `now` (one per port), logging every change after the first look.
    pub fn observe(&mut self, states: &[Option<bool>], now: Instant) {
        for (p, &state) in states.iter().enumerate() {
            let Some(before) = self.up.get(p).copied() else {
                continue;
            };
            let name = self.names.get(p).map_or("?", String::as_str);
            match (before, state) {
                // Down at the first look: a memif server waiting for its peer, not a fall.
                (None, Some(false)) => {
                    self.since[p] = Some(now);
                    log::info!("port {name}: link down (waiting for its peer)");
                }
                (Some(true), Some(false)) => {
                    self.downs[p] += 1;
                    self.since[p] = Some(now);
                    log::warn!(
                        "port {name}: link down (its peer is gone); frames to it are dropped and counted \
                         until it is back ({} time(s) so far)",
                        self.downs[p]
                    );
                }
                (Some(false), Some(true)) => {
                    let away = self.since[p]
                        .take()
                        .map_or(0, |t| now.saturating_since(t).as_millis());
                    if self.downs[p] == 0 {
                        log::info!("port {name}: link up (its peer connected after {away} ms)");
                    } else {
                        log::info!("port {name}: link up again after {away} ms");
                    }
                }
                _ => {}
            }
            if state.is_some() {
                self.up[p] = state;
            }
        }
    }

    /// Per port: the link's state (1 up, 0 down; `None` unknown) and how many times it went down.
    pub fn states(&self) -> Vec<(Option<bool>, u64)> {
        self.up
            .iter()
            .copied()
            .zip(self.downs.iter().copied())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_fall_once_and_ignores_unknown_states() {
        let mut w = LinkWatch::new(&["a".into(), "b".into()]);
        let t = Instant::ZERO;
        w.observe(&[Some(true), None], t);
        assert_eq!(w.states(), vec![(Some(true), 0), (None, 0)]);
        w.observe(&[Some(false), None], t);
        w.observe(&[Some(false), None], t);
        assert_eq!(w.states(), vec![(Some(false), 1), (None, 0)]);
        // An unreadable state keeps the last one seen.
        w.observe(&[None, None], t);
        w.observe(&[Some(true), None], t);
        w.observe(&[Some(false), None], t);
        assert_eq!(w.states(), vec![(Some(false), 2), (None, 0)]);
    }

    #[test]
    fn a_port_down_from_the_start_has_not_fallen() {
        let mut w = LinkWatch::new(&["a".into()]);
        w.observe(&[Some(false)], Instant::ZERO);
        w.observe(&[Some(false)], Instant::ZERO);
        assert_eq!(w.states(), vec![(Some(false), 0)]);
        w.observe(&[Some(true)], Instant::ZERO);
        w.observe(&[Some(false)], Instant::ZERO);
        assert_eq!(w.states(), vec![(Some(false), 1)]);
    }
}
