//! The differences kept on purpose (the module documentation's table) and those found and fixed.

/// A difference we keep on purpose.
#[derive(Debug, Clone, Copy)]
pub struct Departure {
    /// Case name.
    pub case: &'static str,
    /// Step index; `None` for every step and the memory of the case.
    pub step: Option<usize>,
    /// Why.
    pub reason: &'static str,
}

/// Differences we keep on purpose: the same rows as the module documentation's table.
pub const DEPARTURES: &[Departure] = &[
    Departure {
        case: "duplicate_before_any",
        step: Some(0),
        reason: "rxe acks PSN 0xFFFFFF before its first completion (resp.ack_psn starts at 0, an rxe bug); we ack start-1",
    },
    Departure {
        case: "psn_2pow23_behind",
        step: Some(0),
        reason: "rxe acks PSN 0xFFFFFF before its first completion (resp.ack_psn starts at 0, an rxe bug); we ack start-1",
    },
    Departure {
        case: "write_first",
        step: None,
        reason: "dta never sends multi-packet WRITEs (DESIGN.md 4); a WRITE FIRST is refused with NAK invalid request",
    },
];

const FIX_ATOMIC_MSN: &str = "replayed atomics carry the current MSN";
const FIX_RNR: &str = "RNR NAK (timer 12) for a request that needs a receive";
const FIX_NO_FIRST: &str = "MIDDLE/LAST without FIRST: NAK invalid request";

/// Cases in which our responder differed from rxe until it was fixed (what the fix was).
pub const FIXED: &[(&str, &str)] = &[
    ("duplicate_fetch_add", FIX_ATOMIC_MSN),
    ("duplicate_fetch_add_after_write", FIX_ATOMIC_MSN),
    ("stale_duplicate_fetch_add", FIX_ATOMIC_MSN),
    (
        "rdma_read",
        "READ refused with NAK invalid request (was dropped)",
    ),
    ("send_only", FIX_RNR),
    ("send_first", FIX_RNR),
    ("send_only_immediate", FIX_RNR),
    ("send_only_invalidate", FIX_RNR),
    ("write_with_immediate", FIX_RNR),
    ("send_last_without_first", FIX_NO_FIRST),
    ("write_middle_without_first", FIX_NO_FIRST),
    ("write_last_without_first", FIX_NO_FIRST),
    (
        "write_dma_length_mismatch",
        "payload vs RETH DMA length: NAK invalid request (was dropped as malformed)",
    ),
    (
        "oversized_write_bad_rkey",
        "R_Key and bounds checked before the length",
    ),
    (
        "duplicate_send",
        "a duplicate SEND is re-ACKed (was dropped)",
    ),
];
