//! iCRC verification of responses with the constant headers' CRC remembered.
//!
//! A requester hears from one responder: its ACKNOWLEDGEs (and ATOMIC ACKNOWLEDGEs, CNPs) share every
//! covered byte up to the BTH's AckReq/PSN word but the IPv4 ID, which NICs and rxe step per packet. So,
//! as [`IcrcPrefix`](super::IcrcPrefix) does for the frames we send, [`ResponseIcrc`] keeps the CRC state
//! over those bytes (ID taken as 0) per response shape and hashes only the PSN word and what follows. The
//! ID is added back by linearity: for messages of one length, `crc(a) ^ crc(b)` is the zero-init,
//! zero-xorout CRC of `a ^ b`, which for a difference in the two ID bytes alone is a lookup per byte in
//! tables made for that length. Frames whose headers match no remembered shape (or with IPv4 options, or
//! longer tails than responses have) are hashed in full, and their shape is remembered for the next.
//! A property test checks the result equals [`icrc::verify`](super::icrc::verify), errors included.

use crate::roce::bth;
use crate::roce::icrc::{carried_at, compute_at, locate, Offsets, LRH_CRC, PLAIN_MASKED};
use crate::roce::short_crc::{Crc32Short, TailCrc};
use crate::roce::ICRC_LEN;
use crate::udp::{
    offset, ETHERTYPE_IPV4, ETH_HEADER_LEN as ETH_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN,
};
use crate::{Error, Result};

/// The covered bytes a shape fixes, from the IPv4 header to the BTH's AckReq/PSN word.
const KEY_LEN: usize = IPV4_HEADER_LEN + UDP_HEADER_LEN + bth::ACK_PSN_OFFSET;
/// Longest tail (PSN word to iCRC) taken from a remembered shape: a CNP's 20 bytes, an ATOMIC
/// ACKNOWLEDGE's 16. Longer frames are requests, not responses, and are hashed in full.
const MAX_TAIL: usize = 24;
/// Shapes remembered: ACK, ATOMIC ACKNOWLEDGE, CNP, and one to spare.
const SHAPES: usize = 4;
/// The IPv4 ID's offset in the IPv4 header.
const ID_AT: usize = 4;

/// The key's bytes as little-endian words (four `u64`s, then the last 4 bytes in a fifth), compared
/// word by word instead of through a masked copy and `memcmp`.
const KEY_WORDS: usize = KEY_LEN.div_ceil(8);
/// Where the variant fields sit in the key (offsets from the IPv4 header): the ones the plain iCRC path
/// masks, the key being a prefix of its masked headers.
const VARIANT: [usize; 7] = PLAIN_MASKED;
/// Per key word, ones over the bytes a shape fixes: zeros over the variant fields, the ID and past the
/// key's end.
const KEY_MASK: [u64; KEY_WORDS] = {
    let mut bytes = [0u8; KEY_WORDS * 8];
    let mut i = 0;
    while i < KEY_LEN {
        bytes[i] = 0xFF;
        i += 1;
    }
    let mut v = 0;
    while v < VARIANT.len() {
        bytes[VARIANT[v]] = 0;
        v += 1;
    }
    bytes[ID_AT] = 0;
    bytes[ID_AT + 1] = 0;
    let mut words = [0u64; KEY_WORDS];
    let mut w = 0;
    while w < KEY_WORDS {
        let mut b = 0;
        while b < 8 {
            words[w] |= (bytes[w * 8 + b] as u64) << (8 * b);
            b += 1;
        }
        w += 1;
    }
    words
};

/// The key of the covered bytes `key` (from the IPv4 header): its words under [`KEY_MASK`]. Two frames
/// have the same key exactly when their bytes up to the PSN word agree but for the ID and the variant
/// fields.
#[inline]
fn key_words(key: &[u8; KEY_LEN]) -> [u64; KEY_WORDS] {
    // Whole 8-byte words, then the last 4 bytes (fixed-size loads, no copy through a padded buffer).
    const { assert!(KEY_LEN % 8 == 4) };
    let mut words = [0u64; KEY_WORDS];
    for (i, w) in words.iter_mut().enumerate() {
        let at = 8 * i;
        // Offsets known at compile time: these fold to plain loads.
        if let Some(c) = key.get(at..).and_then(|b| b.first_chunk::<8>()) {
            *w = u64::from_le_bytes(*c);
        } else if let Some(c) = key.get(at..).and_then(|b| b.first_chunk::<4>()) {
            *w = u64::from(u32::from_le_bytes(*c));
        }
    }
    for (w, m) in words.iter_mut().zip(KEY_MASK) {
        *w &= m;
    }
    words
}

/// Whether two keys are equal, by XOR and OR of their words (`==` on the arrays is a `bcmp` call).
#[inline]
fn same_key(a: &[u64; KEY_WORDS], b: &[u64; KEY_WORDS]) -> bool {
    a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

/// One response shape: its fixed bytes, their CRC state and the ID's contributions.
#[derive(Clone)]
struct Shape {
    /// The covered bytes up to the PSN word, as [`key_words`].
    key: [u64; KEY_WORDS],
    /// The tail from the PSN word to the iCRC (the key's IPv4 total length fixes its length).
    tail: TailCrc,
    /// How the tail is folded: see [`Fold`].
    fold: Fold,
    /// Where the frames of this shape end (after the iCRC), from the Ethernet header.
    end: usize,
    /// The raw register after the LRH stand-in, `key` and `tail` zero bytes: a frame's register is this
    /// XORed with its tail's linear part (and the ID's).
    zeros: u32,
    /// The zero-init CRC of the ID's high byte (then low byte) followed by zeros to the iCRC: what a
    /// non-zero ID adds to the CRC of a frame of this shape.
    id_high: [u32; 256],
    id_low: [u32; 256],
}

impl Shape {
    /// The iCRC of a frame of this shape whose covered bytes (up to the iCRC) are `covered` and whose
    /// bytes from the IPv4 header to the PSN word are `bytes` (for its ID).
    #[inline(always)]
    fn crc(&self, covered: &[u8], bytes: &[u8; KEY_LEN]) -> u32 {
        // The bytes before the tail that `linear` may read are masked out there.
        let tail = match (self.fold, covered.last_chunk::<16>()) {
            (Fold::Block(short), Some(block)) => short.linear_block(block),
            (Fold::Short(short, keep), Some(block)) => short_linear(short, keep, block),
            _ => self.tail.linear(covered),
        };
        let (id_high, id_low) = (bytes[ID_AT], bytes[ID_AT + 1]);
        !(self.zeros ^ tail) ^ self.id_high[usize::from(id_high)] ^ self.id_low[usize::from(id_low)]
    }
}

/// How a shape folds its tail (PSN word to iCRC).
#[derive(Clone, Copy)]
enum Fold {
    /// Exactly one block (an ATOMIC ACKNOWLEDGE's 16 bytes): [`Crc32Short::linear_block`] of the block.
    Block(Crc32Short),
    /// Under one block (an ACKNOWLEDGE's 8 bytes, PSN word and AETH): the same, with the bytes before
    /// the tail zeroed through the mask (see [`short_linear`]).
    Short(Crc32Short, u128),
    /// Longer tails: [`TailCrc::linear`].
    Tail,
}

impl Fold {
    fn new(short: Crc32Short, tail: usize) -> Self {
        match tail {
            16 => Fold::Block(short),
            // Ones over the block's last `tail` bytes, as a little-endian word.
            1..16 => Fold::Short(short, u128::MAX << (8 * (16 - tail))),
            _ => Fold::Tail,
        }
    }
}

/// The zero-init register of the tail that ends `block` and whose bytes `keep` has ones over: the
/// block with the bytes before the tail zeroed, folded as one block (leading zero bytes leave a
/// zero-init CRC at zero). The plain ACKNOWLEDGE's 8-byte tail through `TailCrc::linear` was an indirect
/// call to the general fold with its byte-skip mask (callgrind: ~50 instructions an ACK).
#[inline(always)]
fn short_linear(short: Crc32Short, keep: u128, block: &[u8; 16]) -> u32 {
    short.linear_block(&(u128::from_le_bytes(*block) & keep).to_le_bytes())
}

/// The zero-init, zero-xorout CRC-32 of byte `v` followed by `zeros` zero bytes, for every `v`.
fn byte_table(zeros: usize) -> [u32; 256] {
    // At most the IPv4 header after the ID, UDP, the BTH and the longest tail: no heap.
    let mut room = [0u8; IPV4_HEADER_LEN + UDP_HEADER_LEN + bth::HEADER_LEN + MAX_TAIL];
    let buf =
        &mut room[..(zeros + 1).min(IPV4_HEADER_LEN + UDP_HEADER_LEN + bth::HEADER_LEN + MAX_TAIL)];
    let base = crc32fast::hash(buf);
    let mut bits = [0u32; 8];
    for (b, t) in bits.iter_mut().enumerate() {
        buf[0] = 1 << b;
        // With init and xorout all ones, crc(x) ^ crc(0) of one length is the linear part alone.
        *t = crc32fast::hash(buf) ^ base;
    }
    let mut table = [0u32; 256];
    for v in 1..256usize {
        let low = v.trailing_zeros() as usize;
        table[v] = table[v & (v - 1)] ^ bits[low];
    }
    table
}

impl Shape {
    /// The shape of frames whose covered bytes from the IPv4 header to the PSN word are `bytes`, and
    /// whose tail (PSN word to iCRC) has `tail` bytes.
    fn new(bytes: &[u8; KEY_LEN], tail: usize, end: usize, short: Crc32Short) -> Self {
        // The masked pseudo-header: variant fields all ones, the ID zero (added back per frame).
        let mut masked = *bytes;
        masked[ID_AT] = 0;
        masked[ID_AT + 1] = 0;
        for at in VARIANT {
            masked[at] = 0xFF;
        }
        let mut state = crc32fast::Hasher::new_with_initial(LRH_CRC);
        state.update(&masked);
        // Covered bytes after the ID: the rest of the key, then the tail.
        let covered_after_id = KEY_LEN - (ID_AT + 2) + tail;
        Shape {
            key: key_words(bytes),
            tail: TailCrc::new(short, tail),
            fold: Fold::new(short, tail),
            end,
            zeros: Crc32Short::zeros(!state.finalize(), tail),
            // The high byte has the low byte and the rest after it; the low byte the rest.
            id_high: byte_table(covered_after_id + 1),
            id_low: byte_table(covered_after_id),
        }
    }
}

/// Remembered response shapes of one responder (about 8 KiB, inline: remembering a shape allocates
/// nothing, so the steady state stays allocation-free whatever the responder sends).
#[derive(Clone, Default)]
pub struct ResponseIcrc {
    shapes: [Option<Shape>; SHAPES],
    short: Crc32Short,
    /// The slot the next new shape takes.
    next: usize,
}

impl std::fmt::Debug for ResponseIcrc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.shapes.iter().flatten().count();
        f.debug_struct("ResponseIcrc").field("shapes", &n).finish()
    }
}

impl ResponseIcrc {
    /// No shape remembered yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`icrc::verify`](super::icrc::verify), the same result for every frame.
    ///
    /// Always inlined: a requester checks every response through it, and out of line it cost a call,
    /// saved registers and its `Result` through memory (~20 instructions an ATOMIC ACKNOWLEDGE).
    #[inline(always)]
    pub fn verify(&mut self, frame: &[u8]) -> Result<()> {
        let Some((computed, carried)) = self.verify_known(frame) else {
            return self.verify_new(frame);
        };
        if computed == carried {
            Ok(())
        } else {
            Err(Error::IcrcMismatch { carried, computed })
        }
    }

    /// [`verify`](Self::verify) of a frame of no remembered shape (whose shape it then remembers).
    #[cold]
    #[inline(never)]
    fn verify_new(&mut self, frame: &[u8]) -> Result<()> {
        let o = locate(frame)?;
        let computed = self.compute_at(frame, &o);
        let carried = carried_at(frame, &o);
        if computed == carried {
            Ok(())
        } else {
            Err(Error::IcrcMismatch { carried, computed })
        }
    }

    /// [`verify`](Self::verify) of a frame of a remembered shape, without locating its parts: its key
    /// fixes the IPv4 version, IHL and total length (as they were in the frame the shape was made of,
    /// which `locate` accepted), so with an IPv4 EtherType and the whole packet present, `locate` would
    /// find the shape's offsets. The computed and the carried iCRC; `None` for anything else (the
    /// general path then answers).
    #[inline(always)]
    fn verify_known(&self, frame: &[u8]) -> Option<(u32, u32)> {
        let head = frame.first_chunk::<{ ETH_LEN + KEY_LEN }>()?;
        let (eth, bytes) = head.split_first_chunk::<ETH_LEN>()?;
        if eth[offset::ETH_TYPE] != ETHERTYPE_IPV4.to_be_bytes() {
            return None;
        }
        let bytes = bytes.first_chunk::<KEY_LEN>()?;
        let key = key_words(bytes);
        let s = self
            .shapes
            .iter()
            .flatten()
            .find(|s| same_key(&s.key, &key))?;
        let (covered, icrc) = frame.get(..s.end)?.split_last_chunk::<ICRC_LEN>()?;
        Some((s.crc(covered, bytes), u32::from_le_bytes(*icrc)))
    }

    fn compute_at(&mut self, frame: &[u8], o: &Offsets) -> u32 {
        let psn_at = o.ip + KEY_LEN;
        if o.udp - o.ip != IPV4_HEADER_LEN || o.icrc < psn_at || o.icrc - psn_at > MAX_TAIL {
            return compute_at(frame, o);
        }
        let Some(bytes) = frame
            .get(o.ip..psn_at)
            .and_then(|b| b.first_chunk::<KEY_LEN>())
        else {
            return compute_at(frame, o);
        };
        let key = key_words(bytes);
        let tail_len = o.icrc - psn_at;
        let hit = self.shapes.iter().position(|s| {
            s.as_ref()
                .is_some_and(|s| same_key(&s.key, &key) && s.tail.len() == tail_len)
        });
        let i = match hit {
            Some(i) => i,
            None => self.remember(bytes, tail_len, o.icrc + ICRC_LEN),
        };
        let Some(s) = self.shapes[i].as_ref() else {
            return compute_at(frame, o);
        };
        s.crc(&frame[..o.icrc], bytes)
    }

    /// Remembers a new shape (or a responder's changed headers) in the next slot; its index.
    #[inline(never)]
    fn remember(&mut self, bytes: &[u8; KEY_LEN], tail_len: usize, end: usize) -> usize {
        let i = self.next;
        self.next = (i + 1) % SHAPES;
        self.shapes[i] = Some(Shape::new(bytes, tail_len, end, self.short));
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::{icrc, AckKind, AethRepr, FrameRepr};
    use crate::udp::UdpEndpoints;
    use proptest::prelude::*;

    fn frames() -> Vec<Vec<u8>> {
        let ep = UdpEndpoints::new([2; 6], [4; 6], [10, 0, 0, 2], [10, 0, 0, 1], 49152, 4791);
        let aeth = AethRepr {
            kind: AckKind::Ack { credits: 31 },
            msn: 7,
        };
        [
            FrameRepr::acknowledge(ep, 0x11, 5, aeth),
            FrameRepr::atomic_acknowledge(ep, 0x11, 6, aeth, 0xdead_beef),
            FrameRepr::cnp(ep, 0x11),
            FrameRepr::write_only(ep, 0x11, 5, true, 0x1000, 7, &[1, 2, 3, 4, 5]),
            FrameRepr::fetch_add(ep, 0x11, 6, false, 0x2000, 7, 9),
        ]
        .iter()
        .map(|f| {
            let mut buf = vec![0u8; f.buffer_len()];
            f.emit(&mut buf).unwrap();
            buf
        })
        .collect()
    }

    #[test]
    fn shapes_are_remembered_and_ids_added_back() {
        let mut c = ResponseIcrc::new();
        let base = frames();
        for id in [0u16, 1, 0x100, 0xFFFF, 0x1234] {
            for f in &base[..3] {
                let mut f = f.clone();
                f[14 + 4..14 + 6].copy_from_slice(&id.to_be_bytes());
                icrc::fill(&mut f).unwrap();
                assert_eq!(c.verify(&f), Ok(()), "id {id:#x}");
                f[50] ^= 1;
                assert_eq!(c.verify(&f), icrc::verify(&f));
                assert!(c.verify(&f).is_err());
            }
        }
        assert_eq!(c.shapes.iter().flatten().count(), 3);
    }

    proptest! {
        /// The short fold equals the general one for every tail under one block (and the fold chosen
        /// for a 16-byte tail, the one-block fold, too), whatever the bytes before the tail.
        #[test]
        fn short_fold_equals_tail_fold(bytes in proptest::array::uniform32(any::<u8>()), tail in 1usize..=16) {
            for short in [Crc32Short::detect(), Crc32Short::table_only()] {
                let general = TailCrc::new(short, tail).linear(&bytes);
                let block = bytes.last_chunk::<16>().unwrap();
                let folded = match Fold::new(short, tail) {
                    Fold::Block(s) => s.linear_block(block),
                    Fold::Short(s, keep) => short_linear(s, keep, block),
                    Fold::Tail => unreachable!("tails of 1..=16 bytes fold as one block"),
                };
                prop_assert_eq!(folded, general);
            }
        }

        /// A stream of responses and requests, each with a random IPv4 ID and up to three other bytes
        /// changed, cut or not, its iCRC recomputed or not, through one cache: every verdict (and every
        /// computed value in a mismatch) is `icrc::verify`'s.
        #[test]
        fn cached_verify_equals_verify(
            stream in proptest::collection::vec(
                (0usize..5, any::<u16>(), proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3), 0usize..3, any::<bool>()),
                1..40,
            ),
        ) {
            let base = frames();
            let mut c = ResponseIcrc::new();
            for (which, id, edits, cut, fix) in stream {
                let mut f = base[which].clone();
                f[14 + 4..14 + 6].copy_from_slice(&id.to_be_bytes());
                for (at, v) in edits {
                    let at = at % f.len();
                    f[at] = v;
                }
                f.truncate(f.len() - cut);
                if fix {
                    let _ = icrc::fill(&mut f);
                }
                prop_assert_eq!(c.verify(&f), icrc::verify(&f));
            }
        }
    }
}
