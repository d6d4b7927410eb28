//! Crafting the requests of a case and reading the responses that come back.
//!
//! `dta-protocol`'s [`FrameRepr`](dta_protocol::roce::FrameRepr) only knows the opcodes dta sends, so the
//! conformance requests are assembled here byte by byte (BTH, RETH or AtomicETH, payload, pad) after
//! `dta-protocol`'s Ethernet/IPv4/UDP headers, and `dta-protocol`'s iCRC seals them: that lets a case send
//! RDMA READ, SEND ONLY or a foreign P_Key exactly as a misbehaving requester would.

use anyhow::{Context, Result};
use dta_protocol::roce::{icrc, Psn, ICRC_LEN, ROCEV2_UDP_PORT};
use dta_protocol::udp::{UdpEndpoints, UdpFrame, HEADERS_LEN};

use super::cases::{Addr, Key, Op, QpRef, Step};

/// The opcodes the cases send: the RC table lives in dta-protocol; a UC opcode is added here, since only
/// these cases send one (to check that an RC QP refuses another transport).
pub mod opcode {
    pub use dta_protocol::roce::bth::opcode::*;
    /// UC RDMA WRITE ONLY (IBA table 38, UC transport 0x20 + 0x0A).
    pub const UC_WRITE_ONLY: u8 = 0x2A;
}

/// A QPN no collector hands out: rxe numbers QPs from 0x11 upwards and the soft responder from 0x100.
pub const UNKNOWN_QPN: u32 = 0xABCDE;

/// What a case's frames are aimed at on one collector.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// Our port's and the collector's addresses.
    pub endpoints: UdpEndpoints,
    /// The collector's QPN for this case.
    pub qpn: u32,
    /// The case's first PSN (the hello's start PSN).
    pub start_psn: u32,
    /// VA, R_Key and length of the scratch region.
    pub va: u64,
    pub rkey: u32,
    pub len: u64,
    /// Offset of the case's own window inside the region.
    pub window: u64,
}

impl Ctx {
    fn va_of(&self, a: Addr) -> u64 {
        match a {
            Addr::Win(off) => self.va + self.window + off,
            Addr::FromEnd(back) => (self.va + self.len).wrapping_sub(back),
            Addr::Below(by) => self.va.wrapping_sub(by),
            Addr::Abs(va) => va,
        }
    }

    fn rkey_of(&self, k: Key) -> u32 {
        match k {
            Key::Good => self.rkey,
            Key::Xor(x) => self.rkey ^ x,
        }
    }
}

/// Builds the frame of one step.
pub fn build(ctx: &Ctx, step: &Step) -> Result<Vec<u8>> {
    let psn = Psn::new(ctx.start_psn).add(step.psn as u32).value();
    let (code, ext, payload): (u8, Vec<u8>, Vec<u8>) = match step.op {
        Op::Write { at, len, fill } => (
            opcode::WRITE_ONLY,
            reth(ctx.va_of(at), ctx.rkey_of(step.key), len as u32),
            vec![fill; len],
        ),
        Op::UcWrite { at, len, fill } => (
            opcode::UC_WRITE_ONLY,
            reth(ctx.va_of(at), ctx.rkey_of(step.key), len as u32),
            vec![fill; len],
        ),
        Op::WriteImm { at, len, fill } => {
            let mut e = reth(ctx.va_of(at), ctx.rkey_of(step.key), len as u32);
            e.extend_from_slice(&0x1234_5678u32.to_be_bytes());
            (opcode::WRITE_ONLY_IMM, e, vec![fill; len])
        }
        Op::FetchAdd { at, add } => (
            opcode::FETCH_ADD,
            atomic_eth(ctx.va_of(at), ctx.rkey_of(step.key), add, 0),
            Vec::new(),
        ),
        Op::CmpSwap { at, compare, swap } => (
            opcode::COMPARE_SWAP,
            atomic_eth(ctx.va_of(at), ctx.rkey_of(step.key), swap, compare),
            Vec::new(),
        ),
        Op::Read { at, len } => (
            opcode::READ_REQUEST,
            reth(ctx.va_of(at), ctx.rkey_of(step.key), len),
            Vec::new(),
        ),
        Op::Send { len, fill } => (opcode::SEND_ONLY, Vec::new(), vec![fill; len]),
        Op::Raw {
            code,
            reth: r,
            imm,
            len,
            fill,
        } => {
            let mut e = match r {
                Some((at, dma_len)) => reth(ctx.va_of(at), ctx.rkey_of(step.key), dma_len),
                None => Vec::new(),
            };
            if imm {
                e.extend_from_slice(&0x1234_5678u32.to_be_bytes());
            }
            (code, e, vec![fill; len])
        }
    };
    let dest_qp = match step.qp {
        QpRef::Case => ctx.qpn,
        QpRef::Unknown => UNKNOWN_QPN,
    };
    let pad = (4 - payload.len() % 4) % 4;
    let roce_len = 12 + ext.len() + payload.len() + pad + ICRC_LEN;
    let mut f = vec![0u8; HEADERS_LEN + roce_len];
    ctx.endpoints
        .emit_headers(&mut f, roce_len)
        .context("headers of a crafted frame")?;
    let b = &mut f[HEADERS_LEN..];
    b[0] = code;
    // SE 0, MigReq 1 (as the translator sends, DESIGN.md section 4), PadCnt, TVer 0.
    b[1] = 0x40 | ((pad as u8) << 4);
    b[2..4].copy_from_slice(&step.pkey.to_be_bytes());
    b[4] = 0;
    b[5..8].copy_from_slice(&dest_qp.to_be_bytes()[1..]);
    b[8] = if step.ack_req { 0x80 } else { 0 };
    b[9..12].copy_from_slice(&psn.to_be_bytes()[1..]);
    b[12..12 + ext.len()].copy_from_slice(&ext);
    let at = 12 + ext.len();
    b[at..at + payload.len()].copy_from_slice(&payload);
    icrc::fill(&mut f).context("iCRC of a crafted frame")?;
    if step.bad_icrc {
        let last = f.len() - 1;
        f[last] ^= 0x5A;
    }
    Ok(f)
}

fn reth(va: u64, rkey: u32, len: u32) -> Vec<u8> {
    let mut e = Vec::with_capacity(16);
    e.extend_from_slice(&va.to_be_bytes());
    e.extend_from_slice(&rkey.to_be_bytes());
    e.extend_from_slice(&len.to_be_bytes());
    e
}

fn atomic_eth(va: u64, rkey: u32, swap_add: u64, compare: u64) -> Vec<u8> {
    let mut e = Vec::with_capacity(28);
    e.extend_from_slice(&va.to_be_bytes());
    e.extend_from_slice(&rkey.to_be_bytes());
    e.extend_from_slice(&swap_add.to_be_bytes());
    e.extend_from_slice(&compare.to_be_bytes());
    e
}

/// The fields of a response that the comparison looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resp {
    /// BTH opcode.
    pub opcode: u8,
    /// BTH byte 1: SE, MigReq, PadCnt, TVer.
    pub flags: u8,
    /// BTH P_Key.
    pub pkey: u16,
    /// BTH destination QP (the requester's QPN).
    pub dest_qp: u32,
    /// BTH PSN.
    pub psn: u32,
    /// AETH syndrome (ACKNOWLEDGE and ATOMIC ACKNOWLEDGE).
    pub syndrome: Option<u8>,
    /// AETH MSN.
    pub msn: Option<u32>,
    /// AtomicAckETH original remote data.
    pub orig: Option<u64>,
    /// Whether the iCRC was right.
    pub icrc_ok: bool,
}

/// Reads a RoCEv2 response from `peer_ip` out of a received frame; anything else (ARP, ICMP, our own
/// requests echoed) is `None`.
pub fn parse_response(frame: &[u8], peer_ip: [u8; 4]) -> Option<Resp> {
    let udp = UdpFrame::parse(frame).ok()?;
    if udp.endpoints.dst_port != ROCEV2_UDP_PORT || udp.endpoints.src_ip != peer_ip {
        return None;
    }
    let b = udp.payload;
    if b.len() < 12 + ICRC_LEN {
        return None;
    }
    let opcode = b[0];
    let u24 = |s: &[u8]| u32::from_be_bytes([0, s[0], s[1], s[2]]);
    let has_aeth = matches!(opcode, opcode::ACKNOWLEDGE | opcode::ATOMIC_ACKNOWLEDGE);
    let aeth = has_aeth.then(|| b.get(12..16)).flatten();
    let orig = (opcode == opcode::ATOMIC_ACKNOWLEDGE)
        .then(|| b.get(16..24))
        .flatten()
        .map(|o| {
            let mut w = [0u8; 8];
            w.copy_from_slice(o);
            u64::from_be_bytes(w)
        });
    Some(Resp {
        opcode,
        flags: b[1],
        pkey: u16::from_be_bytes([b[2], b[3]]),
        dest_qp: u24(&b[5..8]),
        psn: u24(&b[9..12]),
        syndrome: aeth.map(|a| a[0]),
        msn: aeth.map(|a| u24(&a[1..4])),
        orig,
        icrc_ok: icrc::verify(frame).is_ok(),
    })
}

impl Resp {
    /// A short human form, PSN relative to the case's start PSN.
    pub fn describe(&self, start_psn: u32) -> String {
        // PSNs behind the start show as negative offsets.
        let rel = Psn::new(self.psn).offset_from(Psn::new(start_psn));
        let kind = match (self.opcode, self.syndrome) {
            (opcode::ACKNOWLEDGE, Some(s)) => syndrome_name(s),
            (opcode::ATOMIC_ACKNOWLEDGE, Some(s)) => format!("ATOMIC-{}", syndrome_name(s)),
            (op, _) => format!("opcode {op:#04x}"),
        };
        let mut t = format!("{kind} psn{rel:+}");
        if let Some(m) = self.msn {
            t.push_str(&format!(" msn={m}"));
        }
        if let Some(o) = self.orig {
            t.push_str(&format!(" orig={o:#x}"));
        }
        if !self.icrc_ok {
            t.push_str(" BAD-ICRC");
        }
        t
    }
}

/// ACK, RNR(timer), NAK-SEQ, NAK-INV, NAK-ACC, NAK-OP or the raw syndrome.
pub fn syndrome_name(s: u8) -> String {
    match (s >> 5, s & 0x1F) {
        (0, _) => "ACK".into(),
        (1, t) => format!("RNR({t})"),
        (3, 0) => "NAK-SEQ".into(),
        (3, 1) => "NAK-INV".into(),
        (3, 2) => "NAK-ACC".into(),
        (3, 3) => "NAK-OP".into(),
        _ => format!("syndrome {s:#04x}"),
    }
}
