//! The collector's side of the daemon bench: the responses a collector's RNIC sends for the translator's
//! frames. Every frame sent with AckReq gets an ACKNOWLEDGE, and every FETCH_ADD an ATOMIC ACKNOWLEDGE,
//! built from per-QP templates (iCRC and all) as an RNIC would and handed back through the port, so the
//! data path pays for parsing and verifying real ACKs at the configured cadence. Building them is the
//! collector NIC's work in reality: it is measured apart ([`ack_build_ns`]) so it can be told apart.

use anyhow::{anyhow, Result};
use dta_protocol::roce::short_crc::Crc32Short;
use dta_protocol::roce::{
    bth, AckKind, AethRepr, FrameRepr, IcrcPrefix, ICRC_LEN, ROCEV2_UDP_PORT,
};
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};

use crate::workloads::{self, COLLECTOR_IP, COLLECTOR_MAC, TRANSLATOR_IP, TRANSLATOR_MAC};

/// Responses queued between two drains: two per frame of a 64-frame transmit burst.
const QUEUED: usize = 128;
const ACK_LEN: usize = 96;

/// Builds the responses a collector's RNIC would send for the frames the engine emits.
///
/// Like an RNIC, it keeps one ACK and one ATOMIC ACKNOWLEDGE per QP as templates and patches the PSN and
/// the MSN into a copy, with the iCRC from the template's prefix state: the data path, not the collector's
/// side, is what the benchmark measures. A test checks the templated frames against `FrameRepr::emit`'s.
pub(crate) struct Acker {
    /// ACK and ATOMIC ACKNOWLEDGE templates (PSN 0, MSN 0) and their iCRC prefixes.
    ack: AckTemplate,
    atomic_ack: AckTemplate,
    msn: u32,
    bufs: Vec<[u8; ACK_LEN]>,
    lens: Vec<usize>,
    fed: u64,
}

/// Offset of the opcode in the BTH (its first byte).
const BTH_OPCODE: usize = 0;

/// The error for a sent frame too short to hold a BTH; out of line, as the engine never sends one.
#[cold]
#[inline(never)]
fn short_frame(len: usize) -> anyhow::Error {
    anyhow!("BTH: a {len}-byte frame ends before its BTH does")
}

/// Where the PSN (the low three bytes of the BTH's AckReq/PSN word) and the MSN (the AETH's low three
/// bytes, the AETH right after the BTH) lie in an ACK or ATOMIC ACKNOWLEDGE frame.
const ACK_PSN_AT: usize = HEADERS_LEN + bth::ACK_PSN_OFFSET + 1;
const ACK_MSN_AT: usize = HEADERS_LEN + bth::HEADER_LEN + 1;

struct AckTemplate {
    /// The frame, in a fixed-size array: a copy of it is a few vector moves, not a `memcpy` call.
    frame: [u8; ACK_LEN],
    len: usize,
    prefix: IcrcPrefix,
    short: Crc32Short,
    /// For a frame whose iCRC tail (its PSN word to its iCRC) is one 16-byte block, an ATOMIC
    /// ACKNOWLEDGE's: the raw register its invariant prefix reaches over 16 zero bytes, to which the
    /// block's own part is added (the CRC is linear), without the prefix's general tail path.
    one_block: Option<u32>,
}

/// Where an ACK's iCRC tail starts: its BTH's AckReq/PSN word.
const ACK_TAIL_AT: usize = HEADERS_LEN + bth::ACK_PSN_OFFSET;

impl AckTemplate {
    fn new(f: FrameRepr) -> Result<Self> {
        let len = f.buffer_len();
        if len > ACK_LEN {
            return Err(anyhow!("ACK: {len} bytes, over {ACK_LEN}"));
        }
        let mut frame = [0u8; ACK_LEN];
        f.emit(&mut frame[..len]).map_err(|e| anyhow!("ACK: {e}"))?;
        let prefix = IcrcPrefix::new(&frame[..len]).map_err(|e| anyhow!("ACK: {e}"))?;
        // The template's iCRC is !(zeros ^ linear(tail)): zeros from the template's own iCRC and tail.
        let one_block = tail_block(&frame, len).map(|tail| {
            let crc = prefix.finish(&frame[..len], len - ICRC_LEN);
            !crc ^ Crc32Short::detect().linear_block(tail)
        });
        Ok(AckTemplate {
            frame,
            len,
            prefix,
            short: Crc32Short::detect(),
            one_block,
        })
    }

    /// The template with `psn` and `msn` (24-bit values) patched in, written to `out`; returns its length.
    /// The fields are written in place at their fixed offsets (the template's shape is known): the
    /// protocol's field setters check bounds the array already guarantees.
    fn write(&self, psn: u32, msn: u32, out: &mut [u8; ACK_LEN]) -> usize {
        *out = self.frame;
        out[ACK_PSN_AT..ACK_PSN_AT + 3].copy_from_slice(&psn.to_be_bytes()[1..]);
        out[ACK_MSN_AT..ACK_MSN_AT + 3].copy_from_slice(&msn.to_be_bytes()[1..]);
        if let (Some(zeros), Some(tail)) = (self.one_block, tail_block(out, self.len)) {
            let crc = !(zeros ^ self.short.linear_block(tail));
            let at = self.len - ICRC_LEN;
            out[at..at + ICRC_LEN].copy_from_slice(&crc.to_le_bytes());
            return self.len;
        }
        let f = &mut out[..self.len];
        self.prefix.fill(f);
        self.len
    }
}

/// The iCRC tail of a `len`-byte response in `frame`, if it is exactly one 16-byte block.
fn tail_block(frame: &[u8; ACK_LEN], len: usize) -> Option<&[u8; 16]> {
    frame
        .get(ACK_TAIL_AT..len.checked_sub(ICRC_LEN)?)?
        .try_into()
        .ok()
}

impl Acker {
    pub(crate) fn new(local_qpn: u32) -> Result<Self> {
        let ep = UdpEndpoints::new(
            COLLECTOR_MAC,
            TRANSLATOR_MAC,
            COLLECTOR_IP,
            TRANSLATOR_IP,
            49152,
            ROCEV2_UDP_PORT,
        );
        let aeth = AethRepr {
            kind: AckKind::Ack { credits: 31 },
            msn: 0,
        };
        Ok(Acker {
            ack: AckTemplate::new(FrameRepr::acknowledge(ep, local_qpn, 0, aeth))?,
            atomic_ack: AckTemplate::new(FrameRepr::atomic_acknowledge(ep, local_qpn, 0, aeth, 0))?,
            msn: 0,
            bufs: vec![[0u8; ACK_LEN]; QUEUED],
            lens: Vec::with_capacity(QUEUED),
            fed: 0,
        })
    }

    /// Queues the response `sent` asks for, if any. Reads the two BTH bytes that decide in place, at their
    /// fixed offsets (the requester's frames are ours and well formed, without IP options): a full parse
    /// would charge the collector's work to the data path, and most frames need no response. Inlined, so that
    /// this common case costs the caller's loop a length check, two loads and two compares.
    #[inline]
    pub(crate) fn observe(&mut self, sent: &[u8]) -> Result<()> {
        let Some(b) = sent.get(HEADERS_LEN..HEADERS_LEN + bth::HEADER_LEN) else {
            return Err(short_frame(sent.len()));
        };
        let atomic = b[BTH_OPCODE] == bth::opcode::FETCH_ADD;
        // AckReq is the top bit of the AckReq/PSN word.
        if !atomic && b[bth::ACK_PSN_OFFSET] & 0x80 == 0 {
            return Ok(());
        }
        let at = bth::ACK_PSN_OFFSET;
        let psn = u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) & 0xFF_FFFF;
        self.respond(atomic, psn)
    }

    /// Queues an ATOMIC ACKNOWLEDGE (`atomic`) or an ACK for `psn`. Out of line: it runs for one frame in
    /// 16 (Key-Write's AckReq cadence), or for every FETCH_ADD, and its frame copy and iCRC would swell the
    /// loop that calls [`observe`](Self::observe).
    #[inline(never)]
    fn respond(&mut self, atomic: bool, psn: u32) -> Result<()> {
        self.msn = (self.msn + 1) & 0xFF_FFFF;
        let t = if atomic { &self.atomic_ack } else { &self.ack };
        let k = self.lens.len();
        let buf = self
            .bufs
            .get_mut(k)
            .ok_or_else(|| anyhow!("ACK ring full"))?;
        let len = t.write(psn, self.msn, buf);
        self.lens.push(len);
        Ok(())
    }

    /// Hands every queued response to `f`, in order, and forgets them.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(&[u8])) {
        for (k, &len) in self.lens.iter().enumerate() {
            f(&self.bufs[k][..len]);
        }
        self.fed += self.lens.len() as u64;
        self.lens.clear();
    }

    /// Responses built so far.
    pub(crate) fn fed(&self) -> u64 {
        self.fed
    }
}

/// What building one response costs, in ns: (an ACK, an ATOMIC ACKNOWLEDGE).
pub(crate) fn ack_build_ns() -> Result<(f64, f64)> {
    let mut a = Acker::new(0x100)?;
    let ep = workloads::roce_endpoints();
    let mut time = |frame: FrameRepr| -> Result<f64> {
        let mut buf = vec![0u8; frame.buffer_len()];
        frame.emit(&mut buf).map_err(|e| anyhow!("{e}"))?;
        let n = 200_000u32;
        let t = std::time::Instant::now();
        for _ in 0..n / 64 {
            for _ in 0..64 {
                a.observe(std::hint::black_box(&buf))?;
            }
            a.lens.clear();
        }
        Ok(t.elapsed().as_nanos() as f64 / f64::from(n / 64 * 64))
    };
    let write = time(FrameRepr::write_only(
        ep,
        17,
        5,
        true,
        0x7f00_0000_0000,
        1,
        &[0; 8],
    ))?;
    let atomic = time(FrameRepr::fetch_add(
        ep,
        17,
        5,
        false,
        0x7f10_0000_0000,
        1,
        1,
    ))?;
    Ok((write, atomic))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sent frame too short for a BTH is an error, not a panic, whatever it holds; one that asks for
    /// nothing queues nothing.
    #[test]
    fn short_frames_are_refused() {
        let mut a = Acker::new(0x123).unwrap();
        let ep = workloads::roce_endpoints();
        let mut buf = vec![0u8; 200];
        let n = FrameRepr::write_only(ep, 17, 5, true, 0, 1, &[0; 8])
            .emit(&mut buf)
            .unwrap();
        for len in [
            0,
            1,
            HEADERS_LEN - 1,
            HEADERS_LEN,
            HEADERS_LEN + bth::HEADER_LEN - 1,
        ] {
            assert!(a.observe(&buf[..len]).is_err(), "{len} bytes");
        }
        assert!(a.lens.is_empty());
        // The BTH alone is enough to decide (the AckReq write gets its ACK).
        a.observe(&buf[..HEADERS_LEN + bth::HEADER_LEN]).unwrap();
        a.observe(&buf[..n]).unwrap();
        assert_eq!(a.lens.len(), 2);
    }

    /// The templated responses are byte for byte what `FrameRepr` emits, PSN and MSN wraps included.
    #[test]
    fn templated_acks_equal_full_emits() {
        let mut a = Acker::new(0x123).unwrap();
        let ep = workloads::roce_endpoints();
        for (k, psn) in [0u32, 1, 0x7F_FFFF, 0xFF_FFFF, 0x12_3456]
            .into_iter()
            .enumerate()
        {
            for fetch_add in [false, true] {
                let sent = if fetch_add {
                    FrameRepr::fetch_add(ep, 17, psn, false, 0x7f10_0000_0000, 1, 1)
                } else {
                    FrameRepr::write_only(ep, 17, psn, true, 0x7f00_0000_0000, 1, &[0; 8])
                };
                let mut buf = vec![0u8; sent.buffer_len()];
                sent.emit(&mut buf).unwrap();
                a.msn = 0xFF_FFFF - k as u32;
                a.observe(&buf).unwrap();
                let msn = a.msn;
                let aeth = AethRepr {
                    kind: AckKind::Ack { credits: 31 },
                    msn,
                };
                let rev = UdpEndpoints::new(
                    COLLECTOR_MAC,
                    TRANSLATOR_MAC,
                    COLLECTOR_IP,
                    TRANSLATOR_IP,
                    49152,
                    ROCEV2_UDP_PORT,
                );
                let want = if fetch_add {
                    FrameRepr::atomic_acknowledge(rev, 0x123, psn, aeth, 0)
                } else {
                    FrameRepr::acknowledge(rev, 0x123, psn, aeth)
                };
                let mut w = vec![0u8; want.buffer_len()];
                want.emit(&mut w).unwrap();
                let got = &a.bufs[a.lens.len() - 1][..*a.lens.last().unwrap()];
                assert_eq!(got, &w[..], "psn {psn:#x} atomic {fetch_add}");
                assert!(FrameRepr::parse(got).is_ok());
            }
        }
        // A write without AckReq gets no response.
        let mut buf = vec![0u8; 200];
        let n = FrameRepr::write_only(ep, 17, 5, false, 0, 1, &[0; 8])
            .emit(&mut buf)
            .unwrap();
        let before = a.lens.len();
        a.observe(&buf[..n]).unwrap();
        assert_eq!(a.lens.len(), before);
    }
}
