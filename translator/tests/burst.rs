//! `Engine::handle_frames` (a receive burst in one call) against `Engine::handle_frame` on each frame:
//! the same frames forwarded, the same counters, the same frames sent, for a random mix of reports of
//! every kind (malformed and refused ones, sequence gaps and NACKs included), RoCE responses and junk.

mod support;

use dta_protocol::dta::{
    AppendRepr, Body, KeyIncrementRepr, KeyWriteRepr, PostcardPathLenRepr, PostcardRepr, SketchOp,
    SketchRepr,
};
use dta_protocol::roce::AckKind;
use dta_protocol::udp::HEADERS_LEN;
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
