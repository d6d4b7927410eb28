//! The report: each request in short form and the table of verdicts.

use dta_protocol::roce::PSN_MASK;

use super::cases::{self, Op, QpRef, Step};
use super::departures::DEPARTURES;
use super::judge::{Row, Verdict};

/// A short form of a request, PSN relative to the case's start.
pub fn describe_step(s: &Step) -> String {
    let op = match s.op {
        Op::Write { len, .. } => format!("WRITE {len}B"),
        Op::UcWrite { .. } => "UC-WRITE".into(),
        Op::WriteImm { .. } => "WRITE-IMM".into(),
        Op::FetchAdd { add, .. } => format!("FETCH_ADD +{add}"),
        Op::CmpSwap { compare, swap, .. } => format!("CMP_SWAP {compare}->{swap:#x}"),
        Op::Read { len, .. } => format!("READ {len}B"),
        Op::Send { len, .. } => format!("SEND {len}B"),
        Op::Raw {
            code, reth, len, ..
        } => match reth {
            Some((_, dma)) => format!("op {code:#04x} dma={dma} {len}B"),
            None => format!("op {code:#04x} {len}B"),
        },
    };
    let mut t = format!("{op} psn{:+}", s.psn);
    if s.ack_req {
        t.push_str(" A");
    }
    if s.key != cases::Key::Good {
        t.push_str(" badkey");
    }
    if s.qp == QpRef::Unknown {
        t.push_str(" qp?");
    }
    if s.pkey != 0xFFFF {
        t.push_str(&format!(" pkey={:#x}", s.pkey));
    }
    if s.bad_icrc {
        t.push_str(" badcrc");
    }
    t
}

/// The report as text: one line per step, a memory line and a verdict per case, then the departures.
pub fn render(rows: &[Row]) -> String {
    let mut t = String::new();
    let judged = rows.iter().any(|r| r.judge.is_some());
    t.push_str(&format!(
        "{:<30} {:<28} {:<34} {:<34} {}\n",
        "case",
        "request",
        "rxe",
        "ours (soft)",
        if judged { "differs in" } else { "" }
    ));
    for r in rows {
        let start = r.case.start_psn & PSN_MASK;
        for (i, step) in r.case.steps.iter().enumerate() {
            let judge = r
                .judge
                .as_ref()
                .and_then(|j| j.steps.get(i))
                .map_or("(not run)".to_string(), |o| o.describe(start));
            let ours = r
                .ours
                .steps
                .get(i)
                .map_or(String::new(), |o| o.describe(start));
            let diff = r.step_diffs.get(i).map_or(String::new(), |d| d.join(","));
            t.push_str(&format!(
                "{:<30} {:<28} {:<34} {:<34} {}\n",
                if i == 0 { r.case.name } else { "" },
                describe_step(step),
                judge,
                ours,
                diff
            ));
        }
        let mem = match r.memory_equal {
            Some(true) => "memory equal",
            Some(false) => "MEMORY DIFFERS",
            None => "memory not compared",
        };
        let verdict = match &r.verdict {
            None => "-".to_string(),
            Some(Verdict::Match) => "match".into(),
            Some(Verdict::Fixed(w)) => format!("fixed: {w}"),
            Some(Verdict::Departure(rs)) => format!("departure: {}", rs.join("; ")),
            Some(Verdict::Different) => "DIFFERENT (not a documented departure)".into(),
        };
        t.push_str(&format!("{:<30} {mem}; verdict: {verdict}\n", ""));
    }
    if !DEPARTURES.is_empty() {
        t.push_str("\nDeliberate departures from rxe:\n");
        for d in DEPARTURES {
            let step = d.step.map_or("all".to_string(), |s| s.to_string());
            t.push_str(&format!("  {} (step {step}): {}\n", d.case, d.reason));
        }
    }
    t
}
