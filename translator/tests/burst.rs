//! `Engine::handle_frames` (a receive burst in one call) against `Engine::handle_frame` on each frame:
//! the same frames forwarded, the same counters, the same frames sent, for a random mix of reports of
//! every kind (malformed and refused ones, sequence gaps and NACKs included), RoCE responses and junk.

mod support;

use dta_protocol::control::Welcome;
use dta_protocol::dta::{
    AppendRepr, Body, HeaderForm, KeyIncrementRepr, KeyWriteRepr, PostcardPathLenRepr,
    PostcardRepr, ReportFormat, ReportRepr, SketchOp, SketchRepr,
};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_protocol::roce::AckKind;
use dta_protocol::udp::HEADERS_LEN;
use dta_translator::config::KeyRouting;
use dta_translator::{Config, Engine, Instant};
use support::*;

fn engine() -> Engine {
    let mut c = Config::default();
    c.sketch.reporters = 2;
    c.requester.queue_capacity = 24;
    Engine::new(c, &[welcome()], Instant(0)).unwrap()
}

/// A report of a random kind (Key-Write only with `key_writes`) with random (sometimes refused) fields,
/// sometimes retransmittable.
fn random_report(rng: &mut Rng, seq: &mut [u8; 4], key_writes: bool) -> Vec<u8> {
    let reporter_no = rng.below(4) as usize;
    let x = rng.next();
    let data = (x as u32).to_be_bytes();
    let counters = x.to_be_bytes();
    let kind = if key_writes { 0 } else { rng.below(6) };
    let body = match kind {
        0 => Body::KeyWrite(KeyWriteRepr {
            redundancy: 1 + rng.below(8) as u8,
            key: x as u32,
            data: &data,
        }),
        1 => Body::Append(AppendRepr {
            list_id: [3, 3, 3, 4][rng.below(4) as usize],
            data: &data,
        }),
        2 => Body::KeyIncrement(KeyIncrementRepr {
            redundancy: 1 + rng.below(8) as u8,
            key: x as u32,
            counter: x >> 8,
        }),
        3 => Body::Postcard(PostcardRepr {
            key: (x % 7) as u32,
            hop: 1 + rng.below(8) as u8,
            data: x as u32,
        }),
        4 => Body::PostcardPathLen(PostcardPathLenRepr {
            key: (x % 7) as u32,
            hop: 1,
            path_len: 1 + rng.below(3) as u8,
            data: x as u32,
        }),
        _ => Body::SketchMerge(SketchRepr {
            sketch_id: [1, 1, 2][rng.below(3) as usize],
            op: SketchOp::Sum,
            reporter_id: rng.below(3) as u16,
            column: rng.below(8) as u16,
            counters: &counters,
        }),
    };
    let retransmit = rng.chance(300);
    // Mostly the next seqnum of this reporter, sometimes a gap or a repeat.
    let s = &mut seq[reporter_no];
    match rng.below(10) {
        0 => *s = s.wrapping_add(2),
        1 => *s = s.wrapping_sub(1),
        _ => *s = s.wrapping_add(1),
    }
    let key_write = matches!(body, Body::KeyWrite(_));
    let mut f = report(&reporter(1 + reporter_no as u8), body, *s, retransmit);
    // A Key-Write redundancy out of range (its byte follows the 3-byte base header).
    if key_write && rng.chance(50) {
        f[HEADERS_LEN + 3] = [0, 9][rng.below(2) as usize];
    }
    // Sometimes malformed: cut short or a bent byte.
    match rng.below(40) {
        0 => f.truncate(rng.below(f.len() as u64) as usize),
        1 => {
            let at = rng.below(f.len() as u64) as usize;
            f[at] ^= 1 << rng.below(8);
        }
        _ => {}
    }
    f
}

/// Any frame the engine may meet: reports, responses to PSNs near the ones sent, CNPs, junk. With
/// `key_writes`, most are Key-Write reports, in runs (which `handle_frames` takes in one call).
fn random_frame(rng: &mut Rng, seq: &mut [u8; 4], key_writes: bool) -> Vec<u8> {
    if key_writes && rng.chance(850) {
        return random_report(rng, seq, true);
    }
    match rng.below(20) {
        0..=14 => random_report(rng, seq, false),
        15 | 16 => response(
            rng.below(64) as u32,
            AckKind::Ack { credits: 31 },
            rng.chance(300).then_some(7),
        ),
        17 => cnp(),
        _ => (0..rng.below(80)).map(|_| rng.next() as u8).collect(),
    }
}

#[test]
fn a_burst_equals_frame_by_frame() {
    let (mut one, mut burst) = (engine(), engine());
    let mut rng = Rng::new(0xD7A_B005);
    let mut seq = [0u8; 4];
    for round in 0..3000u64 {
        let now = Instant(round * 700);
        let key_writes = rng.chance(300);
        let frames: Vec<Vec<u8>> = (0..1 + rng.below(40))
            .map(|_| random_frame(&mut rng, &mut seq, key_writes))
            .collect();
        let forwarded_one: Vec<&[u8]> = frames
            .iter()
            .map(Vec::as_slice)
            .filter(|f| one.handle_frame(now, f) == dta_translator::Handled::NotForUs)
            .collect();
        let mut forwarded_burst = Vec::new();
        burst.handle_frames(now, frames.iter().map(Vec::as_slice), |f| {
            forwarded_burst.push(f)
        });
        assert_eq!(forwarded_one, forwarded_burst, "round {round}");
        assert_eq!(one.counters(), burst.counters(), "round {round}");
        if rng.chance(500) {
            assert_eq!(
                drain(&mut one, now),
                drain(&mut burst, now),
                "round {round}"
            );
        }
        if rng.chance(100) {
            one.handle_timeout(now);
            burst.handle_timeout(now);
        }
        assert_eq!(one.poll_timeout(), burst.poll_timeout());
    }
    let c = one.counters();
    // The mix reached every outcome the test means to compare.
    assert!(c.reports_in.iter().all(|&n| n > 100), "{:?}", c.reports_in);
    assert!(
        c.drops.iter().filter(|&&n| n > 0).count() >= 5,
        "{:?}",
        c.drops
    );
    assert!(c.dta_nacks_sent > 0 && c.not_for_us > 0 && c.acks > 0);
}

/// One shape of a Key-Write run: the report format's form and data size, the region's entry size, how
/// many collectors and how reports are routed among them, and whether sequence tracking is on.
struct RunShape {
    form: HeaderForm,
    data_len: usize,
    entry_size: u32,
    collectors: u8,
    routing: KeyRouting,
    tracking: bool,
}

/// An engine for `s`: each collector with the support's regions, its Key-Write region of `s.entry_size`.
fn run_engine(s: &RunShape) -> Engine {
    let mut c = Config::default();
    c.report.dta_header = s.form;
    c.report.keywrite_data_len = s.data_len;
    c.routing.keys = s.routing;
    c.sequence.enabled = s.tracking;
    c.requester.queue_capacity = 24;
    let welcomes: Vec<Welcome> = (0..s.collectors)
        .map(|i| {
            let mut w = welcome();
            w.ip[3] += i;
            w.mac[5] += i;
            for r in &mut w.regions {
                if let Geometry::KeyWrite(_) = r.geometry {
                    r.geometry =
                        Geometry::KeyWrite(KeyWriteGeometry::new(256, s.entry_size, 8).unwrap());
                }
            }
            w
        })
        .collect();
    Engine::new(c, &welcomes, Instant(0)).unwrap()
}

/// A Key-Write report for `s` to one of its collectors, sometimes retransmittable (tracked with tracking
/// on), sometimes of a redundancy out of range, cut short or bent; or now and then a stray response or
/// junk.
fn run_frame(rng: &mut Rng, s: &RunShape, seq: &mut u8) -> Vec<u8> {
    if rng.chance(60) {
        // (No CNPs: their rate cap would stall the window at this test's clock.)
        return match rng.below(2) {
            0 => response(rng.below(64) as u32, AckKind::Ack { credits: 31 }, None),
            _ => (0..rng.below(80)).map(|_| rng.next() as u8).collect(),
        };
    }
    let fmt = ReportFormat {
        form: s.form,
        keywrite_data_len: s.data_len,
        ..ReportFormat::default()
    };
    let x = rng.next();
    let data: Vec<u8> = (0..s.data_len).map(|i| (x >> (i % 8)) as u8).collect();
    let body = Body::KeyWrite(KeyWriteRepr {
        redundancy: 1 + rng.below(8) as u8,
        key: x as u32,
        data: &data,
    });
    *seq = seq.wrapping_add(1 + u8::from(rng.chance(100)));
    let mut r = ReportRepr::new(body, s.form, *seq);
    r.base.retransmit = rng.chance(100);
    let mut payload = vec![0u8; r.buffer_len(&fmt)];
    r.emit(&mut payload, &fmt).unwrap();
    let mut to = reporter(1);
    to.dst_ip[3] += rng.below(u64::from(s.collectors) + 1) as u8;
    let mut f = vec![0u8; HEADERS_LEN + payload.len()];
    to.emit_frame(&mut f, &payload).unwrap();
    match rng.below(60) {
        0 => f.truncate(rng.below(f.len() as u64) as usize),
        1 => {
            let at = rng.below(f.len() as u64) as usize;
            f[at] ^= 1 << rng.below(8);
        }
        // The redundancy byte (after the base header) out of range.
        2 => f[HEADERS_LEN + s.form.header_len() + 1] = 9,
        _ => {}
    }
    f
}

/// `handle_frames` takes runs of Key-Write reports through a loop specialised on the data size when one
/// collector takes them all, and through the general routing otherwise: in every such shape it equals
/// `handle_frame` frame by frame. (A region whose entries do not fit the format's data is refused when
/// the engine is built.)
#[test]
fn key_write_runs_equal_frame_by_frame_in_every_shape() {
    use HeaderForm::{Compact, Seq};
    use KeyRouting::{DestinationIp, KeyHash};
    let shape = |form, data_len, entry_size, collectors, routing, tracking| RunShape {
        form,
        data_len,
        entry_size,
        collectors,
        routing,
        tracking,
    };
    let shapes = [
        shape(Seq, 4, 8, 1, KeyHash, false),
        shape(Seq, 12, 16, 1, KeyHash, true),
        shape(Compact, 28, 32, 1, KeyHash, false),
        shape(Compact, 4, 8, 1, DestinationIp, false),
        shape(Seq, 4, 8, 2, KeyHash, true),
        shape(Seq, 12, 16, 3, DestinationIp, false),
    ];
    for (k, s) in shapes.iter().enumerate() {
        let (mut one, mut burst) = (run_engine(s), run_engine(s));
        let mut rng = Rng::new(0x5EED_0000 + k as u64);
        let mut seq = 0u8;
        for round in 0..400u64 {
            let now = Instant(round * 900);
            let frames: Vec<Vec<u8>> = (0..1 + rng.below(48))
                .map(|_| run_frame(&mut rng, s, &mut seq))
                .collect();
            for f in &frames {
                one.handle_frame(now, f);
            }
            burst.handle_frames(now, frames.iter().map(Vec::as_slice), |_| {});
            let at = format!("shape {k} round {round}");
            assert_eq!(one.counters(), burst.counters(), "{at}");
            let sent = drain(&mut one, now);
            assert_eq!(sent, drain(&mut burst, now), "{at}");
            // The first collector answers (the others' windows fill, and their reports are refused).
            answer_all(&mut [&mut one, &mut burst], now, &sent);
        }
        let c = one.counters();
        let kw = c.reports_in[0];
        assert!(kw > 2000, "shape {k}: {kw} Key-Write reports {c:?}");
        assert!(c.ops_out[0] > 2000, "shape {k}: {c:?}");
    }
}
