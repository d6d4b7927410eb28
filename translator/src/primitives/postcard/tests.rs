use super::*;
use crate::config::{RateConfig, RequesterConfig};
use crate::counters::Counters;
use dta_protocol::roce::ROCEV2_UDP_PORT;
use dta_protocol::udp::UdpEndpoints;
use dta_rc::frames::FrameBuilder;
use dta_rc::requester::{Requester, RequesterParams};

fn qp() -> Requester {
    let ep = UdpEndpoints::new([2; 6], [3; 6], [1; 4], [2; 4], 1, ROCEV2_UDP_PORT);
    let params = RequesterParams {
        cfg: RequesterConfig::default(),
        rate: RateConfig::default(),
        max_atomics: 16,
        start_psn: 0,
    };
    Requester::new(params, FrameBuilder::new(ep, 0x11), Instant(0))
}

/// Every frame queued so far on `qa` and `qb`: the same bytes, in the same order.
fn same_frames(qa: &mut Requester, qb: &mut Requester, c: &mut Counters, what: &str) -> usize {
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    let mut n = 0;
    loop {
        let (sa, sb) = (
            qa.poll_transmit(Instant(0), c, &mut fa),
            qb.poll_transmit(Instant(0), c, &mut fb),
        );
        assert_eq!(sa, sb, "{what}");
        if !sa {
            break;
        }
        assert_eq!(fa, fb, "{what}");
        n += 1;
    }
    qa.assume_delivered();
    qb.assume_delivered();
    n
}

/// The cache writes what the former one wrote (the same frames, counters and outcomes) for random
/// postcards: colliding and evicting flows, paths of known and unknown length, bad hops, every B,
/// cache sizes that are and are not powers of two, redundancy 1 to 3. Timers run two ways: both
/// caches flushed together at random instants (due or not), or each flushed only when its own
/// `poll_timeout` says it is due (as the bench, the daemon and the simulator do), the former one
/// then also at its stale entries' deadlines. The current deadline is always the former's earliest
/// live one.
#[test]
fn writes_what_the_former_cache_wrote() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let (mut written, mut seen) = (0, Counters::default());
    for case in 0..48u64 {
        let hops = 1 + (case % 8) as u8;
        let size = [1usize, 3, 4, 16, 5, 64][(case % 6) as usize];
        let redundancy = 1 + (case % 3) as u8;
        let own_timers = case % 2 == 0;
        let idle = Duration::from_nanos(1000);
        let g = PostcardGeometry::new(256, hops, 3).unwrap();
        let region = Region {
            id: 0,
            va: 0x10_0000,
            rkey: 7,
            geometry: Geometry::Postcarding(g),
        };
        let regions = Regions {
            postcard: Some(region),
            ..Regions::default()
        };
        let mut a = PostcardCache::new(size, idle, redundancy);
        let mut b = former::Former::new(size, idle, redundancy);
        let (mut qa, mut qb) = (qp(), qp());
        let (mut ca, mut cb, mut c) = (
            Counters::default(),
            Counters::default(),
            Counters::default(),
        );
        let keys = 1 + rand(3 * size as u64 + 2);
        let mut now = Instant(0);
        for step in 0..3000 {
            let what = format!("case {case} step {step}");
            now = now + Duration::from_nanos(rand(300));
            match rand(20) {
                0 if !own_timers => {
                    let mut oa = Sink {
                        qp: &mut qa,
                        mtu: 1024,
                        counters: &mut ca,
                    };
                    a.flush(now, FlushMode::Due, &regions, &mut oa);
                    let mut ob = Sink {
                        qp: &mut qb,
                        mtu: 1024,
                        counters: &mut cb,
                    };
                    b.flush(now, FlushMode::Due, &regions, &mut ob);
                }
                1 if rand(20) == 0 => {
                    let mut oa = Sink {
                        qp: &mut qa,
                        mtu: 1024,
                        counters: &mut ca,
                    };
                    a.flush(now, FlushMode::All, &regions, &mut oa);
                    let mut ob = Sink {
                        qp: &mut qb,
                        mtu: 1024,
                        counters: &mut cb,
                    };
                    b.flush(now, FlushMode::All, &regions, &mut ob);
                }
                _ => {
                    let path_len = match rand(10) {
                        0 => rand(u64::from(hops) + 2) as u8,
                        1..=4 => hops,
                        _ => 1 + rand(u64::from(hops)) as u8,
                    };
                    let hop = match rand(10) {
                        0 => rand(u64::from(hops) + 2) as u8,
                        _ => 1 + rand(u64::from(path_len.max(1))) as u8,
                    };
                    let p = Postcard {
                        key: (rand(keys) as u32).wrapping_mul(0x9E37_79B1),
                        hop,
                        path_len,
                        data: match rand(4) {
                            0 => POSTCARD_BLANK,
                            _ => rand(1 << 32) as u32,
                        },
                        opcode: Opcode::Postcard,
                        length_known: rand(3) != 0,
                    };
                    let mut oa = Sink {
                        qp: &mut qa,
                        mtu: 1024,
                        counters: &mut ca,
                    };
                    let ra = a.handle(now, &p, &region, &mut oa);
                    let mut ob = Sink {
                        qp: &mut qb,
                        mtu: 1024,
                        counters: &mut cb,
                    };
                    let rb = b.handle(now, &p, &region, &mut ob);
                    assert_eq!(ra, rb, "{what}: {p:?}");
                }
            }
            if own_timers {
                if a.poll_timeout().is_some_and(|t| t <= now) {
                    let mut oa = Sink {
                        qp: &mut qa,
                        mtu: 1024,
                        counters: &mut ca,
                    };
                    a.flush(now, FlushMode::Due, &regions, &mut oa);
                }
                if b.poll_timeout().is_some_and(|t| t <= now) {
                    let mut ob = Sink {
                        qp: &mut qb,
                        mtu: 1024,
                        counters: &mut cb,
                    };
                    b.flush(now, FlushMode::Due, &regions, &mut ob);
                }
            }
            assert_eq!(a.poll_timeout(), b.live_timeout(), "{what}");
            written += same_frames(&mut qa, &mut qb, &mut c, &what);
            assert_eq!(ca, cb, "{what}");
        }
        seen += &ca;
    }
    assert!(written > 20_000, "{written} writes");
    // Every way a flow is written came up.
    assert!(
        seen.postcard_evictions > 1000
            && seen.postcard_timeouts > 1000
            && seen.postcard_continuations > 1000,
        "{seen:?}"
    );
}

#[test]
fn runs_of_cells() {
    let r = |have, hops| {
        runs_of(have, hops)
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
    };
    assert_eq!(r(0b0001_1100, 5), vec![(2, 5)]);
    assert_eq!(r(0b1010_1010, 8), vec![(1, 2), (3, 4), (5, 6), (7, 8)]);
    assert_eq!(r(0b0101_0101, 8), vec![(0, 1), (2, 3), (4, 5), (6, 7)]);
    assert_eq!(r(0b1111_0000, 5), vec![(4, 5)]);
    assert_eq!(r(0, 5), vec![]);
}

fn flow(have: u8, path_len: u8, length_known: bool) -> Flow {
    Flow {
        key: 1,
        values: [POSTCARD_BLANK; MAX_HOPS as usize],
        have,
        path_len,
        length_known,
        gen: 0,
        reports: 0,
    }
}

#[test]
fn cells_an_entry_writes() {
    // Length known (B = 5): held cells only, never a blank inside the path.
    assert_eq!(cells_to_write(&flow(0b00011, 5, true), 5), 0b00011);
    assert_eq!(cells_to_write(&flow(0b11100, 5, true), 5), 0b11100);
    // A 3-hop path in a 5-hop region: the blanks after hop 3 too, from any entry.
    assert_eq!(cells_to_write(&flow(0b00001, 3, true), 5), 0b11001);
    assert_eq!(cells_to_write(&flow(0b00110, 3, true), 5), 0b11110);
    // Length unknown: the entry with hop 1 writes everything, a continuation its own cells.
    assert_eq!(cells_to_write(&flow(0b00011, 5, false), 5), 0b11111);
    assert_eq!(cells_to_write(&flow(0b10100, 5, false), 5), 0b10100);
    assert_eq!(low_bits(8), 0xFF);
}
