//! Which responder QP serves each translator QP, and which control connection holds it.
//!
//! Every hello used to open QPs that nothing closed but a later hello naming the same translator QP:
//! hellos claiming 40 addresses opened 280,000 QPs (RSS 15 → 257 MiB), and a translator that went away
//! left its QPs behind for good. Here every QP belongs to the lease of the connection whose hello opened
//! it; when that connection ends the lease has a grace period to come back (a new hello from the same
//! translator QPs moves them to the new lease), after which its QPs are closed and counted. A hello is
//! refused, with its reason and a count, when it names more QPs than one translator may hold or would take
//! the collector past its total.
//!
//! A translator is known by its address, GID and QPNs, so two translators configured alike look like one.
//! A hello naming translator QPs that another *live* connection holds is therefore refused (with the
//! holder's peer address, logged and counted): it is either a second translator claiming a first one's
//! identity, or a restart whose old connection the collector has not yet seen end (it is let in when that
//! connection ends: closed, or silent past the idle deadline). QPs whose connection has ended (in grace)
//! are the translator's to take back: that is a restart, and its hello replaces them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dta_protocol::control::{Hello, RequesterQp, ResponderQp};

/// Opens the collector's side of a translator's QPs: the backend-specific part of a handshake.
pub trait QpOpener: Send + Sync {
    /// Creates one responder QP connected to translator QP `peer` of `hello`; returns its QPN.
    fn open_qp(&self, hello: &Hello, peer: &RequesterQp) -> Result<u32, String>;
    /// Closes a QP that [`open_qp`](Self::open_qp) created.
    fn close_qp(&self, qpn: u32);
}

/// A control connection's claim on the QPs its hellos opened.
pub type LeaseId = u64;

/// A translator QP as the collector tells peers apart: its address, its GID and its QPN. Every
/// translator numbers its QPs from the same default base, so the QPN alone does not name a peer.
type PeerKey = ([u8; 4], [u8; 16], u32);

/// A translator as the holders of single-writer regions tell them apart: its address and GID (all its
/// QPs).
pub type Holder = ([u8; 4], [u8; 16]);

/// A region that one translator writes at a time, because the state its writes continue lives in that
/// translator: an Append list's head, a sketch's merged columns (each translator merging its own
/// reporters would write whole columns over the other's). Region ids are per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SingleWriter {
    /// Append list `id`.
    Append(u32),
    /// Sketch-Merge sketch `id`.
    Sketch(u32),
}

/// How many QPs the collector opens, and how long a departed translator's QPs wait for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpLimits {
    /// QPs one hello may name (a translator names one per worker; a DART reporter one).
    pub per_hello: usize,
    /// QPs open at once, for every translator together.
    pub total: usize,
    /// How long the QPs of a closed control connection stay open for their translator to come back.
    pub grace: Duration,
}

impl Default for QpLimits {
    fn default() -> Self {
        QpLimits {
            // A translator has at most 64 workers; room for four times that.
            per_hello: 256,
            // Under 1 KiB of responder state each: a few MiB at most.
            total: 4096,
            // Long enough for a translator restart or a control reconnection with backoff.
            grace: Duration::from_secs(60),
        }
    }
}

/// Counters of the QP table, read by the collector's metrics.
#[derive(Debug, Default)]
pub struct QpStats {
    /// QPs open now.
    pub open: AtomicU64,
    /// QPs closed because the connection holding them ended and its translator did not come back.
    pub reclaimed: AtomicU64,
    /// Hellos refused for naming more QPs than [`QpLimits::per_hello`].
    pub refused_per_hello: AtomicU64,
    /// Hellos refused because they would take the collector past [`QpLimits::total`].
    pub refused_total: AtomicU64,
    /// Append lists left out of a welcome because another translator holds them (one per list per
    /// welcome).
    pub append_lists_withheld: AtomicU64,
    /// Hellos refused because another live control connection holds their translator QPs (a second
    /// translator with the same address and QPNs).
    pub refused_in_use: AtomicU64,
    /// Sketches left out of a welcome because another translator merges them (one per sketch per
    /// welcome).
    pub sketches_withheld: AtomicU64,
}

/// A hello's translator QP that another live connection holds: why [`QpTable::in_use`] refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InUse {
    /// The translator QP.
    pub qpn: u32,
    /// The lease of the live connection that holds it.
    pub lease: LeaseId,
    /// That connection's peer, when the server named it ([`QpTable::connected`]).
    pub peer: Option<SocketAddr>,
}

struct Held {
    qpn: u32,
    lease: LeaseId,
}

/// The QP table: one per control server, behind its mutex.
#[derive(Default)]
pub struct QpTable {
    by_peer: HashMap<PeerKey, Held>,
    /// Leases whose connection ended, with the moment their QPs go.
    ending: HashMap<LeaseId, Instant>,
    /// Each single-writer region (Append list, sketch) to the one translator that writes it: a second
    /// translator's welcome leaves the region out. Freed when its holder's last QP is reclaimed.
    holders: HashMap<SingleWriter, Holder>,
    /// The peer of each live connection, to name the holder when a hello is refused for its QPs.
    peers: HashMap<LeaseId, SocketAddr>,
}

impl QpTable {
    /// QPs open now.
    pub fn len(&self) -> usize {
        self.by_peer.len()
    }

    /// True when no QP is open.
    pub fn is_empty(&self) -> bool {
        self.by_peer.is_empty()
    }

    /// Connection `lease` from `peer` is being served (until [`end_lease`](Self::end_lease)).
    pub fn connected(&mut self, lease: LeaseId, peer: SocketAddr) {
        self.peers.insert(lease, peer);
    }

    /// The first translator QP of `hello` held by a connection other than `lease` that has not ended:
    /// such a hello must not take it (see the module docs). QPs of an ended connection (in grace) and
    /// those `lease` holds itself (a re-establishment on the same connection) are free to replace.
    pub fn in_use(&self, hello: &Hello, lease: LeaseId) -> Option<InUse> {
        hello.qps.iter().find_map(|q| {
            let held = self.by_peer.get(&(hello.ip, hello.gid, q.qpn))?;
            (held.lease != lease && !self.ending.contains_key(&held.lease)).then(|| InUse {
                qpn: q.qpn,
                lease: held.lease,
                peer: self.peers.get(&held.lease).copied(),
            })
        })
    }

    /// Opens one QP per translator QP of `hello` for `lease`, in order. A translator QP that already has
    /// one (re-establishment, or the translator back after a restart) gets a new one in its place, and
    /// the new lease holds it. (The control server first refuses a hello whose QPs another live
    /// connection holds: [`in_use`](Self::in_use).)
    pub fn open(
        &mut self,
        opener: &dyn QpOpener,
        hello: &Hello,
        lease: LeaseId,
        limits: &QpLimits,
        stats: &QpStats,
    ) -> Result<Vec<ResponderQp>, String> {
        let n = hello.qps.len();
        if n > limits.per_hello {
            stats.refused_per_hello.fetch_add(1, Ordering::Relaxed);
            return Err(format!(
                "hello names {n} QPs; this collector opens at most {} per hello",
                limits.per_hello
            ));
        }
        let key = |q: &RequesterQp| (hello.ip, hello.gid, q.qpn);
        let mut keys: Vec<PeerKey> = hello.qps.iter().map(key).collect();
        keys.sort_unstable();
        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("hello names translator QP {:#x} twice", w[0].2));
        }
        // Replaced QPs make room for their successors.
        let replaced = keys.iter().filter(|k| self.by_peer.contains_key(k)).count();
        let after = self.by_peer.len() - replaced + n;
        if after > limits.total {
            stats.refused_total.fetch_add(1, Ordering::Relaxed);
            return Err(format!(
                "the collector has {} QPs open and this hello asks for {} more; it opens at most {} in \
                 all (QPs of translators gone for {:?} are reclaimed)",
                self.by_peer.len(),
                n - replaced,
                limits.total,
                limits.grace
            ));
        }
        let mut out = Vec::with_capacity(n);
        for q in &hello.qps {
            if let Some(old) = self.by_peer.remove(&key(q)) {
                opener.close_qp(old.qpn);
            }
            match opener.open_qp(hello, q) {
                Ok(qpn) => {
                    self.by_peer.insert(key(q), Held { qpn, lease });
                    out.push(ResponderQp {
                        qpn,
                        peer_qpn: q.qpn,
                    });
                }
                // The QPs opened so far stay with the lease, which the refusal ends.
                Err(e) => {
                    stats
                        .open
                        .store(self.by_peer.len() as u64, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        stats
            .open
            .store(self.by_peer.len() as u64, Ordering::Relaxed);
        Ok(out)
    }

    /// Gives each Append list of `lists` that no other translator holds to `hello`'s translator (a list
    /// it holds already stays its own: a restart or a reconnection). Returns the lists held by others,
    /// with their holder, for the welcome to leave out.
    pub fn take_append_lists(&mut self, hello: &Hello, lists: &[u32]) -> Vec<(u32, Holder)> {
        let regions: Vec<SingleWriter> = lists.iter().map(|&id| SingleWriter::Append(id)).collect();
        self.take_regions(hello, &regions)
            .into_iter()
            .filter_map(|(r, h)| match r {
                SingleWriter::Append(id) => Some((id, h)),
                SingleWriter::Sketch(_) => None,
            })
            .collect()
    }

    /// Gives each region of `regions` that no other translator holds to `hello`'s translator (one it
    /// holds already stays its own: a restart or a reconnection). Returns the regions held by others,
    /// with their holder, for the welcome to leave out.
    pub fn take_regions(
        &mut self,
        hello: &Hello,
        regions: &[SingleWriter],
    ) -> Vec<(SingleWriter, Holder)> {
        let me = (hello.ip, hello.gid);
        let mut withheld = Vec::new();
        for &r in regions {
            // A hello without QPs cannot write: it takes nothing (nothing would ever free it).
            let holder = match self.holders.get(&r) {
                Some(&h) => h,
                None if hello.qps.is_empty() => continue,
                None => *self.holders.entry(r).or_insert(me),
            };
            if holder != me {
                withheld.push((r, holder));
            }
        }
        withheld
    }

    /// The connection of `lease` ended at `now`: its QPs go at `now + grace` unless their translator
    /// says hello again first.
    pub fn end_lease(&mut self, lease: LeaseId, now: Instant, grace: Duration) {
        self.peers.remove(&lease);
        if self.by_peer.values().any(|h| h.lease == lease) {
            self.ending.insert(lease, now + grace);
        }
    }

    /// Closes the QPs of every lease whose grace ended by `now`; returns how many it closed.
    pub fn reap(&mut self, opener: &dyn QpOpener, now: Instant, stats: &QpStats) -> usize {
        if self.ending.is_empty() {
            return 0;
        }
        let due: Vec<LeaseId> = self
            .ending
            .iter()
            .filter(|(_, &at)| at <= now)
            .map(|(&l, _)| l)
            .collect();
        if due.is_empty() {
            return 0;
        }
        let mut closed = 0;
        self.by_peer.retain(|_, h| {
            if due.contains(&h.lease) {
                opener.close_qp(h.qpn);
                closed += 1;
                false
            } else {
                true
            }
        });
        for l in due {
            self.ending.remove(&l);
        }
        // A translator with no QP left is gone: its Append lists and sketches are free for the next hello.
        let live: std::collections::HashSet<Holder> =
            self.by_peer.keys().map(|k| (k.0, k.1)).collect();
        self.holders.retain(|_, h| live.contains(h));
        stats.reclaimed.fetch_add(closed as u64, Ordering::Relaxed);
        stats
            .open
            .store(self.by_peer.len() as u64, Ordering::Relaxed);
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::control::CONTROL_VERSION;
    use std::sync::Mutex;

    /// Hands out QPNs from 0x100 and remembers which are open.
    #[derive(Default)]
    struct Fake {
        next: Mutex<u32>,
        open: Mutex<Vec<u32>>,
    }

    impl QpOpener for Fake {
        fn open_qp(&self, _: &Hello, _: &RequesterQp) -> Result<u32, String> {
            let mut n = self.next.lock().unwrap();
            let qpn = 0x100 + *n;
            *n += 1;
            self.open.lock().unwrap().push(qpn);
            Ok(qpn)
        }
        fn close_qp(&self, qpn: u32) {
            self.open.lock().unwrap().retain(|&q| q != qpn);
        }
    }

    fn hello(ip: u8, qpns: std::ops::Range<u32>) -> Hello {
        Hello {
            version: CONTROL_VERSION,
            token: "t".into(),
            mac: [2, 0, 0, 0, 0, ip],
            ip: [198, 18, 0, ip],
            gid: [0; 16],
            qps: qpns.map(|qpn| RequesterQp { qpn, start_psn: 1 }).collect(),
        }
    }

    #[test]
    fn caps_refuse_with_reasons_and_replacement_makes_room() {
        let (fake, stats) = (Fake::default(), QpStats::default());
        let limits = QpLimits {
            per_hello: 4,
            total: 6,
            grace: Duration::from_secs(1),
        };
        let mut t = QpTable::default();
        let e = t
            .open(&fake, &hello(1, 0..5), 1, &limits, &stats)
            .unwrap_err();
        assert_eq!(
            e,
            "hello names 5 QPs; this collector opens at most 4 per hello"
        );
        t.open(&fake, &hello(1, 0..4), 1, &limits, &stats).unwrap();
        let e = t
            .open(&fake, &hello(2, 0..3), 2, &limits, &stats)
            .unwrap_err();
        assert_eq!(
            e,
            "the collector has 4 QPs open and this hello asks for 3 more; it opens at most 6 in all \
             (QPs of translators gone for 1s are reclaimed)"
        );
        // The same translator again replaces its four: still four open.
        t.open(&fake, &hello(1, 0..4), 3, &limits, &stats).unwrap();
        assert_eq!((t.len(), fake.open.lock().unwrap().len()), (4, 4));
        t.open(&fake, &hello(2, 0..2), 4, &limits, &stats).unwrap();
        let mut dup = hello(2, 0..1);
        dup.qps.push(dup.qps[0]);
        assert_eq!(
            t.open(&fake, &dup, 4, &limits, &stats).unwrap_err(),
            "hello names translator QP 0x0 twice"
        );
        assert_eq!(stats.refused_per_hello.load(Ordering::Relaxed), 1);
        assert_eq!(stats.refused_total.load(Ordering::Relaxed), 1);
        assert_eq!(stats.open.load(Ordering::Relaxed), 6);
    }

    /// Issue 26 item 4: an Append list has one writer. The first translator to say hello takes it, a
    /// second is told it is withheld (with its holder), the holder keeps it across a new connection, and
    /// the list is free once the holder's QPs are reclaimed.
    #[test]
    fn append_lists_have_one_holder_until_its_qps_are_reclaimed() {
        let (fake, stats) = (Fake::default(), QpStats::default());
        let (limits, grace) = (QpLimits::default(), Duration::from_secs(60));
        let mut t = QpTable::default();
        let (one, two) = (hello(1, 0..2), hello(2, 0..2));
        let holder_one = ([198, 18, 0, 1], [0; 16]);
        t.open(&fake, &one, 1, &limits, &stats).unwrap();
        assert_eq!(t.take_append_lists(&one, &[3, 9]), []);
        t.open(&fake, &two, 2, &limits, &stats).unwrap();
        assert_eq!(
            t.take_append_lists(&two, &[3, 9]),
            [(3, holder_one), (9, holder_one)]
        );
        // A hello without QPs takes nothing.
        let mut idle = hello(4, 0..0);
        idle.qps.clear();
        assert_eq!(t.take_append_lists(&idle, &[5]), []);
        assert_eq!(t.take_append_lists(&two, &[5]), []);
        // The holder on a new connection (a restart) keeps its lists.
        t.end_lease(1, Instant::now(), grace);
        t.open(&fake, &one, 3, &limits, &stats).unwrap();
        assert_eq!(t.take_append_lists(&one, &[3, 9]), []);
        // Gone for its grace period: its QPs are reclaimed and its lists go to the next hello.
        let t0 = Instant::now();
        t.end_lease(3, t0, grace);
        assert_eq!(t.reap(&fake, t0 + grace, &stats), 2);
        assert_eq!(t.take_append_lists(&two, &[3, 9]), []);
        assert_eq!(
            t.take_append_lists(&one, &[3, 9, 5]),
            [
                (3, ([198, 18, 0, 2], [0; 16])),
                (9, ([198, 18, 0, 2], [0; 16])),
                (5, ([198, 18, 0, 2], [0; 16]))
            ]
        );
    }

    /// Issue 26 item 4: QPs held by another live connection are in use (a twin); by the same lease (a
    /// re-establishment) or by an ended one (a restart, in grace) they are not.
    #[test]
    fn qps_of_a_live_connection_are_in_use_for_every_other() {
        let (fake, stats) = (Fake::default(), QpStats::default());
        let limits = QpLimits::default();
        let mut t = QpTable::default();
        let peer: SocketAddr = "10.0.0.9:4000".parse().unwrap();
        t.connected(1, peer);
        let me = hello(1, 0..2);
        t.open(&fake, &me, 1, &limits, &stats).unwrap();
        assert_eq!(t.in_use(&me, 1), None);
        let twin = Some(InUse {
            qpn: 0,
            lease: 1,
            peer: Some(peer),
        });
        assert_eq!(t.in_use(&me, 2), twin);
        // Overlapping in one QP only: still in use, that QP named.
        let overlap = hello(1, 1..3);
        assert_eq!(t.in_use(&overlap, 2).map(|u| u.qpn), Some(1));
        // Another address with the same QPNs is another translator.
        assert_eq!(t.in_use(&hello(2, 0..2), 2), None);
        t.end_lease(1, Instant::now(), Duration::from_secs(60));
        assert_eq!(t.in_use(&me, 2), None);
    }

    #[test]
    fn an_ended_lease_is_reclaimed_after_its_grace_unless_its_translator_returns() {
        let (fake, stats) = (Fake::default(), QpStats::default());
        let limits = QpLimits::default();
        let grace = Duration::from_secs(60);
        let mut t = QpTable::default();
        let a = t.open(&fake, &hello(1, 0..2), 1, &limits, &stats).unwrap();
        t.open(&fake, &hello(2, 0..2), 2, &limits, &stats).unwrap();
        let t0 = Instant::now();
        t.end_lease(1, t0, grace);
        t.end_lease(2, t0, grace);
        // Translator 2 comes back on a new connection: its QPs move to lease 3.
        t.open(&fake, &hello(2, 0..2), 3, &limits, &stats).unwrap();
        assert_eq!(t.reap(&fake, t0 + grace / 2, &stats), 0);
        assert_eq!(t.reap(&fake, t0 + grace, &stats), 2);
        let open = fake.open.lock().unwrap().clone();
        assert!(
            !open.contains(&a[0].qpn) && !open.contains(&a[1].qpn) && open.len() == 2,
            "{open:x?}"
        );
        assert_eq!(t.len(), 2);
        assert_eq!(stats.reclaimed.load(Ordering::Relaxed), 2);
        assert_eq!(t.reap(&fake, t0 + grace * 2, &stats), 0);
    }
}
