//! The collector's side of the daemon bench: the responses a collector's RNIC sends for the translator's
//! frames. Every frame sent with AckReq gets an ACKNOWLEDGE, and every FETCH_ADD an ATOMIC ACKNOWLEDGE,
//! built from per-QP templates (iCRC and all) as an RNIC would and handed back through the port, so the
//! data path pays for parsing and verifying real ACKs at the configured cadence. Building them is the
//! collector NIC's work in reality: it is measured apart ([`ack_build_ns`]) so it can be told apart.

use anyhow::{anyhow, Result};
use dta_protocol::roce::{at, bth, AckKind, AckTemplate, AethRepr, FrameRepr, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

use crate::workloads::{self, COLLECTOR_IP, COLLECTOR_MAC, TRANSLATOR_IP, TRANSLATOR_MAC};

/// Responses queued between two drains: a frame asks for at most one, and one drain follows each dequeue of
/// the collector ring, of at most 1,024 frames (`daemon::worker`'s burst). (It was 128, "two per frame of a
/// 64-frame burst"; but one poll transmits as many bursts as the window allows: with INT's FETCH_ADDs,
/// each answered, two workers overflowed it once the handoff rings were sized.)
const QUEUED: usize = 1024;
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

/// The error for a sent frame too short to hold a BTH; out of line, as the engine never sends one.
#[cold]
#[inline(never)]
fn short_frame(len: usize) -> anyhow::Error {
    anyhow!("BTH: a {len}-byte frame ends before its BTH does")
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
            ack: AckTemplate::from_repr(&FrameRepr::acknowledge(ep, local_qpn, 0, aeth))
                .map_err(|e| anyhow!("ACK: {e}"))?,
            atomic_ack: AckTemplate::from_repr(&FrameRepr::atomic_acknowledge(
                ep, local_qpn, 0, aeth, 0,
            ))
            .map_err(|e| anyhow!("ATOMIC ACK: {e}"))?,
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
        let Some(b) = sent.get(..at::EXT) else {
            return Err(short_frame(sent.len()));
        };
        let atomic = b[at::BTH_OPCODE] == bth::opcode::FETCH_ADD;
        if !atomic && b[at::BTH_ACK_REQ] & bth::field::ACK_REQ_BIT == 0 {
            return Ok(());
        }
        let p = &b[at::BTH_PSN];
        let psn = u32::from_be_bytes([0, p[0], p[1], p[2]]);
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
        let len = t
            .write(buf, psn, self.msn, 0)
            .ok_or_else(|| anyhow!("ACK buffer too short"))?;
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
    use dta_protocol::udp::HEADERS_LEN;

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
