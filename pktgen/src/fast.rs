//! The generator's fast path, in the manner of TRex's field engine: one pre-built frame per report type,
//! copied and patched in place (key, data, list, hop, counters, seqnum) straight into the output buffer.
//!
//! [`FastGenerator`] yields byte for byte the frames that [`Generator`](crate::workload::Generator) and
//! [`FrameBuilder`](crate::frame::FrameBuilder) build for the same parameters: it draws from the same
//! [`SplitMix64`] in the same order through the same [`KeyDist`](crate::keys::KeyDist) and
//! [`FatTree`](crate::fattree::FatTree) code, and only the bytes that differ between two frames of one
//! report type are written per frame. Every report of a type has the same length (the sizes are fixed by
//! the format), so the IPv4 header, its checksum included, never changes; the UDP checksum is 0. It
//! allocates nothing per frame. `tests/fast_path.rs` compares the two for every workload.

use dta_protocol::dta::{Opcode, ReportFormat};
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};
use dta_reporter::Report;

use crate::fattree::{PathDivisors, HOPS};
use crate::frame::FrameBuilder;
use crate::keys::FastKeys;
use crate::rng::SplitMix64;
use crate::workload::{Kind, Params};

/// The report types a frame can be, in the order of [`Template`] slots.
const TYPES: [Kind; 5] = [
    Kind::Keywrite,
    Kind::Keyincrement,
    Kind::Append,
    Kind::Postcard,
    Kind::Sketch,
];

/// The index of `kind` in [`TYPES`] (a mix resolves to a type before it is looked up).
#[inline]
const fn type_slot(kind: Kind) -> usize {
    match kind {
        Kind::Keywrite | Kind::Mix => 0,
        Kind::Keyincrement => 1,
        Kind::Append => 2,
        Kind::Postcard => 3,
        Kind::Sketch => 4,
    }
}

fn opcode(kind: Kind) -> Opcode {
    match kind {
        Kind::Keywrite | Kind::Mix => Opcode::KeyWrite,
        Kind::Keyincrement => Opcode::KeyIncrement,
        Kind::Append => Opcode::Append,
        Kind::Postcard => Opcode::Postcard,
        Kind::Sketch => Opcode::SketchMerge,
    }
}

/// A template's first bytes are copied as one fixed-size block: two vector moves instead of a call to
/// memcpy, and enough for every report type at the default sizes. Output buffers have room for at least
/// this many bytes.
const HEAD: usize = 64;

/// A frame of one report type with every per-frame field zero, and where those fields are.
#[derive(Debug, Clone)]
struct Template {
    /// The frame's first [`HEAD`] bytes, zero padded.
    head: [u8; HEAD],
    /// The rest of the frame, if it is longer.
    tail: Vec<u8>,
    /// The frame's length.
    len: usize,
    /// The seqnum's offset (Seq form only).
    seq_at: Option<usize>,
    /// Where the report body (after the base header) starts.
    body: usize,
}

/// Builds frames like `Generator` + `FrameBuilder`, by patching templates.
#[derive(Debug, Clone)]
pub struct FastGenerator {
    p: Params,
    keys: FastKeys,
    path: PathDivisors,
    rng: SplitMix64,
    index: u64,
    seq: [u8; 7],
    flow: (u32, [u32; HOPS]),
    templates: [Option<Template>; TYPES.len()],
    /// Switch IDs a Key-Write carries: D / 4, at most a whole path.
    keywrite_hops: usize,
    /// The longest template: the room every call needs.
    max_len: usize,
    /// Frames built per report type.
    counts: [u64; TYPES.len()],
}

/// Why a fast generator cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum FastError {
    /// A report of the workload does not fit its format (what the slow path would fail with at the first
    /// frame of that type).
    #[error("building the {kind:?} template: {source}")]
    Template {
        /// The report type.
        kind: Kind,
        /// What the builder said.
        source: dta_reporter::Error,
    },
}

impl FastGenerator {
    /// A generator at frame 0 of `p`, framing reports in `fmt` with `endpoints`.
    pub fn new(p: Params, endpoints: UdpEndpoints, fmt: ReportFormat) -> Result<Self, FastError> {
        let mut builder = FrameBuilder::new(endpoints, fmt);
        let used: &[Kind] = match p.kind {
            Kind::Mix => &[Kind::Keywrite, Kind::Keyincrement, Kind::Append],
            Kind::Keywrite => &[Kind::Keywrite],
            Kind::Keyincrement => &[Kind::Keyincrement],
            Kind::Append => &[Kind::Append],
            Kind::Postcard => &[Kind::Postcard],
            Kind::Sketch => &[Kind::Sketch],
        };
        let mut templates: [Option<Template>; TYPES.len()] = Default::default();
        for &kind in used {
            let report = zero_report(&p, kind);
            let mut bytes = Vec::new();
            builder
                .build(&report, 0, &mut bytes)
                .map_err(|source| FastError::Template { kind, source })?;
            let len = bytes.len();
            let mut head = [0u8; HEAD];
            let n = len.min(HEAD);
            head[..n].copy_from_slice(&bytes[..n]);
            templates[type_slot(kind)] = Some(Template {
                head,
                tail: bytes.split_off(n),
                len,
                seq_at: (fmt.form == dta_protocol::dta::HeaderForm::Seq).then_some(HEADERS_LEN + 1),
                body: HEADERS_LEN + fmt.form.header_len(),
            });
        }
        let max_len = templates
            .iter()
            .flatten()
            .map(|t| t.len.max(HEAD))
            .max()
            .unwrap_or(HEAD);
        Ok(FastGenerator {
            keys: FastKeys::new(&p.keys),
            path: p.tree.divisors(),
            rng: SplitMix64::new(p.seed),
            keywrite_hops: (p.keywrite_data_len / 4).min(HOPS),
            p,
            index: 0,
            seq: [0; 7],
            flow: (0, [0; HOPS]),
            templates,
            max_len,
            counts: [0; TYPES.len()],
        })
    }

    /// Frames generated so far.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The room [`next_frame`](Self::next_frame) needs: the longest frame, and at least 64 bytes.
    pub fn max_frame_len(&self) -> usize {
        self.max_len
    }

    /// Frames built so far per opcode (only those the workload sends).
    pub fn per_opcode(&self) -> impl Iterator<Item = (Opcode, u64)> + '_ {
        TYPES
            .iter()
            .zip(&self.counts)
            .filter(|(k, _)| self.templates[type_slot(**k)].is_some())
            .map(|(k, n)| (opcode(*k), *n))
    }

    /// Writes the next frame at the start of `out` and returns its length, or returns `None` without
    /// drawing anything if `out` is shorter than [`max_frame_len`](Self::max_frame_len).
    #[inline]
    pub fn next_frame(&mut self, out: &mut [u8]) -> Option<usize> {
        if out.len() < self.max_len {
            return None;
        }
        let kind = match self.p.kind {
            Kind::Mix => match self.rng.below(3) {
                0 => Kind::Keywrite,
                1 => Kind::Keyincrement,
                _ => Kind::Append,
            },
            k => k,
        };
        let slot = type_slot(kind);
        let t = self.templates[slot].as_ref()?;
        out[..HEAD].copy_from_slice(&t.head);
        if !t.tail.is_empty() {
            out[HEAD..t.len].copy_from_slice(&t.tail);
        }
        let f = &mut out[..t.len];
        let (b, i) = (t.body, self.index);
        let p = &self.p;
        let rng = &mut self.rng;
        let keys = &self.keys;
        match kind {
            Kind::Keywrite => {
                put32(f, b + 1, keys.sample(rng));
                if self.keywrite_hops == 1 {
                    put32(f, b + 5, p.tree.first_hop_by(rng, &self.path));
                } else {
                    let path = p.tree.path_by(rng, &self.path);
                    for (j, id) in path.iter().take(self.keywrite_hops).enumerate() {
                        put32(f, b + 5 + 4 * j, *id);
                    }
                }
            }
            Kind::Keyincrement => put32(f, b + 1, keys.sample(rng)),
            Kind::Append => {
                put32(f, b, keys.sample(rng));
                // The event number, big-endian, right-aligned in E bytes.
                let end = b + 4 + p.append_entry_len;
                let be = i.to_be_bytes();
                // Fixed-size copies for the usual entry sizes (a move each, not a memcpy call).
                match p.append_entry_len {
                    4 => f[end - 4..end].copy_from_slice(&be[4..]),
                    e if e >= 8 => f[end - 8..end].copy_from_slice(&be),
                    e => f[end - e..end].copy_from_slice(&be[8 - e..]),
                }
            }
            Kind::Postcard => {
                let hop = (i % HOPS as u64) as usize;
                if hop == 0 {
                    let key = keys.sample(rng);
                    self.flow = (key, p.tree.path_by(rng, &self.path));
                }
                put32(f, b, self.flow.0);
                f[b + 4] = hop as u8 + 1;
                put32(f, b + 5, self.flow.1[hop]);
            }
            Kind::Sketch => {
                let s = p.sketch;
                let reporters = u64::from(s.reporters.max(1));
                put16(f, b + 2, (i % reporters) as u16);
                put16(
                    f,
                    b + 4,
                    ((i / reporters) % u64::from(s.columns.max(1))) as u16,
                );
                for r in 0..usize::from(s.rows.max(1)) {
                    put32(f, b + 8 + 4 * r, rng.below(1024) as u32);
                }
            }
            Kind::Mix => {}
        }
        self.index += 1;
        let s = &mut self.seq[usize::from(opcode(kind).code())];
        if let Some(at) = t.seq_at {
            f[at] = *s;
        }
        *s = s.wrapping_add(1);
        self.counts[slot] += 1;
        Some(f.len())
    }
}

#[inline]
fn put32(f: &mut [u8], at: usize, v: u32) {
    f[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[inline]
fn put16(f: &mut [u8], at: usize, v: u16) {
    f[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// A report of `kind` with the workload's fixed fields and every per-frame field zero.
fn zero_report(p: &Params, kind: Kind) -> Report {
    match kind {
        Kind::Keywrite | Kind::Mix => Report::KeyWrite {
            redundancy: p.redundancy,
            key: 0,
            data: vec![0; p.keywrite_data_len],
        },
        Kind::Keyincrement => Report::KeyIncrement {
            redundancy: p.redundancy,
            key: 0,
            counter: p.counter,
        },
        Kind::Append => Report::Append {
            list_id: 0,
            data: vec![0; p.append_entry_len],
        },
        Kind::Postcard => Report::Postcard {
            key: 0,
            hop: 1,
            data: 0,
        },
        Kind::Sketch => Report::Sketch {
            sketch_id: p.sketch.id,
            op: p.sketch.op,
            reporter_id: 0,
            column: 0,
            counters: vec![0; usize::from(p.sketch.rows.max(1))],
        },
    }
}
