//! Differential conformance of the software RoCEv2 responder against Linux Soft-RoCE (rxe).
//!
//! One script of crafted RoCEv2 requests ([`cases::all`]) goes to a real rxe QP (the collector's ibverbs
//! backend on an rxe device) and to our software responder (the collector's soft backend), through the
//! same code: a raw Ethernet port, a fresh QP per case (its own control-channel hello), each request
//! followed by a wait for its response or for silence. The responses are compared field by field (BTH
//! opcode, flags, P_Key, destination QP and PSN; AETH syndrome and MSN; the original value of an ATOMIC
//! ACKNOWLEDGE; whether anything came back at all) and after each case the scratch region's bytes, read
//! through the collector's Append query, are compared as well. rxe is the judge: a difference is either
//! fixed in `collector/src/responder/` or listed below as a deliberate departure with its reason.
//!
//! # Deliberate departures
//!
//! | case | step | rxe (Linux 6.1) | ours | why |
//! |---|---|---|---|---|
//! | `duplicate_before_any` | 0 | ACK PSN 0xFFFFFF | ACK PSN start − 1 | rxe bug: its `resp.ack_psn` starts at 0 rather than at the RTR `rq_psn`, so until the first request completes a duplicate is acknowledged as PSN 0xFFFFFF whatever the start PSN. We acknowledge the PSN before the first one expected (C9-105: the last PSN acknowledged). Either is behind the requester's window and ignored by it. |
//! | `psn_2pow23_behind` | 0 | ACK PSN 0xFFFFFF | ACK PSN start − 1 | the same rxe bug (the duplicate arrives before anything else). |
//! | `write_first` | all | ACK, 1024 bytes written; the following WRITE ONLY NAKed invalid request | NAK invalid request, QP in error; nothing written | dta never sends a multi-packet WRITE (DESIGN.md section 4: every write is one WRITE ONLY within the path MTU), so the responder refuses a WRITE FIRST at once instead of half-supporting messages. |
//!
//! Differences found by this comparison and fixed in `collector/src/responder/` (each with a test in
//! `collector/tests/responder_conformance.rs`): a replayed atomic carries the QP's current MSN, not the
//! original answer's; RDMA READ is refused with NAK invalid request (it was dropped); SEND FIRST/ONLY (also
//! with immediate or invalidate) and WRITE with immediate get an RNR NAK with timer 12 and leave the QP
//! usable (they were dropped, or NAKed invalid request); a SEND or WRITE MIDDLE/LAST without its FIRST is
//! NAKed invalid request (it was dropped); a WRITE ONLY whose payload differs from its RETH DMA length is
//! NAKed invalid request (it was dropped as malformed); the R_Key and bounds are checked before the length
//! (a 1028-byte WRITE with a bad key is a remote access error); a duplicate SEND is re-ACKed.
//!
//! Things the comparison does not look at: IPv4 and UDP header fields of the responses (rxe answers
//! from a UDP source port hashed from its QPN, ours from the request's source port; DESIGN.md section 4
//! has the translator match responses by QPN, not port), and the iCRC value beyond its being correct.
//!
//! `dta-e2e-conformance` (e2e/src/bin/conformance.rs) builds the network and the collectors in a VM
//! guest that has `rdma_rxe` and runs the script; `collector/tests/responder_conformance.rs` keeps the
//! answers rxe gave as literal expectations for the in-process responder.
//!
//! One job a file: [`cases`] (the script), [`frames`] (requests built, responses parsed), [`wire`] (the
//! raw port), `side` (one collector under test), `outcome` (one request's answer and the differences),
//! `judge` (one case's verdict), `departures` (what is kept on purpose, what was fixed) and `render`.

pub mod cases;
mod departures;
pub mod frames;
mod judge;
mod outcome;
mod render;
mod side;
pub mod wire;

pub use departures::{Departure, DEPARTURES, FIXED};
pub use judge::{judge, Row, Verdict};
pub use outcome::{differences, CaseRun, StepOutcome};
pub use render::{describe_step, render};
pub use side::{Side, LIST_ENTRIES, LIST_ENTRY_SIZE, LIST_ID, RESPONSE_WAIT};
