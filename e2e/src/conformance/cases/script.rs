//! The script itself, in the order it runs: data, one entry per case, each a few lines.

use super::steps::{Addr, Case, Key, Op, QpRef, Step};

/// A WRITE ONLY of 8 bytes of `fill` at window offset `off`.
fn w(psn: i32, ack: bool, off: u64, fill: u8) -> Step {
    Step::new(
        Op::Write {
            at: Addr::Win(off),
            len: 8,
            fill,
        },
        psn,
        ack,
    )
}

fn fa(psn: i32, off: u64, add: u64) -> Step {
    Step::new(
        Op::FetchAdd {
            at: Addr::Win(off),
            add,
        },
        psn,
        true,
    )
}

fn raw(code: u8, reth: Option<(Addr, u32)>, imm: bool, len: usize, psn: i32) -> Step {
    Step::new(
        Op::Raw {
            code,
            reth,
            imm,
            len,
            fill: code,
        },
        psn,
        true,
    )
}

fn at_write(psn: i32, at: Addr, len: usize) -> Step {
    Step::new(
        Op::Write {
            at,
            len,
            fill: 0xEE,
        },
        psn,
        true,
    )
}

/// A key no region has: rxe's keys are `index << 8 | key`, so a flipped top byte names no index; the soft
/// responder's are drawn at random per region, so it names another of the collector's few regions with a
/// chance of about one in 10^9.
const BAD_KEY: Key = Key::Xor(0x5A00_0000);

fn case(name: &'static str, about: &'static str, start_psn: u32, steps: Vec<Step>) -> Case {
    Case {
        name,
        about,
        start_psn,
        steps,
    }
}

/// The whole script, in the order it runs.
pub fn all() -> Vec<Case> {
    let s = 0x100;
    vec![
        case("write_ackreq", "in-order WRITE ONLY with AckReq", s, vec![w(0, true, 0, 0x11)]),
        case(
            "write_then_ackreq",
            "WRITE without AckReq (silent), then one with",
            s,
            vec![w(0, false, 0, 0x21), w(1, true, 8, 0x22)],
        ),
        case(
            "write_ackreq_unset_only",
            "three WRITEs without AckReq: silence, all applied",
            s,
            vec![w(0, false, 0, 0x31), w(1, false, 8, 0x32), w(2, false, 16, 0x33)],
        ),
        case(
            "duplicate_write",
            "a WRITE behind the expected PSN is re-ACKed, not re-applied",
            s,
            vec![w(0, false, 0, 0x41), w(1, false, 8, 0x42), w(0, true, 0, 0x49), w(1, false, 8, 0x4A)],
        ),
        case(
            "duplicate_before_any",
            "a duplicate (PSN start-1) before anything arrived, then the expected PSN",
            s,
            vec![w(-1, true, 0, 0x51), w(0, true, 8, 0x52)],
        ),
        case(
            "duplicate_fetch_add",
            "FETCH_ADD twice, then both again: cached originals, applied once",
            s,
            vec![fa(0, 0, 5), fa(1, 0, 7), fa(0, 0, 5), fa(1, 0, 7)],
        ),
        case(
            "duplicate_fetch_add_after_write",
            "FETCH_ADD, WRITE, then the FETCH_ADD again: which MSN does the replay carry",
            s,
            vec![fa(0, 0, 3), w(1, true, 8, 0x61), fa(0, 0, 3)],
        ),
        case(
            "stale_duplicate_fetch_add",
            "17 FETCH_ADDs (16 responder resources), then the first and second again",
            s,
            (0..17)
                .map(|i| fa(i, 0, 1))
                .chain([fa(0, 0, 1), fa(1, 0, 1)])
                .collect(),
        ),
        case(
            "psn_ahead",
            "PSN ahead: one sequence NAK, silence, then in order again, and a new NAK for a new gap",
            s,
            vec![
                w(2, true, 0, 0x71),
                w(3, true, 8, 0x72),
                w(0, true, 16, 0x73),
                w(1, false, 24, 0x74),
                w(4, true, 32, 0x75),
            ],
        ),
        case(
            "psn_ahead_ackreq_unset",
            "PSN ahead without AckReq still earns the NAK",
            s,
            vec![w(1, false, 0, 0x81), w(0, false, 8, 0x82), w(1, true, 16, 0x83)],
        ),
        case(
            "psn_2pow23_behind",
            "PSN exactly 2^23 behind: still behind, a duplicate",
            0x10,
            vec![w(-0x80_0000, true, 0, 0x91), w(0, true, 8, 0x92)],
        ),
        case(
            "psn_more_than_2pow23_behind",
            "PSN 2^23 + 1 behind is 2^23 - 1 ahead: a sequence NAK",
            0x10,
            vec![w(-0x80_0001, true, 0, 0xA1), w(0, true, 8, 0xA2)],
        ),
        case(
            "psn_wraps",
            "PSNs 0xFFFFFE, 0xFFFFFF, 0 in order, then 0xFFFFFF again as a duplicate",
            0xFF_FFFE,
            vec![w(0, true, 0, 0xB1), w(1, true, 8, 0xB2), w(2, true, 16, 0xB3), w(1, true, 8, 0xBF)],
        ),
        case(
            "wrong_rkey",
            "WRITE with an unknown R_Key: remote access NAK, then the QP is dead",
            s,
            vec![w(0, true, 0, 0xC1).key(BAD_KEY), w(1, true, 8, 0xC2), w(0, true, 0, 0xC3)],
        ),
        case(
            "wrong_rkey_ackreq_unset",
            "the remote access NAK does not depend on AckReq",
            s,
            vec![w(0, false, 0, 0xC4).key(BAD_KEY)],
        ),
        case(
            "va_below_region",
            "WRITE 8 bytes below the region",
            s,
            vec![at_write(0, Addr::Below(8), 8)],
        ),
        case(
            "va_straddles_end",
            "WRITE of 8 bytes starting 4 before the region's end",
            s,
            vec![at_write(0, Addr::FromEnd(4), 8)],
        ),
        case(
            "va_at_end",
            "WRITE starting exactly at the region's end",
            s,
            vec![at_write(0, Addr::FromEnd(0), 8)],
        ),
        case(
            "va_last_bytes",
            "WRITE of the region's last 8 bytes (in bounds)",
            s,
            vec![at_write(0, Addr::FromEnd(8), 8)],
        ),
        case(
            "va_wraps_2pow64",
            "VA + length wraps past 2^64",
            s,
            vec![at_write(0, Addr::Abs(u64::MAX - 3), 8)],
        ),
        case(
            "zero_length_write_bad_rkey",
            "a zero-length WRITE is not checked against its R_Key (C9-88)",
            s,
            vec![Step::new(
                Op::Write {
                    at: Addr::Abs(0),
                    len: 0,
                    fill: 0,
                },
                0,
                true,
            )
            .key(BAD_KEY), w(1, true, 0, 0xD1)],
        ),
        case(
            "oversized_write",
            "a WRITE ONLY of 1028 bytes on a 1024-byte path MTU",
            s,
            vec![Step::new(
                Op::Write {
                    at: Addr::Win(0),
                    len: 1028,
                    fill: 0xD5,
                },
                0,
                true,
            )],
        ),
        case(
            "misaligned_fetch_add",
            "FETCH_ADD at a VA that is not 8-byte aligned",
            s,
            vec![fa(0, 0, 1), fa(1, 4, 1), fa(1, 0, 1)],
        ),
        case(
            "fetch_add_past_end",
            "FETCH_ADD 4 bytes before the region's end: out of bounds (and misaligned)",
            s,
            vec![Step::new(
                Op::FetchAdd {
                    at: Addr::FromEnd(4),
                    add: 1,
                },
                0,
                true,
            )],
        ),
        case(
            "fetch_add_wrong_rkey",
            "FETCH_ADD with an unknown R_Key",
            s,
            vec![fa(0, 0, 1).key(BAD_KEY)],
        ),
        case(
            "fetch_add_ackreq_unset",
            "an atomic is answered whether or not AckReq is set",
            s,
            vec![Step {
                ack_req: false,
                ..fa(0, 0, 9)
            }],
        ),
        case(
            "compare_swap",
            "COMPARE_SWAP that swaps, then one whose compare fails",
            s,
            vec![
                Step::new(
                    Op::CmpSwap {
                        at: Addr::Win(0),
                        compare: 0,
                        swap: 0x55,
                    },
                    0,
                    true,
                ),
                Step::new(
                    Op::CmpSwap {
                        at: Addr::Win(0),
                        compare: 1,
                        swap: 0x66,
                    },
                    1,
                    true,
                ),
            ],
        ),
        case(
            "unknown_qpn",
            "a WRITE to a QPN that does not exist, then one to the case's QP",
            s,
            vec![
                Step {
                    qp: QpRef::Unknown,
                    ..w(0, true, 0, 0xE1)
                },
                w(0, true, 8, 0xE2),
            ],
        ),
        case(
            "rdma_read",
            "RDMA READ (the collector grants no remote read), then a WRITE",
            s,
            vec![
                Step::new(
                    Op::Read {
                        at: Addr::Win(0),
                        len: 8,
                    },
                    0,
                    true,
                ),
                w(1, true, 8, 0xE5),
            ],
        ),
        case(
            "send_only",
            "SEND ONLY (no receive is ever posted) twice, then a WRITE at the same PSN",
            s,
            vec![
                Step::new(Op::Send { len: 8, fill: 0xE7 }, 0, true),
                Step::new(Op::Send { len: 8, fill: 0xE7 }, 0, true),
                w(0, true, 0, 0xE8),
            ],
        ),
        case(
            "write_with_immediate",
            "RDMA WRITE with immediate (consumes a receive), then a WRITE at the same PSN",
            s,
            vec![
                Step::new(
                    Op::WriteImm {
                        at: Addr::Win(0),
                        len: 8,
                        fill: 0xE9,
                    },
                    0,
                    true,
                ),
                w(0, true, 8, 0xEA),
            ],
        ),
        case(
            "foreign_pkey",
            "a P_Key of another partition is dropped; the QP is unaffected",
            s,
            vec![
                Step {
                    pkey: 0x1234,
                    ..w(0, true, 0, 0xF1)
                },
                w(0, true, 8, 0xF2),
            ],
        ),
        case(
            "bad_icrc",
            "a corrupted iCRC is dropped; the QP is unaffected",
            s,
            vec![
                Step {
                    bad_icrc: true,
                    ..w(0, true, 0, 0xF3)
                },
                w(0, true, 8, 0xF4),
            ],
        ),
        case(
            "uc_opcode_on_rc_qp",
            "a UC WRITE ONLY to an RC QP is dropped; the QP is unaffected",
            s,
            vec![
                Step::new(
                    Op::UcWrite {
                        at: Addr::Win(0),
                        len: 8,
                        fill: 0xF5,
                    },
                    0,
                    true,
                ),
                w(0, true, 8, 0xF6),
            ],
        ),
        case(
            "write_dma_length_mismatch",
            "WRITE ONLY whose RETH DMA length (16) is not its payload length (8)",
            s,
            vec![raw(0x0A, Some((Addr::Win(0), 16)), false, 8, 0), w(1, true, 16, 0x19)],
        ),
        case(
            "oversized_write_bad_rkey",
            "a 1028-byte WRITE ONLY with an unknown R_Key: which check comes first",
            s,
            vec![Step::new(
                Op::Write {
                    at: Addr::Win(0),
                    len: 1028,
                    fill: 0xD6,
                },
                0,
                true,
            )
            .key(BAD_KEY)],
        ),
        case(
            "write_middle_without_first",
            "WRITE MIDDLE with no WRITE FIRST before it",
            s,
            vec![raw(0x07, None, false, 8, 0), w(1, true, 8, 0x1B)],
        ),
        case(
            "write_last_without_first",
            "WRITE LAST with no WRITE FIRST before it",
            s,
            vec![raw(0x08, None, false, 8, 0)],
        ),
        case(
            "send_first",
            "SEND FIRST (consumes a receive)",
            s,
            vec![raw(0x00, None, false, 8, 0)],
        ),
        case(
            "send_last_without_first",
            "SEND LAST with no SEND FIRST before it",
            s,
            vec![raw(0x02, None, false, 8, 0)],
        ),
        case(
            "send_only_immediate",
            "SEND ONLY with immediate",
            s,
            vec![raw(0x05, None, true, 8, 0)],
        ),
        case(
            "send_only_invalidate",
            "SEND ONLY with invalidate",
            s,
            vec![raw(0x17, None, true, 8, 0)],
        ),
        case(
            "duplicate_read",
            "RDMA READ behind the expected PSN",
            s,
            vec![w(0, true, 0, 0x1C), Step::new(Op::Read { at: Addr::Win(0), len: 8 }, 0, true)],
        ),
        case(
            "duplicate_send",
            "SEND ONLY behind the expected PSN",
            s,
            vec![w(0, true, 0, 0x1D), Step::new(Op::Send { len: 8, fill: 0x1E }, 0, true)],
        ),
        case(
            "write_first",
            "WRITE FIRST of a 2048-byte message, then a WRITE ONLY (last: rxe writes 1024 bytes past the window)",
            s,
            vec![raw(0x06, Some((Addr::Win(0), 2048)), false, 1024, 0), w(1, true, 8, 0x1A)],
        ),
    ]
}
