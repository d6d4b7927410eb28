//! `dta-pktgen --dpdk` on a DPDK `net_null` port (no hugepages): every frame is accepted by the port and
//! the summary says so.

#[cfg(feature = "dpdk")]
#[test]
fn sends_every_frame_out_of_a_dpdk_port() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dta-pktgen"))
        .args([
            "--workload",
            "mix",
            "--count",
            "20000",
            "--dpdk",
            "net_null0,no-rx=1",
        ])
        .output()
        .expect("run dta-pktgen");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a JSON summary line"))
            .expect("JSON summary");
    assert_eq!(summary["output"], "dpdk");
    assert_eq!(summary["sent"], 20000);
    assert_eq!(summary["dropped"], 0);
    let per_op = summary["per_opcode"]
        .as_object()
        .expect("per-opcode counts");
    assert_eq!(
        per_op.values().map(|v| v.as_u64().unwrap()).sum::<u64>(),
        20000
    );
}
