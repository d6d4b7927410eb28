//! Property tests for `Psn` against an independent oracle: plain modular arithmetic on `u64`, with the
//! IBA 9.7.1 ordering rule written out as "the forward step is below 2^23".

use dta_protocol::roce::psn::{self, HALF_WINDOW};
use dta_protocol::roce::Psn;
use proptest::prelude::*;

const MODULUS: u64 = 1 << 24;

/// `(to - from) mod 2^24`, computed on u64 where nothing wraps.
fn oracle_distance(from: u64, to: u64) -> u64 {
    ((to % MODULUS) + MODULUS - (from % MODULUS)) % MODULUS
}

/// Values near the wrap and the half-window boundary, where off-by-one faults live, as well as anywhere.
fn any_psn_value() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        0u32..8,
        (1u32 << 24) - 8..1 << 24,
        (1u32 << 23) - 4..(1 << 23) + 4,
    ]
}

proptest! {
    #[test]
    fn new_keeps_the_low_24_bits(v: u32) {
        prop_assert_eq!(u64::from(Psn::new(v).value()), u64::from(v) % MODULUS);
    }

    #[test]
    fn try_new_accepts_exactly_24_bit_values(v: u32) {
        prop_assert_eq!(Psn::try_new(v).is_ok(), u64::from(v) < MODULUS);
        if let Ok(p) = Psn::try_new(v) {
            prop_assert_eq!(p.value(), v);
        }
    }

    #[test]
    fn add_and_sub_are_modular(a in any_psn_value(), n: u32) {
        let p = Psn::new(a);
        let a64 = u64::from(a) % MODULUS;
        prop_assert_eq!(u64::from(p.add(n).value()), (a64 + u64::from(n)) % MODULUS);
        prop_assert_eq!(
            u64::from(p.sub(n).value()),
            (a64 + MODULUS - u64::from(n) % MODULUS) % MODULUS
        );
        prop_assert_eq!(p.add(n).sub(n), p);
        prop_assert_eq!(p.next(), p.add(1));
        prop_assert_eq!(p.prev(), p.sub(1));
        prop_assert_eq!(psn::add(a, n), p.add(n).value());
    }

    #[test]
    fn distance_is_the_forward_step(a in any_psn_value(), b in any_psn_value()) {
        let (pa, pb) = (Psn::new(a), Psn::new(b));
        let d = oracle_distance(u64::from(a), u64::from(b));
        prop_assert_eq!(u64::from(pa.distance_to(pb)), d);
        prop_assert_eq!(u64::from(psn::distance(a, b)), d);
        prop_assert_eq!(pa.add(pa.distance_to(pb)), pb);
    }

    #[test]
    fn ordering_within_half_window(a in any_psn_value(), b in any_psn_value()) {
        let (pa, pb) = (Psn::new(a), Psn::new(b));
        let forward = oracle_distance(u64::from(a), u64::from(b));
        let backward = oracle_distance(u64::from(b), u64::from(a));
        let half = u64::from(HALF_WINDOW);
        prop_assert_eq!(pa.before(pb), forward != 0 && forward < half);
        prop_assert_eq!(psn::before(a, b), pa.before(pb));
        // Never both ways; neither way only for equal PSNs and the one PSN exactly half the space away.
        prop_assert!(!(pa.before(pb) && pb.before(pa)));
        if !pa.before(pb) && !pb.before(pa) {
            prop_assert!(forward == 0 || forward == half);
        }
        // The signed offset: the forward step when below half, else the step back, negated.
        let want = if forward < half { forward as i64 } else { -(backward as i64) };
        prop_assert_eq!(i64::from(pb.offset_from(pa)), want);
        prop_assert_eq!(pb.offset_from(pa) > 0, pa.before(pb));
    }
}
