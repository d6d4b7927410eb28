//! The shipped monitoring files (issue 28): `deploy/prometheus/rules.yml` passes `promtool check rules`,
//! and every expression of the Grafana dashboard (`deploy/grafana/`) parses, checked by promtool as
//! recording rules. No namespaces and no daemons: `tests/prometheus.rs` evaluates them all against a
//! real Prometheus scraping both daemons. Without promtool these print SKIP, unless
//! DTA_REQUIRE_PROMETHEUS=1 or DTA_REQUIRE_NETNS=1 (`make unit` sets both).

use std::process::Command;

use anyhow::{ensure, Context, Result};
use dta_e2e::prometheus::{dashboard_exprs, dashboard_file, rules_file, tool_or_skip};

fn promtool_check(promtool: &std::path::Path, file: &std::path::Path) -> Result<()> {
    let out = Command::new(promtool)
        .args(["check", "rules"])
        .arg(file)
        .output()
        .context("running promtool")?;
    ensure!(
        out.status.success(),
        "promtool check rules {}:\n{}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[test]
fn promtool_checks_the_shipped_rules() -> Result<()> {
    let Some(promtool) = tool_or_skip("promtool")? else {
        return Ok(());
    };
    promtool_check(&promtool, &rules_file())
}

#[test]
fn every_dashboard_expression_parses() -> Result<()> {
    let text = std::fs::read_to_string(dashboard_file())?;
    let dashboard: serde_json::Value = serde_json::from_str(&text).context("dashboard JSON")?;
    let exprs = dashboard_exprs(&dashboard, "1m");
    let panels = dashboard["panels"].as_array().context("panels")?;
    ensure!(
        !panels.is_empty() && exprs.len() >= panels.len(),
        "every panel has an expression: {} panels, {} expressions",
        panels.len(),
        exprs.len()
    );
    let Some(promtool) = tool_or_skip("promtool")? else {
        return Ok(());
    };
    // Each expression as a recording rule: promtool parses it (JSON strings are valid YAML scalars).
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, (_, e)) in exprs.iter().enumerate() {
        rules += &format!(
            "      - record: dashboard:expr{i}\n        expr: {}\n",
            serde_json::to_string(e)?
        );
    }
    let file = std::env::temp_dir().join(format!("dta-dashboard-rules-{}.yml", std::process::id()));
    std::fs::write(&file, rules)?;
    let checked = promtool_check(&promtool, &file);
    let _ = std::fs::remove_file(&file);
    checked
}
