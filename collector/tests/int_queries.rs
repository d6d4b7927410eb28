//! The INT queries on memory written as the contract says (see `int_support`): exact answers for a found
//! path, a flow's hop records and totals, collisions and empty hops, drops per reason and drop events by
//! node, queue events by node and queue, and the shards of several collectors joined back into one
//! answer.
#![cfg(feature = "server")]

mod int_support;

use dta_collector::engine::DropsQuery;
use dta_collector::query::int::{
    parse_flow, DropCount, DropEventView, FlowTotals, HopAnswer, HopCandidate, HopOutcome, HopView,
    IntDropsAnswer, IntFlowAnswer, IntQueuesAnswer, MaxOccupancy, QueueEventView, Shard, Window,
};
use dta_collector::query::PathAnswer;
use dta_protocol::hash::placement;
use int_support::*;

fn hop(node: u32, hop_latency: u32, queue_id: u8, queue_occupancy: u32) -> HopView {
    HopView {
        node,
        hop_latency,
        queue_id,
        queue_occupancy,
    }
}

fn drops(node: u32, reason: Option<u8>) -> DropsQuery {
    DropsQuery {
        node,
        reason,
        n: None,
        window: Window {
            tail: None,
            max: 1024,
        },
        shard: Shard::ALL,
    }
}

#[test]
fn a_five_hop_path_is_found_over_the_node_universe() {
    let e = engine(CONFIG);
    write_scenario(&e);
    let a = e.int_path(&parse_flow(F1).unwrap(), None).unwrap();
    assert_eq!(a.flow, "10.0.0.1,10.0.0.2,6,12345,80");
    assert_eq!(a.flow_key, F1_KEY);
    assert_eq!(
        a.path,
        PathAnswer::Found {
            path: vec![101, 102, 103, 104, 105],
            chunks: 2
        }
    );
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        r#"{"flow":"10.0.0.1,10.0.0.2,6,12345,80","flow_key":1035330277,"outcome":"found","path":[101,102,103,104,105],"chunks":2}"#
    );
    // With n = 1 only copy 0 is read.
    let a = e.int_path(&parse_flow(F1).unwrap(), Some(1)).unwrap();
    assert_eq!(
        a.path,
        PathAnswer::Found {
            path: vec![101, 102, 103, 104, 105],
            chunks: 1
        }
    );
}

#[test]
fn paths_outside_the_node_universe_are_empty_and_disagreeing_copies_conflict() {
    let e = engine(CONFIG);
    write_scenario(&e);
    // F2's path holds 5 and 6: [postcarding] values, not [int] nodes (100..=199).
    let f2 = parse_flow(F2).unwrap();
    assert_eq!(e.int_path(&f2, None).unwrap().path, PathAnswer::Empty);
    assert_eq!(
        e.postcard(F2_KEY, None).unwrap(),
        PathAnswer::Found {
            path: vec![5, 6],
            chunks: 2
        }
    );
    // Without [int] nodes the path decodes over [postcarding] instead.
    let plain = engine(&CONFIG.replace("nodes = [[100, 199]]\n", ""));
    write_scenario(&plain);
    assert_eq!(
        plain.int_path(&f2, None).unwrap().path,
        PathAnswer::Found {
            path: vec![5, 6],
            chunks: 2
        }
    );
    let a = e.int_path(&parse_flow(F3).unwrap(), None).unwrap();
    assert_eq!(a.flow_key, F3_KEY);
    assert_eq!(
        a.path,
        PathAnswer::Conflict {
            paths: vec![vec![101, 102], vec![101, 103]]
        }
    );
    let never = parse_flow("10.9.9.9,10.9.9.8,udp,1,2").unwrap();
    assert_eq!(e.int_path(&never, None).unwrap().path, PathAnswer::Empty);
}

#[test]
fn a_flow_with_three_hop_records_and_its_totals() {
    let e = engine(CONFIG);
    write_scenario(&e);
    let a = e
        .int_flow(&parse_flow(F1).unwrap(), None, 1, Shard::ALL)
        .unwrap();
    let found = |i: usize| {
        let (node, lat, q, occ) = F1_HOPS[i];
        HopAnswer {
            hop: i as u8 + 1,
            key: F1_HOP_KEYS[i],
            outcome: HopOutcome::Found {
                record: hop(node, lat, q, occ),
                votes: 2,
                slots_read: 2,
            },
        }
    };
    let empty = |i: usize| HopAnswer {
        hop: i as u8 + 1,
        key: F1_HOP_KEYS[i],
        outcome: HopOutcome::Empty { matching: 0 },
    };
    assert_eq!(
        a,
        IntFlowAnswer {
            flow: "10.0.0.1,10.0.0.2,6,12345,80".into(),
            flow_key: F1_KEY,
            hops: vec![found(0), found(1), found(2), empty(3), empty(4)],
            totals: FlowTotals {
                hops_found: 3,
                latency_sum: 1500 + 2500 + 800,
                max_occupancy: Some(MaxOccupancy {
                    hop: 2,
                    node: 102,
                    queue_id: 1,
                    occupancy: 70_000
                }),
            },
        }
    );
    let json = serde_json::to_string(&a).unwrap();
    assert!(
        json.starts_with(
            r#"{"flow":"10.0.0.1,10.0.0.2,6,12345,80","flow_key":1035330277,"hops":[{"hop":1,"key":3974595293,"outcome":"found","record":{"node":101,"hop_latency":1500,"queue_id":2,"queue_occupancy":300},"votes":2,"slots_read":2},"#
        ),
        "{json}"
    );
    assert!(
        json.ends_with(
            r#"{"hop":5,"key":3951707844,"outcome":"empty","matching":0}],"totals":{"hops_found":3,"latency_sum":4800,"max_occupancy":{"hop":2,"node":102,"queue_id":1,"occupancy":70000}}}"#
        ),
        "{json}"
    );
    // The CLI joins shards by parsing this JSON back: it must round-trip.
    assert_eq!(serde_json::from_str::<IntFlowAnswer>(&json).unwrap(), a);
}

#[test]
fn colliding_and_missing_hop_records() {
    let e = engine(CONFIG);
    write_scenario(&e);
    let f3 = parse_flow(F3).unwrap();
    let a = e.int_flow(&f3, None, 1, Shard::ALL).unwrap();
    // Tied candidates come in slot order (the Key-Write query's stable order): copy 0's record first
    // only if its slot is the lower one.
    let mut tied = vec![
        HopCandidate {
            record: hop(110, 10, 1, 5),
            votes: 1,
        },
        HopCandidate {
            record: hop(111, 20, 1, 6),
            votes: 1,
        },
    ];
    if placement(F3_HOP_KEYS[0], 1, 1024) < placement(F3_HOP_KEYS[0], 0, 1024) {
        tied.reverse();
    }
    assert_eq!(
        a.hops[..3],
        [
            // Both copies match and disagree: a tie, no winner.
            HopAnswer {
                hop: 1,
                key: F3_HOP_KEYS[0],
                outcome: HopOutcome::Conflict { candidates: tied },
            },
            // Copy 0's slot holds another key's entry: it does not vote.
            HopAnswer {
                hop: 2,
                key: F3_HOP_KEYS[1],
                outcome: HopOutcome::Found {
                    record: hop(112, 30, 3, 40),
                    votes: 1,
                    slots_read: 2
                },
            },
            HopAnswer {
                hop: 3,
                key: F3_HOP_KEYS[2],
                outcome: HopOutcome::Empty { matching: 0 },
            },
        ]
    );
    // Only the found hop counts.
    assert_eq!(
        a.totals,
        FlowTotals {
            hops_found: 1,
            latency_sum: 30,
            max_occupancy: Some(MaxOccupancy {
                hop: 2,
                node: 112,
                queue_id: 3,
                occupancy: 40
            }),
        }
    );
    // Two votes needed: hop 2's single vote is not enough.
    let strict = e.int_flow(&f3, None, 2, Shard::ALL).unwrap();
    assert_eq!(strict.hops[1].outcome, HopOutcome::Empty { matching: 1 });
    assert_eq!(
        strict.totals,
        FlowTotals {
            hops_found: 0,
            latency_sum: 0,
            max_occupancy: None
        }
    );
}

#[test]
fn equal_occupancies_name_the_first_hop() {
    let e = engine(CONFIG);
    for copy in 0..2 {
        put_key_write(&e, F1_HOP_KEYS[0], copy, hop_record(101, 7, 0, 500));
        put_key_write(&e, F1_HOP_KEYS[1], copy, hop_record(102, 8, 4, 900));
        put_key_write(&e, F1_HOP_KEYS[2], copy, hop_record(103, 9, 5, 900));
    }
    let t = e
        .int_flow(&parse_flow(F1).unwrap(), None, 1, Shard::ALL)
        .unwrap()
        .totals;
    assert_eq!(
        t,
        FlowTotals {
            hops_found: 3,
            latency_sum: 24,
            max_occupancy: Some(MaxOccupancy {
                hop: 2,
                node: 102,
                queue_id: 4,
                occupancy: 900
            }),
        }
    );
}

#[test]
fn drops_are_counted_per_reason_and_events_filtered_by_node() {
    let e = engine(CONFIG);
    write_scenario(&e);
    let ev = |flow, node, port, reason, queue_id, timestamp| DropEventView {
        flow,
        node,
        port,
        reason,
        queue_id,
        timestamp,
    };
    let a = e.int_drops(&drops(7, None)).unwrap();
    assert_eq!(
        a.counts,
        [
            // The minimum of the two copies (2, 3).
            DropCount {
                reason: 3,
                key: DROP_7_3,
                count: 2
            },
            DropCount {
                reason: 71,
                key: DROP_7_71,
                count: 5
            },
        ]
    );
    assert_eq!(a.total, 7);
    let events = a.events[0].clone();
    assert_eq!(
        (
            events.list,
            events.head,
            events.first,
            events.scanned,
            events.overrun,
            events.next_tail
        ),
        (4, 5, 0, 5, 0, 5)
    );
    assert_eq!(
        events.events,
        [
            ev(F1_KEY, 7, 130, 71, 2, 1000),
            ev(F1_KEY, 7, 130, 3, 2, 1002),
            ev(F2_KEY, 7, 12, 71, 1, 1003),
        ]
    );
    assert_eq!(
        serde_json::from_str::<IntDropsAnswer>(&serde_json::to_string(&a).unwrap()).unwrap(),
        a
    );

    // One reason: its count, and its events only.
    let a = e.int_drops(&drops(7, Some(71))).unwrap();
    assert_eq!(
        (a.counts.as_slice(), a.total),
        (
            [DropCount {
                reason: 71,
                key: DROP_7_71,
                count: 5
            }]
            .as_slice(),
            5
        )
    );
    assert_eq!(
        a.events.into_iter().next().unwrap().events,
        [
            ev(F1_KEY, 7, 130, 71, 2, 1000),
            ev(F2_KEY, 7, 12, 71, 1, 1003)
        ]
    );
    // A reason asked for is listed at 0.
    let a = e.int_drops(&drops(7, Some(4))).unwrap();
    assert_eq!(
        a.counts,
        [DropCount {
            reason: 4,
            key: DROP_7_4,
            count: 0
        }]
    );
    assert_eq!(a.events.into_iter().next().unwrap().events, []);
    let a = e.int_drops(&drops(8, None)).unwrap();
    assert_eq!(
        a.counts,
        [DropCount {
            reason: 71,
            key: DROP_8_71,
            count: 9
        }]
    );
    assert_eq!(
        a.events.into_iter().next().unwrap().events,
        [ev(0, 8, 131, 71, 0, 1001), ev(F1_KEY, 8, 1, 3, 0, 1004)]
    );
}

#[test]
fn drop_events_are_read_in_a_bounded_window() {
    let e = engine(CONFIG);
    write_scenario(&e);
    // By default the newest `max` entries: 3 and 4.
    let q = DropsQuery {
        window: Window { tail: None, max: 2 },
        ..drops(7, None)
    };
    let ev = e.int_drops(&q).unwrap().events.into_iter().next().unwrap();
    assert_eq!((ev.first, ev.scanned, ev.next_tail), (3, 2, 5));
    assert_eq!(ev.events.len(), 1);
    assert_eq!(ev.events[0].timestamp, 1003);
    // From a tail: entries 1 and 2.
    let q = DropsQuery {
        window: Window {
            tail: Some(1),
            max: 2,
        },
        ..drops(7, None)
    };
    let ev = e.int_drops(&q).unwrap().events.into_iter().next().unwrap();
    assert_eq!((ev.first, ev.scanned, ev.next_tail), (1, 2, 3));
    assert_eq!(ev.events.len(), 1);
    assert_eq!(ev.events[0].timestamp, 1002);
    // After a wrap (head 36 in a ring of 32): entries 0..4 are gone, the reader says so.
    let newer: Vec<[u8; 16]> = (5..36)
        .map(|i| drop_event(0, 9, 0, 1, 0, 2000 + i))
        .collect();
    put_list(&e, 4, 5, &newer, 36);
    let q = DropsQuery {
        window: Window {
            tail: Some(0),
            max: 1024,
        },
        ..drops(9, None)
    };
    let ev = e.int_drops(&q).unwrap().events.into_iter().next().unwrap();
    assert_eq!(
        (ev.head, ev.first, ev.scanned, ev.overrun, ev.next_tail),
        (36, 4, 32, 4, 36)
    );
    // The ring keeps entries 4..36: entry 4 is node 8's, the 31 after it node 9's.
    assert_eq!(ev.events.len(), 31);
    assert_eq!(ev.events[0].timestamp, 2005);
    assert!(e
        .int_drops(&DropsQuery {
            window: Window {
                tail: Some(37),
                max: 1,
            },
            ..drops(9, None)
        })
        .is_err());
}

#[test]
fn without_a_drop_list_drops_are_counts_only() {
    let e = engine(&config_without_drop_list());
    write_scenario(&e);
    let a = e.int_drops(&drops(7, None)).unwrap();
    assert_eq!(a.total, 7);
    assert!(a.events.is_empty());
    assert!(serde_json::to_string(&a)
        .unwrap()
        .ends_with(r#""total":7,"events":[]}"#));
}

#[test]
fn shards_of_several_collectors_join_into_one_answer() {
    let e = engine(CONFIG);
    write_scenario(&e);
    let f1 = parse_flow(F1).unwrap();
    let whole = e.int_flow(&f1, None, 1, Shard::ALL).unwrap();
    // key_checksum(hop key) mod 3, from zlib.crc32(pack('<I', key)) % 3: hops 1, 3 → 0; 4 → 1; 2, 5 → 2.
    let parts: Vec<IntFlowAnswer> = (0..3)
        .map(|index| e.int_flow(&f1, None, 1, Shard { index, count: 3 }).unwrap())
        .collect();
    let hops = |a: &IntFlowAnswer| a.hops.iter().map(|h| h.hop).collect::<Vec<_>>();
    assert_eq!(
        parts.iter().map(hops).collect::<Vec<_>>(),
        [vec![1, 3], vec![4], vec![2, 5]]
    );
    assert_eq!(parts[2].totals.hops_found, 1);
    let overlap = IntFlowAnswer::merge(vec![parts[0].clone(), parts[0].clone()])
        .unwrap_err()
        .to_string();
    assert!(
        overlap.contains("hop 1 answered by two collectors"),
        "{overlap}"
    );
    assert_eq!(IntFlowAnswer::merge(parts).unwrap(), whole);

    // Drop counters mod 2: node 7 reason 71 → 0, reason 3 → 1.
    let whole = e.int_drops(&drops(7, None)).unwrap();
    let shard = |index| DropsQuery {
        shard: Shard { index, count: 2 },
        ..drops(7, None)
    };
    let (a, b) = (
        e.int_drops(&shard(0)).unwrap(),
        e.int_drops(&shard(1)).unwrap(),
    );
    assert_eq!(a.counts.iter().map(|c| c.reason).collect::<Vec<_>>(), [71]);
    assert_eq!(b.counts.iter().map(|c| c.reason).collect::<Vec<_>>(), [3]);
    // The list lives on one collector only; two answering with it is a misconfiguration.
    let e = IntDropsAnswer::merge(vec![a.clone(), b.clone()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("two collectors answer with list 4"), "{e}");
    let b = IntDropsAnswer {
        events: Vec::new(),
        ..b
    };
    let overlap = IntDropsAnswer::merge(vec![b.clone(), b.clone()])
        .unwrap_err()
        .to_string();
    assert!(
        overlap.contains("reason 3 answered by two collectors"),
        "{overlap}"
    );
    assert_eq!(IntDropsAnswer::merge(vec![b, a]).unwrap(), whole);
}

#[test]
fn int_flow_without_a_hop_count_or_a_record_sized_region_is_refused() {
    let no_hops = "[[region]]\nkind = \"key_write\"\nslots = 1024\nentry_size = 16\nn_max = 2\n";
    let e = engine(no_hops);
    let err = e
        .int_flow(&parse_flow(F1).unwrap(), None, 1, Shard::ALL)
        .unwrap_err()
        .to_string();
    assert!(err.contains("set [int] hops"), "{err}");
    // No [int] section, so the 8-byte entries pass start-up; the query says why it cannot answer.
    let small = engine(
        "[[region]]\nkind = \"key_write\"\nslots = 1024\nentry_size = 8\nn_max = 2\n\
         [[region]]\nkind = \"postcarding\"\nchunks = 16\nhops = 4\nn_max = 1\n",
    );
    let err = small
        .int_flow(&parse_flow(F1).unwrap(), None, 1, Shard::ALL)
        .unwrap_err()
        .to_string();
    assert!(err.contains("fewer than a 12-byte INT hop record"), "{err}");
    // No key_increment region: int-drops names the missing region.
    let err = small.int_drops(&drops(7, None)).unwrap_err().to_string();
    assert_eq!(err, "no key_increment region");
}

#[test]
fn queue_events_are_filtered_by_node_and_queue() {
    let e = engine(CONFIG);
    put_list(&e, 5, 0, &queue_events(), 4);
    let all = Window {
        tail: None,
        max: 1024,
    };
    let q = |node, queue_id, port, occupancy, timestamp| QueueEventView {
        node,
        port,
        queue_id,
        occupancy,
        timestamp,
    };
    let a = e.int_queues(7, None, all).unwrap();
    assert_eq!(a.max_occupancy, Some(12_000));
    let w = a.events.into_iter().next().unwrap();
    assert_eq!(
        (w.list, w.head, w.first, w.scanned, w.next_tail),
        (5, 4, 0, 4, 4)
    );
    assert_eq!(
        w.events,
        [
            q(7, 1, 130, 5000, 100),
            q(7, 2, 131, 12_000, 102),
            q(7, 1, 130, 7000, 103)
        ]
    );
    let a = e.int_queues(7, Some(1), all).unwrap();
    assert_eq!(a.max_occupancy, Some(7000));
    assert_eq!(a.events.into_iter().next().unwrap().events.len(), 2);
    let a = e.int_queues(8, None, all).unwrap();
    assert_eq!(a.max_occupancy, Some(90_000));
    assert_eq!(
        a.events.into_iter().next().unwrap().events,
        [q(8, 1, 2, 90_000, 101)]
    );
    let a = e.int_queues(9, None, all).unwrap();
    assert_eq!(
        (
            a.max_occupancy,
            a.events.into_iter().next().unwrap().events.len()
        ),
        (None, 0)
    );
    // The newest two only.
    let a = e
        .int_queues(7, None, Window { tail: None, max: 2 })
        .unwrap();
    assert_eq!(
        a.events.into_iter().next().unwrap().events,
        [q(7, 2, 131, 12_000, 102), q(7, 1, 130, 7000, 103)]
    );
    // Without [int] queue_list: no events, and the collector says so with none rather than an error.
    let plain = engine(&CONFIG.replace("queue_list = 5\n", ""));
    assert_eq!(
        serde_json::to_string(&plain.int_queues(7, None, all).unwrap()).unwrap(),
        r#"{"node":7,"queue_id":null,"max_occupancy":null,"events":[]}"#
    );
    // One answer with the list among several is the answer; two is a misconfiguration.
    let with = e.int_queues(7, None, all).unwrap();
    let without = plain.int_queues(7, None, all).unwrap();
    assert_eq!(
        IntQueuesAnswer::merge(vec![without.clone(), with.clone()]).unwrap(),
        with
    );
    assert!(IntQueuesAnswer::merge(vec![with.clone(), with]).is_err());
}

/// A translator with two workers writes one drop list and one queue list per worker (issue 25, item 3):
/// `[int] drop_list = [4, 6]` reads both, one window each, and the counts are unchanged.
#[test]
fn the_lists_of_several_translator_workers_are_read_together() {
    let extra = "\n[[region]]\nkind = \"append\"\nid = 6\nentries = 32\nentry_size = 16\nbatch_size = 16\n\
                 \n[[region]]\nkind = \"append\"\nid = 7\nentries = 32\nentry_size = 16\nbatch_size = 16\n";
    let config = CONFIG.replace(
        "drop_list = 4\nqueue_list = 5\n",
        "drop_list = [4, 6]\nqueue_list = [5, 7]\n",
    ) + extra;
    let e = engine(&config);
    write_scenario(&e);
    // Worker 1's drop list: two more of node 7's drops; its queue list: one event of node 7.
    put_list(
        &e,
        6,
        0,
        &[
            drop_event(F1_KEY, 7, 2, 3, 1, 5001),
            drop_event(0, 8, 2, 71, 1, 5002),
            drop_event(0, 7, 2, 71, 1, 5003),
        ],
        3,
    );
    let one = engine(CONFIG);
    write_scenario(&one);
    let (a, alone) = (
        e.int_drops(&drops(7, None)).unwrap(),
        one.int_drops(&drops(7, None)).unwrap(),
    );
    assert_eq!(
        (a.total, a.counts.clone()),
        (alone.total, alone.counts.clone())
    );
    assert_eq!(a.events.iter().map(|w| w.list).collect::<Vec<_>>(), [4, 6]);
    assert_eq!(a.events[0], alone.events[0]);
    assert_eq!(
        a.events[1]
            .events
            .iter()
            .map(|e| e.timestamp)
            .collect::<Vec<_>>(),
        [5001, 5003]
    );
    assert_eq!((a.events[1].head, a.events[1].scanned), (3, 3));
    // The queue lists likewise: list 7 is empty, list 5 holds the scenario's events.
    let all = Window {
        tail: None,
        max: 1024,
    };
    let (q, q_alone) = (
        e.int_queues(7, None, all).unwrap(),
        one.int_queues(7, None, all).unwrap(),
    );
    assert_eq!(q.events.iter().map(|w| w.list).collect::<Vec<_>>(), [5, 7]);
    assert_eq!(q.events[0], q_alone.events[0]);
    assert_eq!((q.events[1].head, q.events[1].events.len()), (0, 0));
    assert_eq!(q.max_occupancy, q_alone.max_occupancy);
    // Two collectors each holding one worker's lists join into the same answer.
    let only = |w: usize| IntDropsAnswer {
        events: vec![a.events[w].clone()],
        counts: if w == 0 { a.counts.clone() } else { Vec::new() },
        ..a.clone()
    };
    assert_eq!(IntDropsAnswer::merge(vec![only(1), only(0)]).unwrap(), a);
}
