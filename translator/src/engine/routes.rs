//! Which collector a report goes to: by key (hash or destination address), by Append list, by sketch;
//! the list and sketch tables worked out when the collectors are (re)configured.

use dta_protocol::hash::key_checksum;

use super::state::Engine;
use crate::config::KeyRouting;

impl Engine {
    /// Works out [`sketch_routes`](Self::sketch_routes) and [`append_routes`](Self::append_routes) for
    /// the collectors as they are.
    pub(super) fn work_out_routes(&mut self) {
        self.sketch_routes = (0..=u8::MAX)
            .map(|id| self.route_index(u32::from(id), false))
            .collect();
        let mut ids: Vec<u32> = self
            .collectors
            .iter()
            .flat_map(|c| c.regions.append.iter().map(|r| r.id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        self.append_routes = ids
            .into_iter()
            .filter_map(|id| self.route_index(id, true).map(|(i, k)| (id, i, k)))
            .collect();
    }

    /// Where Append list `id` is: what `route_index(id, true)` finds, from the table.
    #[inline]
    pub(super) fn route_list(&self, id: u32) -> Option<(usize, usize)> {
        let routes = &self.append_routes;
        let at = routes.binary_search_by_key(&id, |r| r.0).ok()?;
        routes.get(at).map(|&(_, i, k)| (i, k))
    }

    // Inlined: with one collector (the common case) it is a length test.
    #[inline]
    pub(super) fn route_key(&self, key: u32, dst_ip: [u8; 4]) -> Option<usize> {
        self.route(|| key_checksum(key), dst_ip)
    }

    /// The collector of a key whose checksum `checksum` gives (called only when more than one collector
    /// is routed by key hash, so one collector, the common case, costs no hash here).
    pub(super) fn route(&self, checksum: impl FnOnce() -> u32, dst_ip: [u8; 4]) -> Option<usize> {
        match self.cfg.routing.keys {
            KeyRouting::KeyHash if self.collectors.len() == 1 => Some(0),
            KeyRouting::KeyHash => Some(checksum() as usize % self.collectors.len()),
            KeyRouting::DestinationIp => self.collectors.iter().position(|c| c.ip == dst_ip),
        }
    }

    /// The first collector with Append list (`append`) or sketch `id`, and where the region is in that
    /// collector's list of its kind.
    #[inline]
    pub(super) fn route_index(&self, id: u32, append: bool) -> Option<(usize, usize)> {
        self.collectors.iter().enumerate().find_map(|(i, c)| {
            if append {
                c.regions.append_index(id)
            } else {
                c.regions.sketch_index(id)
            }
            .map(|k| (i, k))
        })
    }
}
