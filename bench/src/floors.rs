//! Issue 14's floors beside the numbers the issue started from (`bench/baseline.json`) and this run: one
//! table at the top of results.md, so "is every floor met, in one run" is read off one place. Beside each
//! ratio to testpmd (the floors' reference) stands the like-for-like one: to io forwarding through
//! dta-netio, whose pool the translator uses (testpmd's pool, without hugepages, puts every mbuf of a burst
//! into the same L1 sets; dta-netio's packs them).

use serde_json::{json, Value};

/// A row: what, where to find it in this run and in the baseline, and the floor (a least ratio, or for
/// [`Kind::Instructions`] a most).
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
    /// A translator mode's instructions per report under callgrind (at most the floor).
    Instructions(&'static str),
}

const FLOORS: &[Floor] = &[
    Floor {
        what: "translator Key-Write N=1 (1 core)",
        kind: Kind::Translator("keywrite-n1"),
        floor: 0.35,
    },
    Floor {
        what: "translator Key-Write N=1, instructions per report (callgrind)",
        kind: Kind::Instructions("keywrite-n1"),
        floor: 450.0,
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

/// The measurements of one run (or of the baseline) the floors read.
pub struct Run<'a> {
    pub translator: &'a [Value],
    pub responder: &'a [Value],
    pub pktgen: &'a [Value],
    /// Instructions per report by translator mode.
    pub instructions: &'a Value,
}

/// The row's value in `run`: its ratio to testpmd, or its instruction count.
fn value(k: &Kind, run: &Run) -> Option<f64> {
    match k {
        Kind::Translator(m) => {
            translator_row(run, m).and_then(|r| r["ratio_to_testpmd_io"].as_f64())
        }
        Kind::Responder(m) => responder_row(run, m).and_then(|r| r["ratio_to_testpmd_io"].as_f64()),
        Kind::Pktgen(w) => run
            .pktgen
            .iter()
            .find(|r| r["workload"] == *w)
            .and_then(|r| r["ratio_to_testpmd_txonly"].as_f64()),
        Kind::Instructions(m) => run.instructions[*m].as_f64(),
    }
}

/// The row's like-for-like ratio in `run` (to io forwarding through dta-netio), where there is one.
fn like_for_like(k: &Kind, run: &Run) -> Option<f64> {
    let row = match k {
        Kind::Translator(m) => translator_row(run, m),
        Kind::Responder(m) => responder_row(run, m),
        Kind::Pktgen(_) | Kind::Instructions(_) => None,
    };
    row.and_then(|r| r["ratio_to_netio_io"].as_f64())
}

fn translator_row<'a>(run: &Run<'a>, mode: &str) -> Option<&'a Value> {
    run.translator
        .iter()
        .find(|r| r["mode"] == mode && r["workers"] == 1)
}

fn responder_row<'a>(run: &Run<'a>, mode: &str) -> Option<&'a Value> {
    run.responder.iter().find(|r| r["mode"] == mode)
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v[key].as_array().map_or(&[], Vec::as_slice)
}

/// The markdown section and its JSON. `baseline` is bench/baseline.json (Null when missing).
pub fn section(baseline: &Value, run: &Run) -> (String, Value) {
    let mut md = String::from("## Issue 14's floors: before, this run\n\n");
    md.push_str(&format!(
        "Before: `bench/baseline.json` ({}).\n\n",
        baseline["source"].as_str().unwrap_or("missing")
    ));
    md.push_str(
        "Ratios are to testpmd, as the floors are defined. The like-for-like column divides by io forwarding \
         through dta-netio in the same run: without hugepages its pool packs the mbufs, while testpmd's puts \
         one at the start of each 4 KiB page, where all of a burst's mbufs share a few L1 sets, so testpmd \
         forwards slower here than the same loop on the translator's pool.\n\n",
    );
    md.push_str(
        "| path | before | this run | floor | met | like-for-like (to io-fwd through dta-netio) |\n\
         |---|---|---|---|---|---|\n",
    );
    let before_run = Run {
        translator: list(baseline, "translator"),
        responder: list(baseline, "responder"),
        pktgen: list(baseline, "pktgen"),
        instructions: &baseline["instructions_per_report"],
    };
    let mut rows = Vec::new();
    for f in FLOORS {
        let instructions = matches!(f.kind, Kind::Instructions(_));
        let fmt = |x: Option<f64>| {
            x.map_or("n/a".to_string(), |v| {
                if instructions {
                    format!("{v:.0}")
                } else {
                    format!("{v:.3}")
                }
            })
        };
        let before = value(&f.kind, &before_run);
        let now = value(&f.kind, run);
        let met = now.is_some_and(|n| {
            if instructions {
                n <= f.floor
            } else {
                n >= f.floor
            }
        });
        let floor = if instructions {
            format!("<= {:.0}", f.floor)
        } else {
            format!("{:.2}", f.floor)
        };
        let lfl = like_for_like(&f.kind, run);
        md.push_str(&format!(
            "| {} | {} | {} | {floor} | {} | {} |\n",
            f.what,
            fmt(before),
            fmt(now),
            if met { "yes" } else { "no" },
            lfl.map_or(String::new(), |v| format!("{v:.3}")),
        ));
        rows.push(json!({
            "path": f.what, "before": before, "now": now, "floor": f.floor, "at_most": instructions,
            "met": met, "like_for_like": lfl,
        }));
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
            "responder": [], "pktgen": [],
            "instructions_per_report": {"keywrite-n1": 1460.0}
        });
        let now = [
            json!({"mode": "keywrite-n1", "workers": 1, "ratio_to_testpmd_io": 0.4,
                   "ratio_to_netio_io": 0.25}),
            json!({"mode": "keywrite-n1", "workers": 2, "ratio_to_testpmd_io": 0.1}),
        ];
        let instructions = json!({"keywrite-n1": 500.4});
        let run = Run {
            translator: &now,
            responder: &[],
            pktgen: &[],
            instructions: &instructions,
        };
        let (md, v) = section(&base, &run);
        assert!(
            md.contains(
                "| translator Key-Write N=1 (1 core) | 0.100 | 0.400 | 0.35 | yes | 0.250 |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| translator Key-Write N=1, instructions per report (callgrind) | 1460 | 500 | <= 450 | no |  |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| translator Key-Write N=2 (1 core) | n/a | n/a | 0.20 | no |  |"),
            "{md}"
        );
        assert_eq!(v[0]["met"], true);
        assert_eq!(
            (v[1]["met"].clone(), v[1]["at_most"].clone()),
            (json!(false), json!(true))
        );
        assert_eq!(v.as_array().map(Vec::len), Some(FLOORS.len()));

        // An instruction count at the floor meets it.
        let at = json!({"keywrite-n1": 450.0});
        let run = Run {
            instructions: &at,
            ..run
        };
        assert_eq!(section(&base, &run).1[1]["met"], true);
    }
}
