//! What one request got back on one side, and the fields in which two sides' answers differ.

use super::frames::Resp;

/// What one request got back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepOutcome {
    /// The first response, if any.
    pub resp: Option<Resp>,
    /// Responses after the first (none expected).
    pub extra: u32,
}

impl StepOutcome {
    /// A short human form.
    pub fn describe(&self, start_psn: u32) -> String {
        let mut t = match &self.resp {
            Some(r) => r.describe(start_psn),
            None => "-".into(),
        };
        if self.extra > 0 {
            t.push_str(&format!(" (+{} more)", self.extra));
        }
        t
    }
}

/// One side's results for one case.
#[derive(Debug, Clone)]
pub struct CaseRun {
    /// Per step.
    pub steps: Vec<StepOutcome>,
    /// The scratch entries after the case.
    pub scratch: Vec<u8>,
}

/// The fields in which two outcomes differ (empty when they agree).
pub fn differences(a: &StepOutcome, b: &StepOutcome) -> Vec<&'static str> {
    let mut d = Vec::new();
    match (&a.resp, &b.resp) {
        (None, None) => {}
        (Some(_), None) | (None, Some(_)) => d.push("presence"),
        (Some(x), Some(y)) => {
            let checks: [(&'static str, bool); 9] = [
                ("opcode", x.opcode == y.opcode),
                ("bth-flags", x.flags == y.flags),
                ("pkey", x.pkey == y.pkey),
                ("dest-qp", x.dest_qp == y.dest_qp),
                ("psn", x.psn == y.psn),
                ("syndrome", x.syndrome == y.syndrome),
                ("msn", x.msn == y.msn),
                ("orig", x.orig == y.orig),
                ("icrc", x.icrc_ok == y.icrc_ok),
            ];
            d.extend(checks.iter().filter(|c| !c.1).map(|c| c.0));
        }
    }
    if a.extra != b.extra {
        d.push("extra-responses");
    }
    d
}
