//! The fast path (`FastGenerator`) against the reference path (`Generator` + `FrameBuilder`): the same
//! frames, byte for byte, for every workload, header form, data and entry size, key distribution and seed.

use dta_pktgen::fast::FastGenerator;
use dta_pktgen::fattree::FatTree;
use dta_pktgen::frame::FrameBuilder;
use dta_pktgen::keys::KeyDist;
use dta_pktgen::workload::{Generator, Kind, Params, SketchParams};
use dta_protocol::dta::{HeaderForm, Opcode, ReportFormat, SketchOp};
use dta_protocol::udp::UdpEndpoints;

const KINDS: [Kind; 6] = [
    Kind::Keywrite,
    Kind::Keyincrement,
    Kind::Append,
    Kind::Postcard,
    Kind::Sketch,
    Kind::Mix,
];

fn endpoints() -> UdpEndpoints {
    UdpEndpoints::new(
        [2, 0, 0, 0, 0, 9],
        [2, 0, 0, 0, 0, 1],
        [10, 0, 0, 9],
        [198, 18, 0, 2],
        40041,
        40040,
    )
}

fn params(kind: Kind, keys: KeyDist, k: u32, seed: u64) -> Params {
    Params {
        kind,
        keys,
        redundancy: 2,
        keywrite_data_len: 4,
        append_entry_len: 4,
        tree: FatTree::new(k).unwrap(),
        counter: 7,
        sketch: SketchParams {
            id: 3,
            op: SketchOp::Max,
            rows: 4,
            columns: 5,
            reporters: 3,
        },
        seed,
    }
}

/// Compares `frames` frames; returns the per-opcode counts the fast path reports.
fn compare(p: Params, fmt: ReportFormat, frames: u64) -> Vec<(Opcode, u64)> {
    let what = format!("{:?} {:?} {fmt:?} seed {}", p.kind, p.keys_kind(), p.seed);
    let mut slow = Generator::new(p.clone());
    let mut builder = FrameBuilder::new(endpoints(), fmt);
    let mut fast = FastGenerator::new(p, endpoints(), fmt).unwrap();
    let mut want = Vec::new();
    let mut got = [0u8; 256];
    for i in 0..frames {
        let (report, seq) = slow.next_report();
        builder.build(&report, seq, &mut want).unwrap();
        let n = fast.next_frame(&mut got).unwrap();
        assert_eq!(&got[..n], &want[..], "{what}: frame {i}");
    }
    assert_eq!(fast.index(), frames);
    fast.per_opcode().collect()
}

trait KeysKind {
    fn keys_kind(&self) -> &'static str;
}

impl KeysKind for Params {
    fn keys_kind(&self) -> &'static str {
        match self.keys {
            KeyDist::Uniform { .. } => "uniform",
            KeyDist::Zipf { .. } => "zipf",
        }
    }
}

#[test]
fn every_workload_and_format_matches_the_reference_builder() {
    let forms = [HeaderForm::Seq, HeaderForm::Compact];
    for kind in KINDS {
        for (f, form) in forms.iter().enumerate() {
            for (d, e) in [(4, 4), (12, 1), (28, 8), (4, 12), (28, 3)] {
                let fmt = ReportFormat::new(*form, d, e).unwrap();
                let keys = if (f + d) % 2 == 0 {
                    KeyDist::uniform(5, 1_000_000)
                } else {
                    KeyDist::zipf(100, 5000, 1.1)
                };
                let mut p = params(kind, keys, [4, 8, 6][d % 3], 1 + d as u64 * 7 + f as u64);
                p.keywrite_data_len = d;
                p.append_entry_len = e;
                compare(p, fmt, 3000);
            }
        }
    }
}

/// Long runs of the defaults the bench uses (seqnums and the event number wrap past 256 many times).
#[test]
fn long_runs_of_the_bench_workloads_match() {
    for kind in [Kind::Keywrite, Kind::Append, Kind::Mix] {
        let p = params(kind, KeyDist::uniform(0, 1_000_000), 8, 1);
        let counts = compare(p, ReportFormat::default(), 200_000);
        assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), 200_000);
        if kind == Kind::Mix {
            assert_eq!(counts.len(), 3);
            assert!(counts.iter().all(|(_, n)| *n > 60_000), "{counts:?}");
        }
    }
}

#[test]
fn a_short_buffer_is_refused_without_drawing() {
    let p = params(Kind::Keywrite, KeyDist::uniform(0, 10), 4, 3);
    let fmt = ReportFormat::default();
    let mut fast = FastGenerator::new(p.clone(), endpoints(), fmt).unwrap();
    let mut small = [0u8; 20];
    assert_eq!(fast.next_frame(&mut small), None);
    assert_eq!(fast.index(), 0);
    compare(p, fmt, 10);
}

#[test]
fn an_impossible_report_fails_up_front() {
    let mut p = params(Kind::Keywrite, KeyDist::uniform(0, 10), 4, 3);
    p.redundancy = 0;
    let fmt = ReportFormat::default();
    // The reference builder refuses such a report too.
    let mut slow = Generator::new(p.clone());
    let (r, s) = slow.next_report();
    assert!(FrameBuilder::new(endpoints(), fmt)
        .build(&r, s, &mut Vec::new())
        .is_err());
    assert!(FastGenerator::new(p, endpoints(), fmt).is_err());
}
