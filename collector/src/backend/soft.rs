//! The software backend's side of the control channel: a hello opens QPs in the shared responder.

use std::sync::{Arc, Mutex};

use dta_protocol::control::{Hello, RequesterQp};

use crate::control::QpOpener;
use crate::responder::Responder;

/// Opens and closes QPs in the shared responder for the control server, which decides which to replace
/// and when to reclaim them ([`crate::control::QpTable`]).
pub struct SoftOpener {
    responder: Arc<Mutex<Responder>>,
}

impl SoftOpener {
    /// An opener on the shared responder.
    pub fn new(responder: Arc<Mutex<Responder>>) -> Self {
        SoftOpener { responder }
    }

    fn responder(&self) -> std::sync::MutexGuard<'_, Responder> {
        self.responder.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl QpOpener for SoftOpener {
    fn open_qp(&self, hello: &Hello, peer: &RequesterQp) -> Result<u32, String> {
        self.responder()
            .allocate_qp(hello.ip, peer.qpn, peer.start_psn)
            .ok_or_else(|| "the software responder has no free QPN left".into())
    }

    fn close_qp(&self, qpn: u32) {
        self.responder().close_qp(qpn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{QpLimits, QpStats, QpTable};
    use crate::responder::ResponderConfig;
    use dta_protocol::control::{ResponderQp, CONTROL_VERSION};

    /// The opener behind the control server's QP table, as a hello sees it.
    struct Table(SoftOpener, QpTable);

    impl Table {
        fn new(r: Arc<Mutex<Responder>>) -> Self {
            Table(SoftOpener::new(r), QpTable::default())
        }
        fn open(&mut self, h: &Hello) -> Result<Vec<ResponderQp>, String> {
            self.1
                .open(&self.0, h, 1, &QpLimits::default(), &QpStats::default())
        }
    }

    #[test]
    fn hello_opens_and_reopens_qps() {
        let r = Arc::new(Mutex::new(Responder::new(
            ResponderConfig::default(),
            vec![],
        )));
        let mut o = Table::new(r.clone());
        let hello = Hello {
            version: CONTROL_VERSION,
            token: String::new(),
            mac: [0; 6],
            ip: [0; 4],
            gid: [0; 16],
            qps: vec![RequesterQp {
                qpn: 0x11,
                start_psn: 7,
            }],
        };
        let first = o.open(&hello).unwrap();
        assert_eq!(
            first,
            [ResponderQp {
                qpn: 0x100,
                peer_qpn: 0x11
            }]
        );
        assert_eq!(r.lock().unwrap().qp(0x100).unwrap().expected_psn, 7);
        let again = o.open(&hello).unwrap();
        assert_eq!(
            again,
            [ResponderQp {
                qpn: 0x101,
                peer_qpn: 0x11
            }]
        );
        assert!(r.lock().unwrap().qp(0x100).is_none(), "old QP closed");
    }

    #[test]
    fn equal_qpns_from_two_addresses_are_two_peers() {
        let r = Arc::new(Mutex::new(Responder::new(
            ResponderConfig::default(),
            vec![],
        )));
        let mut o = Table::new(r.clone());
        let hello = |ip: [u8; 4], start_psn| Hello {
            version: CONTROL_VERSION,
            token: String::new(),
            mac: [0; 6],
            ip,
            gid: [0; 16],
            qps: vec![
                RequesterQp {
                    qpn: 0x100,
                    start_psn,
                },
                RequesterQp {
                    qpn: 0x101,
                    start_psn,
                },
            ],
        };
        let (a, b) = ([198, 18, 0, 1], [198, 18, 0, 3]);
        let qa: Vec<u32> = o
            .open(&hello(a, 1))
            .unwrap()
            .iter()
            .map(|q| q.qpn)
            .collect();
        let qb: Vec<u32> = o
            .open(&hello(b, 2))
            .unwrap()
            .iter()
            .map(|q| q.qpn)
            .collect();
        assert_eq!(
            (qa.as_slice(), qb.as_slice()),
            (&[0x100, 0x101][..], &[0x102, 0x103][..])
        );
        {
            let r = r.lock().unwrap();
            for (q, ip, psn) in [(0x100, a, 1), (0x101, a, 1), (0x102, b, 2), (0x103, b, 2)] {
                let s = r.qp(q).unwrap_or_else(|| panic!("QP {q:#x} closed"));
                assert_eq!((s.peer_ip, s.expected_psn), (ip, psn));
            }
        }
        // A's re-hello replaces A's two QPs and leaves B's alone.
        let qa2: Vec<u32> = o
            .open(&hello(a, 7))
            .unwrap()
            .iter()
            .map(|q| q.qpn)
            .collect();
        assert_eq!(qa2, [0x104, 0x105]);
        let r = r.lock().unwrap();
        assert!(r.qp(0x100).is_none() && r.qp(0x101).is_none());
        assert_eq!(r.qp(0x102).unwrap().expected_psn, 2);
        assert_eq!(r.qp(0x103).unwrap().peer_ip, b);
        assert_eq!(r.qp(0x104).unwrap().expected_psn, 7);
    }
}
