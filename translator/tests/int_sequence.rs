//! INT sequence numbers an operator can reconcile (issue 26, item 11): one fabric-tna v0.5 report whose
//! sequence number jumps 2^31 - 1 ahead used to add 2,147,483,646 to `int_reports_lost` and make the
//! genuine reports after it "late". The jump is now a reset of the source's tracking, counted on its own.

mod int_harness;

use int_harness::*;

#[test]
fn a_wild_v05_sequence_jump_is_a_counted_reset_not_a_loss() {
    let mut e = engine();
    let send = |e: &mut Engine, seq: u32| {
        let r = v05_drop(7, seq, 71, 3, 130, &inner(4242, 60));
        e.handle_frame(Instant(0), &frame(&r, 32766));
    };
    for seq in 1..=5 {
        send(&mut e, seq);
    }
    // One report numbered 2^31 - 1 past the newest, then the genuine sequence goes on.
    send(&mut e, 5 + (1u32 << 31) - 1);
    for seq in 6..=8 {
        send(&mut e, seq);
    }
    // A real gap after it is still counted: 9 and 10 missing.
    send(&mut e, 11);
    let c = &e.counters().int;
    assert_eq!(c.reports, 10, "every report is translated");
    assert_eq!(c.lost, 2, "only the real gap");
    assert_eq!(c.late, 0, "the genuine reports after the jump are not late");
    assert_eq!(
        c.resets, 2,
        "the jump, and the genuine sequence taking over again"
    );
}

/// Reports lost per reporter (node, hardware id), the metrics' bounded series: each source's own gaps,
/// a gap filled by a late report taken back from its source only, and the sources beyond the first
/// `LABELLED` added up in `other`.
#[test]
fn reports_lost_are_counted_per_reporter_and_bounded() {
    let mut e = engine();
    let send = |e: &mut Engine, node: u32, seq: u32| {
        let r = v05_drop(node, seq, 71, 3, 130, &inner(4242, 60));
        e.handle_frame(Instant(0), &frame(&r, 32766));
    };
    // Node 7: 1, 4 (2 and 3 missing), then 3 arrives late. Node 8: 1, 5 (3 missing).
    for (node, seq) in [(7, 1), (8, 1), (7, 4), (8, 5), (7, 3)] {
        send(&mut e, node, seq);
    }
    let c = &e.counters().int;
    assert_eq!(c.lost, 4);
    // v05_drop reports on hardware id 2.
    assert_eq!(c.reporters_lost.entries(), &[((7, 2), 1), ((8, 2), 3)]);
    assert_eq!(c.reporters_lost.other, 0);
    // As many more switches as there are labelled entries, each losing one report.
    let base = 1_000;
    for node in base..base + dta_translator::int::LABELLED as u32 {
        send(&mut e, node, 1);
        send(&mut e, node, 3);
    }
    let c = &e.counters().int;
    let labelled: u64 = c.reporters_lost.entries().iter().map(|e| e.1).sum();
    assert_eq!(
        c.reporters_lost.entries().len(),
        dta_translator::int::LABELLED
    );
    assert_eq!(labelled + c.reporters_lost.other, c.lost);
    assert_eq!(
        c.reporters_lost.other, 2,
        "the last two switches share other"
    );
}
