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

/// The frames of a pcap file, without their records' timestamps.
#[cfg(feature = "dpdk")]
fn pcap_frames(path: &std::path::Path) -> Vec<Vec<u8>> {
    let file = std::fs::File::open(path).expect("open the pcap");
    let mut r = pcap_file::pcap::PcapReader::new(file).expect("a pcap");
    let mut frames = Vec::new();
    while let Some(p) = r.next_packet() {
        frames.push(p.expect("a pcap record").data.to_vec());
    }
    frames
}

/// The frames that leave a DPDK port (`net_pcap`, which writes what it is given) are byte for byte the
/// frames `--pcap` writes for the same workload and seed: the burst built in the mbufs is the generator's
/// output, in order, none lost or repeated.
#[cfg(feature = "dpdk")]
#[test]
fn dpdk_frames_equal_the_pcap_output() {
    let dir = std::env::temp_dir().join(format!("dta-pktgen-dpdk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (via_dpdk, via_pcap) = (dir.join("dpdk.pcap"), dir.join("pcap.pcap"));
    let run = |out: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_dta-pktgen"))
            .args(["--workload", "mix", "--count", "3000"])
            .args(out)
            .output()
            .expect("run dta-pktgen");
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&[
        "--dpdk",
        &format!("net_pcap0,tx_pcap={}", via_dpdk.display()),
    ]);
    run(&["--pcap", &via_pcap.display().to_string()]);
    let (a, b) = (pcap_frames(&via_dpdk), pcap_frames(&via_pcap));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(a.len(), 3000);
    assert_eq!(a, b);
}
