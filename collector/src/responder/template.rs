//! Per-QP caches of the fast path: the iCRC state over a request's invariant headers, and pre-built
//! ACKNOWLEDGE / ATOMIC ACKNOWLEDGE frames that a response only patches.
//!
//! Both are pure functions of bytes: a cache entry is used only when the bytes it was built from are
//! equal to the new frame's, so a stale entry costs a rebuild, never a wrong answer.

use std::ops::Range;

use dta_protocol::roce::ack_template::{self, ACK_TEMPLATE_MAX};
use dta_protocol::roce::{at, IcrcPrefix, ICRC_LEN};
use dta_protocol::udp::at as env;

use super::reply::{Outcome, Reply};
use super::stats::DropReason;

/// Where what follows the BTH starts: the fixed headers of an untagged IPv4 (no options) frame end there.
pub(crate) const EXT_AT: usize = at::EXT;

/// The request bytes the iCRC's cached part covers: the IPv4 header up to the BTH's AckReq/PSN word. All
/// of them are fixed for one QP's stream of one shape (addresses, ports, IPv4 ID, length, opcode, pad
/// count), and only the last bytes of the frame remain to be hashed.
const RX_PREFIX: Range<usize> = env::IPV4..at::BTH_ACK_REQ;
const RX_PREFIX_LEN: usize = RX_PREFIX.end - RX_PREFIX.start;

/// The CRC state over the invariant headers of the last request seen on a QP.
#[derive(Debug, Clone)]
pub(crate) struct RxIcrc {
    raw: [u8; RX_PREFIX_LEN],
    icrc: IcrcPrefix,
}

/// The iCRC states of the last two request shapes seen on a QP: a translator interleaves WRITEs and
/// atomics on one QP, and each shape has its own invariant headers.
#[derive(Debug, Clone, Default)]
pub(crate) struct RxIcrcCache {
    entries: [Option<RxIcrc>; 2],
    /// The entry a miss replaces: the one used less recently.
    older: usize,
}

/// Whether the iCRC of `frame` (Ethernet II, IPv4 without options, iCRC at `icrc_at` = the end of the IPv4
/// total length less 4: what the fast path checked) matches, through `cache`. On a miss the older entry
/// is rebuilt from `frame`; a frame the iCRC code cannot locate is "no" (the general path then says why).
pub(crate) fn icrc_ok(cache: &mut RxIcrcCache, frame: &[u8], icrc_at: usize) -> bool {
    let (Some(raw), Some(carried)) = (
        frame
            .get(RX_PREFIX)
            .and_then(|r| <&[u8; RX_PREFIX_LEN]>::try_from(r).ok()),
        frame.get(icrc_at..icrc_at + ICRC_LEN),
    ) else {
        return false;
    };
    let found = cache
        .entries
        .iter()
        .position(|e| matches!(e, Some(c) if same_prefix(&c.raw, raw)));
    let at = match found {
        Some(at) => at,
        None => {
            let Ok(icrc) = IcrcPrefix::new(frame) else {
                return false;
            };
            let at = cache.older;
            cache.entries[at] = Some(RxIcrc { raw: *raw, icrc });
            at
        }
    };
    cache.older = 1 - at;
    let Some(c) = &cache.entries[at] else {
        return false;
    };
    let carried = u32::from_le_bytes([carried[0], carried[1], carried[2], carried[3]]);
    c.icrc.finish(frame, icrc_at) == carried
}

/// Whether two cached prefixes are equal, compared as machine words: `==` on the arrays calls memcmp,
/// which costs more than the comparison itself at this size.
#[inline]
fn same_prefix(a: &[u8; RX_PREFIX_LEN], b: &[u8; RX_PREFIX_LEN]) -> bool {
    // Always 8 bytes (the offsets below are constants inside the array), so the default never applies.
    let word = |x: &[u8; RX_PREFIX_LEN], at: usize| {
        u64::from_ne_bytes(<[u8; 8]>::try_from(&x[at..at + 8]).unwrap_or_default())
    };
    // 36 bytes: four words and the last four bytes (overlapping the fourth word).
    let mut diff = 0u64;
    for at in [0, 8, 16, 24, RX_PREFIX_LEN - 8] {
        diff |= word(a, at) ^ word(b, at);
    }
    diff == 0
}

/// The request bytes a response's envelope follows from (see `Reply::new`): both MACs (adjacent), the
/// TOS byte (DSCP; the ECN bits are not copied but keying on them costs nothing), both IPv4 addresses
/// (adjacent) and the UDP source port. The peer QPN is fixed per QP, and templates live in their QP.
const KEY_MACS: Range<usize> = env::ETH_DST.start..env::ETH_SRC.end;
const KEY_IPS: Range<usize> = env::IPV4_SRC.start..env::IPV4_DST.end;
const KEY_PORT: Range<usize> = env::UDP_SRC_PORT;
/// Where each part lies in the key.
const K_MACS: Range<usize> = 0..KEY_MACS.end - KEY_MACS.start;
const K_TOS: usize = K_MACS.end;
const K_IPS: Range<usize> = K_TOS + 1..K_TOS + 1 + (KEY_IPS.end - KEY_IPS.start);
const K_PORT: Range<usize> = K_IPS.end..K_IPS.end + (KEY_PORT.end - KEY_PORT.start);
pub(crate) const KEY_LEN: usize = K_PORT.end;
pub(crate) type ReplyKey = [u8; KEY_LEN];

/// The [`ReplyKey`] of a request frame at least [`EXT_AT`] bytes long.
pub(crate) fn reply_key(frame: &[u8]) -> Option<ReplyKey> {
    let mut k = [0u8; KEY_LEN];
    k[K_MACS].copy_from_slice(frame.get(KEY_MACS)?);
    k[K_TOS] = *frame.get(env::IPV4_TOS)?;
    k[K_IPS].copy_from_slice(frame.get(KEY_IPS)?);
    k[K_PORT].copy_from_slice(frame.get(KEY_PORT)?);
    Some(k)
}

/// A positive ACKNOWLEDGE or ATOMIC ACKNOWLEDGE for one requester, built once by the general path's
/// [`Reply`] and then patched by `dta_protocol`'s [`ack_template::AckTemplate`]: PSN, MSN, the original
/// value and the iCRC are all that differ between two of them (the IPv4 header, its checksum included,
/// does not change). The key says which requests it answers.
#[derive(Debug, Clone)]
pub(crate) struct AckTemplate {
    key: ReplyKey,
    frame: ack_template::AckTemplate,
}

impl AckTemplate {
    /// The template of `reply`'s ACK (or ATOMIC ACK), or `None` if the general path cannot build one.
    pub fn new(key: ReplyKey, reply: &Reply, atomic: bool) -> Option<Self> {
        let mut frame = [0u8; ACK_TEMPLATE_MAX];
        let n = match atomic {
            true => reply.atomic_ack(&mut frame, 0, 0, 0),
            false => reply.ack(&mut frame, 0, 0),
        };
        let Outcome::Respond(n) = n else {
            return None;
        };
        let frame = ack_template::AckTemplate::new(frame.get(..n)?).ok()?;
        (frame.is_atomic() == atomic).then_some(AckTemplate { key, frame })
    }

    /// Whether this template answers the request whose first bytes are `h` (the key's bytes compared
    /// where they lie in the frame, without assembling a key first) with an ATOMIC ACK or not.
    #[inline]
    pub fn fits(&self, h: &[u8; EXT_AT], atomic: bool) -> bool {
        let k = &self.key;
        self.frame.is_atomic() == atomic
            && h[KEY_MACS] == k[K_MACS]
            && h[env::IPV4_TOS] == k[K_TOS]
            && h[KEY_IPS] == k[K_IPS]
            && h[KEY_PORT] == k[K_PORT]
    }

    /// Writes the response for `psn`, `msn` (and `orig` for an ATOMIC ACKNOWLEDGE) into `out`.
    #[inline]
    pub fn write(&self, out: &mut [u8], psn: u32, msn: u32, orig: u64) -> Outcome {
        match self.frame.write(out, psn, msn, orig) {
            Some(n) => Outcome::Respond(n),
            // What `FrameRepr::emit` does with a too-small buffer (a caller's bug).
            None => Outcome::Dropped(DropReason::Malformed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::roce::{icrc, FrameRepr};
    use dta_protocol::udp::{UdpEndpoints, ETH_HEADER_LEN};
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    fn endpoints(rng: &mut ChaCha8Rng) -> UdpEndpoints {
        let mut b = [0u8; 24];
        rng.fill_bytes(&mut b);
        UdpEndpoints {
            dscp: b[20] & 0x3F,
            ..UdpEndpoints::new(
                [b[0], b[1], b[2], b[3], b[4], b[5]],
                [b[6], b[7], b[8], b[9], b[10], b[11]],
                [b[12], b[13], b[14], b[15]],
                [b[16], b[17], b[18], b[19]],
                u16::from_be_bytes([b[21], b[22]]),
                4791,
            )
        }
    }

    /// Patched templates are byte for byte what the general path builds, for random requesters, PSNs,
    /// MSNs (beyond 24 bits too: both keep the low 24) and original values.
    #[test]
    fn templates_equal_the_general_path() {
        let mut rng = ChaCha8Rng::seed_from_u64(14);
        for _ in 0..200 {
            let req = endpoints(&mut rng);
            let reply = Reply::new(&req, rng.next_u32() & 0xFF_FFFF);
            for atomic in [false, true] {
                let t = AckTemplate::new([0; KEY_LEN], &reply, atomic).unwrap();
                for _ in 0..20 {
                    let (psn, msn, orig) = (rng.next_u32(), rng.next_u32(), rng.next_u64());
                    let (mut a, mut b) = ([0u8; 128], [0u8; 128]);
                    let (psn, msn) = (psn & 0xFF_FFFF, msn & 0xFF_FFFF);
                    let want = match atomic {
                        true => reply.atomic_ack(&mut a, psn, msn, orig),
                        false => reply.ack(&mut a, psn, msn),
                    };
                    assert_eq!(t.write(&mut b, psn, msn, orig), want);
                    assert_eq!(a, b);
                    let Outcome::Respond(n) = want else { panic!() };
                    assert_eq!(icrc::verify(&b[..n]), Ok(()));
                }
                assert_eq!(
                    t.write(&mut [0u8; 40], 1, 1, 1),
                    Outcome::Dropped(DropReason::Malformed)
                );
            }
        }
    }

    /// `fits` compares the bytes `reply_key` takes, and only those.
    #[test]
    fn fits_is_reply_key_equality() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let reply = Reply::new(&endpoints(&mut rng), 9);
        let mut base = [0u8; EXT_AT];
        rng.fill_bytes(&mut base);
        let t = AckTemplate::new(reply_key(&base).unwrap(), &reply, false).unwrap();
        assert!(t.fits(&base, false) && !t.fits(&base, true));
        for at in 0..EXT_AT {
            let mut h = base;
            h[at] ^= 0x01;
            let same = reply_key(&h) == reply_key(&base);
            assert_eq!(t.fits(&h, false), same, "byte {at}");
        }
    }

    #[test]
    fn same_prefix_sees_every_byte() {
        let a = [7u8; RX_PREFIX_LEN];
        assert!(same_prefix(&a, &a));
        for at in 0..RX_PREFIX_LEN {
            let mut b = a;
            b[at] ^= 0x80;
            assert!(!same_prefix(&a, &b), "byte {at}");
        }
    }

    /// The cached iCRC agrees with the naive one on matching, corrupted and reshaped frames, whatever the
    /// cache held before.
    #[test]
    fn cached_icrc_equals_the_naive_icrc() {
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        let mut cache = RxIcrcCache::default();
        let mut buf = [0u8; 256];
        // Three requesters, so that cache entries are hit, missed and evicted.
        let pool: Vec<UdpEndpoints> = (0..3).map(|_| endpoints(&mut rng)).collect();
        for i in 0..20_000 {
            // Mostly one stream shape, interleaving WRITEs and FETCH_ADDs; sometimes anything.
            let stable = rng.next_u32() % 4 != 0;
            let ep = UdpEndpoints {
                dst_port: 4791,
                ip_id: if stable {
                    0
                } else {
                    (rng.next_u32() % 3) as u16
                },
                ..pool[rng.next_u32() as usize % if stable { 1 } else { 3 }]
            };
            let mut payload = [0u8; 64];
            rng.fill_bytes(&mut payload);
            let plen = if stable {
                8
            } else {
                (rng.next_u32() % 65) as usize
            };
            let f = match i % 2 {
                0 => FrameRepr::write_only(
                    ep,
                    if stable { 1 } else { rng.next_u32() % 4 },
                    rng.next_u32() & 0xFF_FFFF,
                    rng.next_u32() % 2 == 0,
                    rng.next_u64(),
                    rng.next_u32(),
                    &payload[..plen],
                ),
                _ => FrameRepr::fetch_add(
                    ep,
                    1,
                    rng.next_u32() & 0xFF_FFFF,
                    true,
                    8,
                    9,
                    rng.next_u64(),
                ),
            };
            let n = f.emit(&mut buf).unwrap();
            // Half of the frames get one random byte flipped anywhere.
            if rng.next_u32() % 2 == 0 {
                let at = rng.next_u32() as usize % n;
                buf[at] ^= 1 << (rng.next_u32() % 8);
            }
            let frame = &buf[..n];
            let naive = icrc::verify(frame).is_ok();
            // icrc_ok is only asked about frames the fast path located: iCRC at the IPv4 total length's end.
            let total = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
            if frame[12..14] == [8, 0]
                && frame[14] == 0x45
                && ETH_HEADER_LEN + total <= n
                && total >= 20 + 8 + 12 + 4
            {
                let at = ETH_HEADER_LEN + total - ICRC_LEN;
                assert_eq!(icrc_ok(&mut cache, frame, at), naive, "frame {i}");
            }
        }
    }
}
