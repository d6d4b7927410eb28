//! The software backend's side of the control channel: a hello opens QPs in the shared responder.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dta_protocol::control::{Hello, ResponderQp};

use crate::control::QpOpener;
use crate::responder::Responder;

/// Opens responder QPs for translators; a hello naming a translator QPN again replaces its old QP.
pub struct SoftOpener {
    responder: Arc<Mutex<Responder>>,
    by_peer: Mutex<HashMap<u32, u32>>,
}

impl SoftOpener {
    /// An opener on the shared responder.
    pub fn new(responder: Arc<Mutex<Responder>>) -> Self {
        SoftOpener {
            responder,
            by_peer: Mutex::new(HashMap::new()),
        }
    }
}

impl QpOpener for SoftOpener {
    fn open(&self, hello: &Hello) -> Result<Vec<ResponderQp>, String> {
        let mut r = self.responder.lock().unwrap_or_else(|e| e.into_inner());
        let mut by_peer = self.by_peer.lock().unwrap_or_else(|e| e.into_inner());
        hello
            .qps
            .iter()
            .map(|q| {
                if let Some(old) = by_peer.remove(&q.qpn) {
                    r.close_qp(old);
                }
                let qpn = r
                    .allocate_qp(hello.ip, q.qpn, q.start_psn)
                    .ok_or("the software responder has no free QPN left")?;
                by_peer.insert(q.qpn, qpn);
                Ok(ResponderQp {
                    qpn,
                    peer_qpn: q.qpn,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::responder::ResponderConfig;
    use dta_protocol::control::{RequesterQp, CONTROL_VERSION};

    #[test]
    fn hello_opens_and_reopens_qps() {
        let r = Arc::new(Mutex::new(Responder::new(
            ResponderConfig::default(),
            vec![],
        )));
        let o = SoftOpener::new(r.clone());
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
}
