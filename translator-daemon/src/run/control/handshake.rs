//! The hello and its welcome: the hello we send for a connection's start PSN, the answer read and checked
//! against our QPs, and a new connection that carries them.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use dta_protocol::control::{
    CollectorMessage, Hello, RequesterQp, TranslatorMessage, Welcome, CONTROL_VERSION,
};

use super::answer::{read_answer, AnswerLimits};
use super::lease::Lease;
use super::ControlLink;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Distance between the start PSNs of consecutive connections.
const PSN_STEP: u32 = 0x1000;

impl ControlLink {
    pub(super) fn psn(&self, generation: u32) -> u32 {
        self.base_psn
            .wrapping_add(generation.wrapping_mul(PSN_STEP))
            & 0xFF_FFFF
    }

    fn hello(&self, start_psn: u32) -> Hello {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&self.ip);
        Hello {
            version: CONTROL_VERSION,
            token: self.token.clone(),
            mac: self.mac,
            ip: self.ip,
            gid,
            qps: self
                .qpns
                .iter()
                .map(|&qpn| RequesterQp { qpn, start_psn })
                .collect(),
        }
    }

    /// Sends a hello on `stream` and reads the answer.
    pub(super) fn handshake(
        &self,
        stream: &mut TcpStream,
        start_psn: u32,
        limits: AnswerLimits,
    ) -> Result<Welcome> {
        let mut line = serde_json::to_string(&TranslatorMessage::Hello(self.hello(start_psn)))?;
        line.push('\n');
        stream.write_all(line.as_bytes()).context("sending hello")?;
        let answer = read_answer(stream, limits)?;
        let w = match serde_json::from_str::<CollectorMessage>(&answer)
            .with_context(|| format!("malformed answer {:?}", answer.trim_end()))?
        {
            CollectorMessage::Welcome(w) => w,
            CollectorMessage::Refusal(r) => bail!("the collector refused us: {}", r.error),
        };
        if w.qps.len() != self.qpns.len()
            || w.qps
                .iter()
                .zip(&self.qpns)
                .any(|(q, &ours)| q.peer_qpn != ours)
        {
            bail!(
                "the collector answered {} QPs that do not match our {} QPs",
                w.qps.len(),
                self.qpns.len()
            );
        }
        Ok(w)
    }

    /// Connects and says hello; the welcome comes with its connection, the lease on its QPs.
    pub(super) fn connect(&self, start_psn: u32) -> Result<(Welcome, Lease)> {
        self.connect_with(start_psn, AnswerLimits::default())
    }

    pub(super) fn connect_with(
        &self,
        start_psn: u32,
        limits: AnswerLimits,
    ) -> Result<(Welcome, Lease)> {
        let mut stream = TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT)
            .with_context(|| format!("connecting to {}", self.addr))?;
        stream.set_nodelay(true)?;
        let w = self.handshake(&mut stream, start_psn, limits)?;
        Ok((w, Lease::new(stream)))
    }
}
