//! The verdict on one case: both sides' answers and memory compared, departures and fixes named.

use super::cases::{Case, WINDOW};
use super::departures::{DEPARTURES, FIXED};
use super::outcome::{differences, CaseRun};

/// The verdict on one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Same responses and memory.
    Match,
    /// Same now; differed before a fix in our responder.
    Fixed(&'static str),
    /// Differs, on purpose.
    Departure(Vec<&'static str>),
    /// Differs without a documented reason.
    Different,
}

/// One row of the report.
#[derive(Debug, Clone)]
pub struct Row {
    pub case: Case,
    pub judge: Option<CaseRun>,
    pub ours: CaseRun,
    /// Per step: fields that differ.
    pub step_diffs: Vec<Vec<&'static str>>,
    /// Whether the case's window and the bytes outside every window agree.
    pub memory_equal: Option<bool>,
    pub verdict: Option<Verdict>,
}

/// Compares the two sides of case `index` (of `count`) and decides the verdict.
pub fn judge(index: usize, count: usize, case: Case, judge: Option<CaseRun>, ours: CaseRun) -> Row {
    let Some(j) = judge else {
        return Row {
            case,
            judge: None,
            ours,
            step_diffs: Vec::new(),
            memory_equal: None,
            verdict: None,
        };
    };
    let step_diffs: Vec<Vec<&'static str>> = j
        .steps
        .iter()
        .zip(&ours.steps)
        .map(|(a, b)| differences(a, b))
        .collect();
    let w = |m: &[u8]| {
        let lo = (index as u64 * WINDOW) as usize;
        let hi = lo + WINDOW as usize;
        (
            m.get(lo..hi).map(<[u8]>::to_vec),
            m.get(count * WINDOW as usize..).map(<[u8]>::to_vec),
        )
    };
    let memory_equal = w(&j.scratch) == w(&ours.scratch);
    let excused = |step: Option<usize>| {
        DEPARTURES
            .iter()
            .filter(|d| d.case == case.name && (d.step.is_none() || d.step == step))
            .map(|d| d.reason)
            .collect::<Vec<_>>()
    };
    let mut reasons = Vec::new();
    let mut unexplained = false;
    for (i, d) in step_diffs.iter().enumerate() {
        if !d.is_empty() {
            let r = excused(Some(i));
            unexplained |= r.is_empty();
            reasons.extend(r);
        }
    }
    if !memory_equal {
        let r = excused(None);
        unexplained |= r.is_empty();
        reasons.extend(r);
    }
    reasons.dedup();
    let verdict = if unexplained {
        Verdict::Different
    } else if !reasons.is_empty() {
        Verdict::Departure(reasons)
    } else if let Some((_, what)) = FIXED.iter().find(|(c, _)| *c == case.name) {
        Verdict::Fixed(what)
    } else {
        Verdict::Match
    };
    Row {
        case,
        judge: Some(j),
        ours,
        step_diffs,
        memory_equal: Some(memory_equal),
        verdict: Some(verdict),
    }
}
