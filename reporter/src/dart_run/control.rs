//! The control channel: our hello, the collector's welcome checked for a Key-Write region, and the
//! keep-alives that hold our QP.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use dta_protocol::control::{
    CollectorMessage, Hello, KeepAlive, RequesterQp, TranslatorMessage, Welcome, CONTROL_VERSION,
    KEEPALIVE_EVERY,
};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// The hello of one requester QP, with our GID the IPv4-mapped `::ffff:a.b.c.d`.
pub fn hello(token: &str, mac: [u8; 6], ip: Ipv4Addr, qpn: u32, start_psn: u32) -> Hello {
    Hello {
        version: CONTROL_VERSION,
        token: token.to_string(),
        mac,
        ip: ip.octets(),
        gid: ip.to_ipv6_mapped().octets(),
        qps: vec![RequesterQp { qpn, start_psn }],
    }
}

/// Says hello on the control channel and returns the welcome (a refusal is an error with its reason) with
/// its connection: the collector keeps our QP while the connection lives (keep-alives hold it, see
/// [`keep_alive`]) and reclaims it a grace period after it closes.
pub(super) fn handshake(addr: SocketAddr, hello: &Hello) -> Result<(Welcome, TcpStream)> {
    let mut stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
        .with_context(|| format!("connecting to the collector's control server {addr}"))?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    let mut line = serde_json::to_string(&TranslatorMessage::Hello(hello.clone()))?;
    line.push('\n');
    stream
        .write_all(line.as_bytes())
        .with_context(|| format!("sending hello to {addr}"))?;
    let mut answer = String::new();
    let n = BufReader::new(&stream)
        .read_line(&mut answer)
        .with_context(|| format!("reading the collector's answer from {addr}"))?;
    if n == 0 {
        bail!("the collector at {addr} closed the control connection without answering");
    }
    match serde_json::from_str::<CollectorMessage>(&answer)
        .with_context(|| format!("malformed answer from {addr}: {:?}", answer.trim_end()))?
    {
        CollectorMessage::Welcome(w) => Ok((w, stream)),
        CollectorMessage::Refusal(r) => bail!("the collector at {addr} refused us: {}", r.error),
    }
}

/// Sends a keep-alive on the control connection when one is due. Best effort: a collector that is gone
/// shows in the QP's own errors.
pub(super) fn keep_alive(control: &mut TcpStream, last: &mut std::time::Instant) {
    if last.elapsed() < KEEPALIVE_EVERY {
        return;
    }
    *last = std::time::Instant::now();
    let ka = TranslatorMessage::KeepAlive(KeepAlive {
        version: CONTROL_VERSION,
    });
    if let Ok(mut line) = serde_json::to_string(&ka) {
        line.push('\n');
        let _ = control.write_all(line.as_bytes());
    }
}

/// The welcome's Key-Write geometry, after checking that its QP is connected to ours.
pub(super) fn check_welcome(w: &Welcome, qpn: u32) -> Result<KeyWriteGeometry> {
    if w.version != CONTROL_VERSION {
        bail!(
            "the collector speaks control version {}, we speak {CONTROL_VERSION}",
            w.version
        );
    }
    match w.qps.as_slice() {
        [q] if q.peer_qpn == qpn => {}
        qps => bail!("the collector answered QPs {qps:?}, not one QP connected to our {qpn:#x}"),
    }
    w.regions
        .iter()
        .find_map(|r| match r.geometry {
            Geometry::KeyWrite(g) => Some(g),
            _ => None,
        })
        .context("the collector has no Key-Write region")
}
