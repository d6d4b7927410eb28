//! The responder's QPs by QPN: a directly indexed array for the QPNs the allocator hands out first, a
//! hash map for the rest.
//!
//! Every request looks its QP up, so the lookup sits on the per-frame path. The allocator counts up from
//! [`FIRST_QPN`], so in practice every QP lands in the array and a lookup is one bounds check and one
//! load; `open_qp` may still name any 24-bit QPN, which the map keeps.

use std::collections::HashMap;

use super::qp::Qp;

/// First QPN handed out, also after the counter wraps; QPNs 0 and 1 are special in InfiniBand.
pub const FIRST_QPN: u32 = 0x100;

/// QPNs `FIRST_QPN..FIRST_QPN + DIRECT` live in the array. 4096 QPs is far beyond what one collector
/// serves (one per translator worker); the array grows only up to the highest QPN in use.
const DIRECT: u32 = 4096;

#[derive(Debug, Default)]
pub(crate) struct QpTable {
    direct: Vec<Option<Qp>>,
    others: HashMap<u32, Qp>,
    /// QPs open at or above `FIRST_QPN`, which is what the allocator may hand out.
    usable: usize,
}

/// The array index of `qpn`, if it has one.
#[inline]
fn index(qpn: u32) -> Option<usize> {
    match qpn.checked_sub(FIRST_QPN) {
        Some(i) if i < DIRECT => Some(i as usize),
        _ => None,
    }
}

impl QpTable {
    #[inline]
    pub fn get(&self, qpn: u32) -> Option<&Qp> {
        match index(qpn) {
            Some(i) => self.direct.get(i).and_then(Option::as_ref),
            None => self.others.get(&qpn),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, qpn: u32) -> Option<&mut Qp> {
        match index(qpn) {
            Some(i) => self.direct.get_mut(i).and_then(Option::as_mut),
            None => self.others.get_mut(&qpn),
        }
    }

    pub fn contains(&self, qpn: u32) -> bool {
        self.get(qpn).is_some()
    }

    /// Opens `qp` as `qpn`, replacing any QP of that number.
    pub fn insert(&mut self, qpn: u32, qp: Qp) {
        let old = match index(qpn) {
            Some(i) => {
                if self.direct.len() <= i {
                    self.direct.resize_with(i + 1, || None);
                }
                self.direct[i].replace(qp)
            }
            None => self.others.insert(qpn, qp),
        };
        if old.is_none() && qpn >= FIRST_QPN {
            self.usable += 1;
        }
    }

    pub fn remove(&mut self, qpn: u32) {
        let old = match index(qpn) {
            Some(i) => self.direct.get_mut(i).and_then(Option::take),
            None => self.others.remove(&qpn),
        };
        if old.is_some() && qpn >= FIRST_QPN {
            self.usable -= 1;
        }
    }

    /// Open QPs numbered `FIRST_QPN` or above.
    pub fn usable(&self) -> usize {
        self.usable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qp(peer_qpn: u32) -> Qp {
        Qp::new([10, 0, 0, 1], peer_qpn, 0, 1)
    }

    #[test]
    fn array_and_map_behave_as_one_map() {
        let mut t = QpTable::default();
        let qpns = [
            0,
            1,
            FIRST_QPN,
            FIRST_QPN + DIRECT - 1,
            FIRST_QPN + DIRECT,
            0xFF_FFFF,
        ];
        for (k, &q) in qpns.iter().enumerate() {
            assert!(!t.contains(q));
            t.insert(q, qp(k as u32));
        }
        // 0 and 1 are below FIRST_QPN: not counted as usable.
        assert_eq!(t.usable(), 4);
        for (k, &q) in qpns.iter().enumerate() {
            assert_eq!(t.get(q).map(|q| q.status.peer_qpn), Some(k as u32));
        }
        // Re-opening replaces without counting twice.
        t.insert(FIRST_QPN, qp(99));
        assert_eq!(t.usable(), 4);
        assert_eq!(t.get_mut(FIRST_QPN).map(|q| q.status.peer_qpn), Some(99));
        for &q in &qpns {
            t.remove(q);
            assert!(!t.contains(q));
        }
        assert_eq!(t.usable(), 0);
        // Removing what is not there changes nothing.
        t.remove(FIRST_QPN + 7);
        assert_eq!(t.usable(), 0);
        assert!(t.get(FIRST_QPN + 5000).is_none());
    }
}
