//! Issue 14's floors beside the numbers the issue started from (`bench/baseline.json`) and this run: one
//! table at the top of results.md, so "is every floor met, in one run" is read off one place.

use serde_json::{json, Value};

/// A row: what, where to find it in this run and in the baseline, and the floor.
struct Floor {
    what: &'static str,
    kind: Kind,
    floor: f64,
}

enum Kind {
    /// A translator mode on one core, ratio to testpmd io-fwd.
    Translator(&'static str),
    /// A software responder mode, ratio to testpmd io-fwd.
    Responder(&'static str),
    /// A pktgen workload, ratio to testpmd txonly.
    Pktgen(&'static str),
}

const FLOORS: &[Floor] = &[
    Floor {
        what: "translator Key-Write N=1 (1 core)",
        kind: Kind::Translator("keywrite-n1"),
        floor: 0.35,
    },
    Floor {
        what: "translator Key-Write N=2 (1 core)",
        kind: Kind::Translator("keywrite-n2"),
        floor: 0.20,
    },
    Floor {
        what: "translator Append B=16 (1 core)",
        kind: Kind::Translator("append-b16"),
        floor: 0.50,
    },
    Floor {
        what: "translator Postcarding (1 core)",
        kind: Kind::Translator("postcard5"),
        floor: 0.40,
    },
    Floor {
        what: "translator Sketch-Merge (1 core)",
        kind: Kind::Translator("sketch"),
        floor: 0.40,
    },
    Floor {
        what: "translator Key-Increment (1 core)",
        kind: Kind::Translator("keyincrement"),
        floor: 0.15,
    },
    Floor {
        what: "software responder WRITE",
        kind: Kind::Responder("write"),
        floor: 0.30,
    },
    Floor {
        what: "pktgen Key-Write (vs txonly)",
        kind: Kind::Pktgen("keywrite"),
        floor: 0.60,
    },
];

fn ratio(k: &Kind, translator: &[Value], responder: &[Value], pktgen: &[Value]) -> Option<f64> {
    match k {
        Kind::Translator(m) => translator
            .iter()
            .find(|r| r["mode"] == *m && r["workers"] == 1)
            .and_then(|r| r["ratio_to_testpmd_io"].as_f64()),
        Kind::Responder(m) => responder
            .iter()
            .find(|r| r["mode"] == *m)
            .and_then(|r| r["ratio_to_testpmd_io"].as_f64()),
        Kind::Pktgen(w) => pktgen
            .iter()
            .find(|r| r["workload"] == *w)
            .and_then(|r| r["ratio_to_testpmd_txonly"].as_f64()),
    }
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v[key].as_array().map_or(&[], Vec::as_slice)
}

/// The markdown section and its JSON. `baseline` is bench/baseline.json (Null when missing).
pub fn section(
    baseline: &Value,
    translator: &[Value],
    responder: &[Value],
    pktgen: &[Value],
) -> (String, Value) {
    let mut md = String::from("## Issue 14's floors: before, this run\n\n");
    md.push_str(&format!(
        "Before: `bench/baseline.json` ({}).\n\n",
        baseline["source"].as_str().unwrap_or("missing")
    ));
    md.push_str("| path | before | this run | floor | met |\n|---|---|---|---|---|\n");
    let mut rows = Vec::new();
    let fmt = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.3}"));
    for f in FLOORS {
        let before = ratio(
            &f.kind,
            list(baseline, "translator"),
            list(baseline, "responder"),
            list(baseline, "pktgen"),
        );
        let now = ratio(&f.kind, translator, responder, pktgen);
        let met = now.is_some_and(|n| n >= f.floor);
        md.push_str(&format!(
            "| {} | {} | {} | {:.2} | {} |\n",
            f.what,
            fmt(before),
            fmt(now),
            f.floor,
            if met { "yes" } else { "no" }
        ));
        rows.push(
            json!({"path": f.what, "before": before, "now": now, "floor": f.floor, "met": met}),
        );
    }
    md.push('\n');
    (md, Value::Array(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_read_both_runs() {
        let base = json!({
            "source": "test",
            "translator": [{"mode": "keywrite-n1", "workers": 1, "ratio_to_testpmd_io": 0.1}],
            "responder": [], "pktgen": []
        });
        let now = [
            json!({"mode": "keywrite-n1", "workers": 1, "ratio_to_testpmd_io": 0.4}),
            json!({"mode": "keywrite-n1", "workers": 2, "ratio_to_testpmd_io": 0.1}),
        ];
        let (md, v) = section(&base, &now, &[], &[]);
        assert!(
            md.contains("| translator Key-Write N=1 (1 core) | 0.100 | 0.400 | 0.35 | yes |"),
            "{md}"
        );
        assert!(
            md.contains("| translator Key-Write N=2 (1 core) | n/a | n/a | 0.20 | no |"),
            "{md}"
        );
        assert_eq!(v[0]["met"], true);
        assert_eq!(v.as_array().map(Vec::len), Some(FLOORS.len()));
    }
}
