use super::*;
use crate::primitives::keywrite::KeyWriteReport;
use crate::primitives::{FlushMode, Timed};
use dta_protocol::control::{ResponderQp, CONTROL_VERSION};
use dta_protocol::dta::SketchOp;
use dta_protocol::hash::key_checksum;
use dta_protocol::layout::{AppendGeometry, KeyWriteGeometry, SketchGeometry};

/// Two Append lists, two sketches and a Key-Write region, with a small queue so that reports are
/// refused for room too.
fn pair() -> (Collector, Collector) {
    let region = |id, va, geometry| Region {
        id,
        va,
        rkey: 7,
        geometry,
    };
    let w = Welcome {
        version: CONTROL_VERSION,
        mac: [2, 0, 0, 0, 0, 2],
        ip: [198, 18, 0, 2],
        qps: vec![ResponderQp {
            qpn: 0x11,
            peer_qpn: 0x100,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 256,
        regions: vec![
            region(
                0,
                0x10_0000,
                Geometry::KeyWrite(KeyWriteGeometry::new(1 << 10, 8, 4).unwrap()),
            ),
            region(
                3,
                0x20_0000,
                Geometry::Append(AppendGeometry::new(48, 4, 16).unwrap()),
            ),
            region(
                9,
                0x30_0000,
                Geometry::Append(AppendGeometry::new(64, 4, 4).unwrap()),
            ),
            region(
                1,
                0x40_0000,
                Geometry::Sketch(SketchGeometry::new(2, 8).unwrap()),
            ),
            region(
                4,
                0x50_0000,
                Geometry::Sketch(SketchGeometry::new(1, 100).unwrap()),
            ),
        ],
        append_heads: Vec::new(),
    };
    let mut cfg = Config::default();
    cfg.requester.queue_capacity = 12;
    cfg.sketch.reporters = 2;
    cfg.sketch.column_batch = 4;
    let a = Collector::new(&cfg, 0, &w, Instant(0)).unwrap();
    let b = Collector::new(&cfg, 0, &w, Instant(0)).unwrap();
    (a, b)
}

/// Every frame each collector's QP has ready, which must be the same bytes; returns how many.
fn drain(a: &mut Collector, b: &mut Collector, now: Instant) -> usize {
    let (mut ca, mut cb) = (Counters::default(), Counters::default());
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    let mut n = 0;
    loop {
        let (sa, sb) = (
            a.qp.poll_transmit(now, &mut ca, &mut fa),
            b.qp.poll_transmit(now, &mut cb, &mut fb),
        );
        assert_eq!(sa, sb);
        if !sa {
            break;
        }
        assert_eq!(fa, fb);
        n += 1;
    }
    a.qp.assume_delivered();
    b.qp.assume_delivered();
    n
}

/// A small xorshift: many varied reports without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}

/// The by-index paths (`key_write`, `append`, `sketch`) give what `offer` gives, report for report
/// (outcomes, refusals and their reasons, counters) and frame for frame, timer flushes included.
#[test]
fn fast_paths_equal_offer() {
    let (mut a, mut b) = pair();
    let (mut ca, mut cb) = (Counters::default(), Counters::default());
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut columns = [[0u16; 3]; 5];
    // Reports taken per kind, and frames compared: the run must exercise every path.
    let (mut taken, mut frames) = ([0u32; 3], 0);
    for step in 0..20_000u64 {
        let now = Instant(step * 100);
        let x = rng.next();
        let data = x.to_be_bytes();
        let long = [x as u8; 12];
        // Mostly the configured sizes, sometimes not.
        let bytes: &[u8] = match x % 23 {
            0 => &long,
            1 => &data[..3],
            _ => &data,
        };
        match rng.next() % 3 {
            0 => {
                let r = KeyWriteRepr {
                    redundancy: (x % 6) as u8,
                    key: rng.next(),
                    data: bytes,
                };
                let checksum = key_checksum(r.key);
                // The engine's path and its model, in turn.
                let fast = if step % 2 == 0 {
                    a.key_write(&r, checksum)
                } else {
                    a.key_write_unrolled(&r, checksum)
                }
                .map(|()| Outcome::Accepted);
                let kw = KeyWriteReport { repr: r, checksum };
                let slow = b.offer(now, |p| &mut p.key_write, &kw, &mut cb);
                assert_eq!(fast, slow, "step {step}");
                taken[0] += u32::from(fast.is_ok());
            }
            1 => {
                let list_id = [3, 9, 5][(x % 3) as usize];
                let r = AppendRepr {
                    list_id,
                    data: bytes,
                };
                let fast = match a.regions.append_index(list_id) {
                    Some(k) => a.append(now, k, &r, &mut ca),
                    None => Err(DropReason::NoRegion),
                };
                let slow = b.offer(now, |p| &mut p.append, &r, &mut cb);
                assert_eq!(fast, slow, "step {step}");
                taken[1] += u32::from(fast.is_ok());
            }
            _ => {
                let id = [1u8, 4, 2][(x % 3) as usize];
                let reporter = (rng.next() % 3) as u16;
                let next = columns[usize::from(id)][usize::from(reporter)];
                // Mostly the next column, sometimes a repeat or a skip.
                let column = match rng.next() % 9 {
                    0 => next.wrapping_sub(1),
                    1 => next + 2,
                    _ => next,
                };
                let counters = [x as u8; 8];
                // Sketch 1 has two rows, the others one; sometimes the other count.
                let rows = usize::from(id == 1) + 1;
                let rows = if x % 31 == 0 { 3 - rows } else { rows };
                let r = SketchRepr {
                    sketch_id: id,
                    op: if x % 41 == 0 {
                        SketchOp::Max
                    } else {
                        SketchOp::Sum
                    },
                    reporter_id: reporter,
                    column,
                    counters: &counters[..4 * rows],
                };
                let fast = match a.regions.sketch_index(u32::from(id)) {
                    Some(k) => a.sketch(now, k, &r, &mut ca),
                    None => Err(DropReason::NoRegion),
                };
                let slow = b.offer(now, |p| &mut p.sketch, &r, &mut cb);
                assert_eq!(fast, slow, "step {step}");
                if fast == Ok(Outcome::Accepted) {
                    taken[2] += 1;
                    columns[usize::from(id)][usize::from(reporter)] =
                        (column + 1) % if id == 1 { 8 } else { 100 };
                }
            }
        }
        if rng.next() % 7 == 0 {
            frames += drain(&mut a, &mut b, now);
        }
        if rng.next() % 97 == 0 {
            let mode = if rng.next() % 2 == 0 {
                FlushMode::All
            } else {
                FlushMode::Due
            };
            for (c, counters) in [(&mut a, &mut ca), (&mut b, &mut cb)] {
                let mut out = Sink {
                    qp: &mut c.qp,
                    mtu: c.mtu,
                    counters,
                };
                c.prims.append.flush(now, mode, &c.regions, &mut out);
                c.prims.sketch.flush(now, mode, &c.regions, &mut out);
            }
            frames += drain(&mut a, &mut b, now);
        }
    }
    assert!(
        taken.iter().all(|&n| n > 1000) && frames > 5000,
        "{taken:?} {frames}"
    );
    assert_eq!(ca, cb);
    assert_eq!(a.prims.append.poll_timeout(), b.prims.append.poll_timeout());
    assert_eq!(a.prims.sketch.poll_timeout(), b.prims.sketch.poll_timeout());
}
