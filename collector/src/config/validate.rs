//! The checks a file passes before the collector uses it: addresses, limits, the regions and INT.

use std::collections::HashSet;

use dta_protocol::int::mapping::{EVENT_LEN, HOP_RECORD_LEN};
use dta_protocol::layout::Geometry;

use super::{Config, IntSection, MAX_DEST_RD_ATOMIC};
use crate::error::{Error, Result};

impl Config {
    pub(super) fn validate(&self) -> Result<()> {
        self.faults.validate().map_err(Error::Config)?;
        self.postcarding.universe()?;
        if !(256..=4096).contains(&self.collector.path_mtu)
            || !self.collector.path_mtu.is_power_of_two()
        {
            return Err(Error::Config(format!(
                "path_mtu {} is not one of 256, 512, 1024, 2048, 4096",
                self.collector.path_mtu
            )));
        }
        // Every QP keeps this many atomic responses for replay: 2^32 - 1 of them was accepted here and
        // aborted the collector allocating 64 GiB at the first hello. Soft-RoCE takes at most 128
        // (RXE_MAX_QP_RD_ATOM), ConnectX NICs 16; 0 would refuse the translator's FETCH_ADDs.
        let rd = self.collector.max_dest_rd_atomic;
        if !(1..=MAX_DEST_RD_ATOMIC).contains(&rd) {
            return Err(Error::Config(format!(
                "[collector] max_dest_rd_atomic = {rd} is not within 1..={MAX_DEST_RD_ATOMIC} (Soft-RoCE \
                 takes at most 128 atomics in flight per QP, ConnectX NICs 16)"
            )));
        }
        if let Some(vid) = self.collector.vlan.filter(|v| !(1..=4094).contains(v)) {
            return Err(Error::Config(format!(
                "vlan {vid} is not a VLAN id within 1..=4094 (leave it out for untagged)"
            )));
        }
        let mut seen = HashSet::new();
        for r in &self.regions {
            let kind = r.geometry.kind();
            if !kind.has_ids() && r.id != 0 {
                return Err(Error::Config(format!(
                    "{kind} region has id {}; only append and sketch regions take ids",
                    r.id
                )));
            }
            if let Some(n) = r.redundancy {
                // Which kinds take one is the region-kind table's `redundancy` column.
                let Some(n_max) = r.geometry.n_max() else {
                    return Err(Error::Config(format!(
                        "{kind} region has a redundancy; only key_write, key_increment and \
                         postcarding regions take one"
                    )));
                };
                if !(1..=n_max).contains(&n) {
                    return Err(Error::Config(format!(
                        "{kind} region: redundancy {n} is not within 1..={n_max} (its n_max)"
                    )));
                }
            }
            if matches!(r.geometry, Geometry::Sketch(_)) && r.id > 255 {
                return Err(Error::Config(format!(
                    "sketch id {} does not fit the report's 8-bit sketch_id",
                    r.id
                )));
            }
            if !seen.insert((kind, r.id)) {
                return Err(Error::Config(if kind.has_ids() {
                    format!("two {kind} regions with id {}", r.id)
                } else {
                    format!("more than one {kind} region")
                }));
            }
        }
        if let Some(int) = &self.int {
            self.validate_int(int)?;
        }
        if let Some(export) = &self.export {
            export.validate()?;
        }
        Ok(())
    }

    /// The `[int]` section against the regions: the lists it names hold 16-byte events, a Key-Write
    /// entry fits a hop record, and paths and hops have a universe and a length to decode.
    fn validate_int(&self, int: &IntSection) -> Result<()> {
        let lists = [
            ("drop_list", &int.drop_list),
            ("queue_list", &int.queue_list),
        ];
        for (name, id) in lists
            .iter()
            .flat_map(|(name, l)| l.ids().iter().map(move |&id| (*name, id)))
        {
            let g = self.regions.iter().find_map(|r| match r.geometry {
                Geometry::Append(g) if r.id == id => Some(g),
                _ => None,
            });
            match g {
                None => {
                    return Err(Error::Config(format!(
                        "[int] {name} = {id}: no append region with id {id}"
                    )))
                }
                Some(g) if g.entry_size() as usize != EVENT_LEN => {
                    return Err(Error::Config(format!(
                        "[int] {name} = {id}: the list's entry_size is {}, INT events are {EVENT_LEN} bytes",
                        g.entry_size()
                    )))
                }
                Some(_) => {}
            }
        }
        let mut ids: Vec<u32> = lists.iter().flat_map(|(_, l)| l.ids().to_vec()).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::Config(format!(
                "[int] list {} is named twice in drop_list and queue_list: drop and queue events \
                 (and each translator worker's) need lists of their own",
                w[0]
            )));
        }
        for r in &self.regions {
            match r.geometry {
                Geometry::KeyWrite(g) if g.data_len() < HOP_RECORD_LEN => {
                    return Err(Error::Config(format!(
                        "[int]: the key_write region's entries hold {} data bytes, fewer than a \
                         {HOP_RECORD_LEN}-byte hop record (entry_size 16 or 32 fits one)",
                        g.data_len()
                    )))
                }
                _ => {}
            }
        }
        if int.hops == Some(0) {
            return Err(Error::Config(
                "[int] hops = 0: a flow has at least one hop".into(),
            ));
        }
        let nodes = match int.node_universe()? {
            Some(n) => n,
            None => self.postcarding.universe()?,
        };
        let has_paths = self
            .regions
            .iter()
            .any(|r| matches!(r.geometry, Geometry::Postcarding(_)));
        if has_paths && nodes.is_empty() {
            return Err(Error::Config(
                "[int]: no node ids to decode paths with: set [int] nodes or [postcarding] ranges"
                    .into(),
            ));
        }
        Ok(())
    }
}
