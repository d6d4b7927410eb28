//! The command line of `dta-report dart`.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use dta_rc::RequesterConfig;

/// Options of `dta-report dart`.
#[derive(Args, Debug)]
pub struct DartArgs {
    /// The collector's control server, `ip:port` (its `[control] bind`).
    #[arg(long)]
    pub(super) control: SocketAddr,
    /// The collector's control token.
    #[arg(long)]
    pub(super) token: String,
    /// Interface to send the RDMA WRITEs on and receive the ACKs from (AF_PACKET, in the current
    /// network namespace; needs CAP_NET_RAW). Its MAC is the source of our frames.
    #[arg(long)]
    pub(super) interface: String,
    /// Our IPv4 address: the source of the RoCE frames and where the collector sends its ACKs. It must
    /// be an address the interface's kernel owns (configured on --interface), so that the kernel answers
    /// ARP for it and the responses come back to the interface.
    #[arg(long)]
    pub(super) ip: Ipv4Addr,
    /// Copies N of every Key-Write (1 ..= the region's n_max).
    #[arg(long, default_value_t = 1)]
    pub(super) redundancy: u8,
    /// The writes, one per line: `<key> <data-hex>`, key a decimal (or 0x-hex) u32, data exactly the
    /// collector's Key-Write data size in hex (entry size - 4 bytes of checksum: 8 hex digits for 8-byte
    /// entries). Blank lines and `#` comments are ignored. `-` reads standard input.
    #[arg(long)]
    pub(super) writes: PathBuf,
    /// Our QP number (24 bits), the one the collector's QP is connected to.
    #[arg(long, value_parser = parse_qpn, default_value = "0x77")]
    pub(super) qpn: u32,
    /// First PSN (24 bits); default: taken from the clock, so that a rerun does not collide with the
    /// responses of an earlier one.
    #[arg(long, value_parser = parse_qpn)]
    pub(super) psn: Option<u32>,
    /// UDP source port of the RoCE frames (ECMP entropy), in the RoCE v2 range 0xC000..=0xFFFF (a
    /// responder drops requests from other ports); default 0xC000 | (QPN & 0x3FFF).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0xC000..=0xFFFF))]
    pub(super) udp_src_port: Option<u16>,
    /// Give up (non-zero exit) if not every write is acknowledged within this many seconds.
    #[arg(long, default_value_t = 60)]
    pub(super) timeout_s: u64,
    /// Retransmit timeouts in a row without progress before the QP is declared failed (the
    /// translator's `[requester] retry_limit`); raise it for a responder that can stall, such as
    /// Soft-RoCE in a busy VM.
    #[arg(long, default_value_t = RequesterConfig::default().retry_limit)]
    pub(super) retry_limit: u32,
}

/// A 24-bit QPN or PSN, decimal or 0x-prefixed hexadecimal.
pub(super) fn parse_qpn(s: &str) -> Result<u32, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|e| format!("{s}: {e}"))?;
    if v > 0xFF_FFFF {
        return Err(format!("{s} does not fit in 24 bits"));
    }
    Ok(v)
}
