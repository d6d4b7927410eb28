//! The translator's metric families, encoded by prometheus-client at scrape time from what the workers
//! published. Workers keep plain counters on the hot path and hand over [`Snapshot`]s; a
//! scrape sums them here, so nothing on the hot path touches a shared atomic or a registry.
//!
//! Counter families are named without `_total`: the encoder appends it.
//!
//! [`Snapshot`]: super::super::worker::Snapshot

use std::fmt;
use std::sync::atomic::Ordering;

use dta_httpd::openmetrics::{counter, counters, gauges};
use dta_protocol::dta::Opcode;
use dta_translator::int::IntDrop;
use dta_translator::DropReason;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use super::super::control::{ControlCounters, Refused};
use super::{Sources, Totals, PRIMITIVES};

/// [`Sources`] as a prometheus-client collector: one registration, read at every scrape, with the
/// per switch labels given so far (see [`per_node`](super::per_node)).
pub(super) struct Families(
    pub(super) Sources,
    pub(super) std::sync::Mutex<super::per_node::Labelled>,
);

impl fmt::Debug for Families {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Families")
    }
}

impl Collector for Families {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let src = &self.0;
        let snaps = src.snapshots();
        let t = Totals::of(&snaps);
        let plane = src.plane();
        let c = &t.c;
        let enc = &mut enc;
        let per_primitive = |a: &[u64; Opcode::COUNT]| -> Vec<_> {
            PRIMITIVES
                .iter()
                .map(|p| [("primitive", *p)])
                .zip(a.iter().copied())
                .collect()
        };
        counter(
            enc,
            "frames_in",
            "Frames handed to the engines.",
            c.frames_in,
        )?;
        counters(
            enc,
            "reports",
            "Well-formed reports by primitive.",
            per_primitive(&c.reports_in),
        )?;
        counters(
            enc,
            "rdma_ops",
            "RDMA operations first sent, by primitive.",
            per_primitive(&c.ops_out),
        )?;
        counters(
            enc,
            "report_drops",
            "Reports dropped, by reason.",
            DropReason::ALL
                .iter()
                .map(|r| ([("reason", r.label())], c.dropped(*r))),
        )?;
        counters(
            enc,
            "int_drops",
            "INT reports not translated, by reason.",
            IntDrop::ALL
                .iter()
                .map(|r| ([("reason", r.label())], c.int.dropped(*r))),
        )?;
        for (name, help, v) in [
            ("roce_frames_out", "RoCE frames sent, retransmissions included.", c.roce_frames_out),
            ("roce_bytes_out", "RoCE bytes sent, retransmissions included.", c.roce_bytes_out),
            ("retransmitted_frames", "RoCE frames sent again.", c.retransmitted_frames),
            ("retransmit_timeouts", "Retransmit timeouts.", c.retransmit_timeouts),
            ("acks", "ACKs received.", c.acks),
            ("atomic_acks", "ATOMIC ACKNOWLEDGEs received.", c.atomic_acks),
            ("naks_psn_sequence", "PSN sequence error NAKs.", c.nak_psn_sequence),
            ("naks_rnr", "RNR NAKs.", c.nak_rnr),
            (
                "naks_remote",
                "Invalid request, remote access and remote operational NAKs.",
                c.nak_invalid_request + c.nak_remote_access + c.nak_remote_operational,
            ),
            ("stale_responses", "Responses matching nothing in flight.", c.stale_responses),
            (
                "bad_icrc_responses",
                "RoCE frames from a collector whose iCRC did not match (dropped).",
                c.bad_icrc_responses,
            ),
            ("cnps", "Congestion notification packets.", c.cnps),
            ("qp_errors", "QPs that went into error.", c.qp_errors),
            ("rate_limited", "Times a frame waited for rate-limiter tokens.", c.rate_limited),
            ("dta_nacks", "DTA NACKs sent to reporters.", c.dta_nacks_sent),
            ("append_head_writes", "Append head-word writes.", c.append_head_writes),
            ("increments_coalesced", "Increments folded into earlier ones.", c.increments_coalesced),
            ("postcard_evictions", "Postcard chunks written on eviction.", c.postcard_evictions),
            ("postcard_timeouts", "Postcard chunks written on idle.", c.postcard_timeouts),
            (
                "postcard_continuations",
                "Postcard flushes without hop 1, which wrote only the cells they held.",
                c.postcard_continuations,
            ),
            ("int_packets", "UDP payloads taken on the INT port.", c.int.packets),
            ("int_reports", "INT reports translated (each report of a v2.0 group).", c.int.reports),
            ("int_reports_late", "INT reports behind their sequence.", c.int.late),
            (
                "int_sequences_untracked",
                "INT reports from sources beyond int.max_sequences.",
                c.int.untracked,
            ),
            ("int_whole_paths", "INT sink reports carrying a whole path.", c.int.whole_paths),
            (
                "int_sequence_resets",
                "INT sequence numbers too far from their source's newest to be loss or lateness (a reporter that restarted): tracking started again from them.",
                c.int.resets,
            ),
            ("qp_reestablished", "QPs resumed after an error (per worker).", t.reestablished),
            (
                "collector_restarts_seen",
                "Collector restarts the workers started over from (per worker).",
                t.restarts,
            ),
            (
                "reports_lost_on_restart",
                "Reports not written when their collector restarted with new memory, or came back with memory the translator cannot use (their writes queued or unacknowledged, or held in a batch, cache or merge).",
                t.lost_on_restart,
            ),
            (
                "reports_lost_at_stop",
                "Reports not written when the translator stopped (collector down or slow beyond the drain).",
                t.abandoned_at_stop,
            ),
            ("forwarded", "Frames forwarded untouched between the ports.", plane.forwarded),
            ("not_forwarded", "Foreign frames dropped in single-port mode.", plane.not_forwarded),
            ("arp_replies", "ARP requests for our address answered.", plane.arp_replies),
            (
                "handed_off",
                "Frames a worker received and handed to the worker that owns their state (DPDK).",
                plane.handed_off,
            ),
            (
                "handoff_waits",
                "Polls in which a worker received nothing because another worker's handoff ring was full (DPDK).",
                plane.handoff_waits,
            ),
            (
                "worker_backlog_drops",
                "Frames dropped because their worker fell behind (its input or handoff ring full).",
                plane.handoff_full,
            ),
            (
                "startup_drops",
                "Reports and responses that arrived before the workers started (collectors still connecting).",
                plane.startup_drops,
            ),
        ] {
            counter(enc, name, help, v)?;
        }
        counters(
            enc,
            "worker_reports",
            "Well-formed reports taken by each worker (how RSS, fanout and handoff spread them).",
            snaps.iter().enumerate().map(|(k, s)| {
                (
                    [("worker", k.to_string())],
                    s.counters.reports_in.iter().sum(),
                )
            }),
        )?;
        // A gauge: a late report that fills a gap moves it from lost to late, so the count can go down,
        // which a counter must not (Prometheus would read it as a reset).
        dta_httpd::openmetrics::gauge(
            enc,
            "int_reports_lost",
            "INT reports lost before the translator now: sequence-number gaps not filled by a late report.",
            i64::try_from(c.int.lost).unwrap_or(i64::MAX),
        )?;
        super::per_node::encode(enc, &self.1, &snaps)?;
        qp_gauges(enc, &snaps)?;
        control(enc, &src.control)?;
        ports(enc, src)
    }
}

/// Per QP (worker × collector) gauges.
fn qp_gauges(enc: &mut DescriptorEncoder, snaps: &[super::Snapshot]) -> fmt::Result {
    let qps = || {
        snaps.iter().enumerate().flat_map(|(k, s)| {
            s.qps
                .iter()
                .enumerate()
                .map(move |(i, q)| ([("worker", k.to_string()), ("collector", i.to_string())], q))
        })
    };
    gauges(
        enc,
        "qp_window",
        "Frames in flight per QP.",
        qps().map(|(l, q)| (l, q.window as u64)),
    )?;
    gauges(
        enc,
        "qp_queue",
        "Work requests waiting per QP.",
        qps().map(|(l, q)| (l, q.queue as u64)),
    )?;
    gauges(
        enc,
        "qp_window_limit",
        "Frames allowed in flight per QP (halved on loss, regrown by ACKs).",
        qps().map(|(l, q)| (l, u64::from(q.window_limit))),
    )?;
    gauges(
        enc,
        "qp_retransmit_timeout_microseconds",
        "Base retransmit timeout per QP (adaptive: smoothed RTT + 4 x variation, clamped).",
        qps().map(|(l, q)| (l, q.timeout_ns / 1000)),
    )?;
    gauges(
        enc,
        "qp_smoothed_rtt_microseconds",
        "Smoothed round-trip time per QP, once measured.",
        qps().filter_map(|(l, q)| Some((l, q.srtt_ns? / 1000))),
    )
}

/// Per collector control-channel counters.
fn control(
    enc: &mut DescriptorEncoder,
    control: &[std::sync::Arc<ControlCounters>],
) -> fmt::Result {
    let ctl = |f: fn(&ControlCounters) -> u64| {
        control
            .iter()
            .enumerate()
            .map(move |(i, c)| ([("collector", i.to_string())], f(c)))
    };
    counters(
        enc,
        "control_welcomes",
        "Welcomes from each collector.",
        ctl(|c| c.welcomes.load(Ordering::Relaxed)),
    )?;
    counters(
        enc,
        "control_failures",
        "Failed control connections or handshakes.",
        ctl(|c| c.failures.load(Ordering::Relaxed)),
    )?;
    counters(
        enc,
        "collector_restarts",
        "Collector restarts detected (new memory).",
        ctl(|c| c.restarts.load(Ordering::Relaxed)),
    )?;
    counters(
        enc,
        "control_reestablished",
        "QP sets re-created after errors.",
        ctl(|c| c.reestablished.load(Ordering::Relaxed)),
    )?;
    counters(
        enc,
        "control_welcomes_refused",
        "Collector answers not taken, by reason (refused_by_collector: token or version; qp_mismatch; unusable_welcome: regions the translator cannot write, asked again with backoff; qps_in_use: another live translator with this one's address and QPNs holds them, asked again with backoff).",
        control.iter().enumerate().flat_map(|(i, c)| {
            Refused::ALL
                .iter()
                .zip(&c.refused)
                .map(move |(r, n)| {
                    (
                        [("collector", i.to_string()), ("reason", r.label().to_string())],
                        n.load(Ordering::Relaxed),
                    )
                })
        }),
    )?;
    gauges(
        enc,
        "collector_usable",
        "1 while the collector's last welcome is in use, 0 while the translator waits for a usable one.",
        ctl(|c| c.usable.load(Ordering::Relaxed)),
    )
}

/// Per port counters.
fn ports(enc: &mut DescriptorEncoder, src: &Sources) -> fmt::Result {
    let ports = src.port_totals();
    type Port = (String, dta_netio::RxStats, dta_netio::TxStats);
    let per_port = |f: fn(&Port) -> u64| ports.iter().map(move |p| ([("port", p.0.clone())], f(p)));
    counters(
        enc,
        "port_rx_frames",
        "Frames received per port.",
        per_port(|p| p.1.frames),
    )?;
    counters(
        enc,
        "port_rx_dropped",
        "Frames received but dropped (oversize) per port.",
        per_port(|p| p.1.dropped),
    )?;
    counters(
        enc,
        "port_rx_missed",
        "Frames lost before they were received (socket buffer or NIC ring full), where the port can tell.",
        per_port(|p| p.1.missed),
    )?;
    counters(
        enc,
        "port_tx_frames",
        "Frames sent per port.",
        per_port(|p| p.2.frames),
    )?;
    counters(
        enc,
        "port_tx_dropped",
        "Frames the port refused (queue full, or link down) per port.",
        per_port(|p| p.2.dropped),
    )?;
    links(enc, src, &ports)
}

/// Per port link state and falls, where the port can tell (DPDK), as worker 0 watches them; and the faults
/// of shared-memory drivers the data path survived.
fn links(enc: &mut DescriptorEncoder, src: &Sources, ports: &super::PortStats) -> fmt::Result {
    let snaps = src.snapshots();
    let watch = snaps.iter().find(|s| !s.links.is_empty());
    let per_port = || {
        ports
            .iter()
            .zip(watch.map(|s| s.links.as_slice()).unwrap_or(&[]))
            .filter(|(_, (up, _))| up.is_some())
            .map(|(p, l)| ([("port", p.0.clone())], *l))
    };
    gauges(
        enc,
        "port_link_up",
        "Whether the port's link is up (1) or down (0): a net_memif port is down while its peer is gone.",
        per_port().map(|(l, (up, _))| (l, u64::from(up == Some(true)))),
    )?;
    counters(
        enc,
        "port_link_downs",
        "Times the port's link was seen going down.",
        per_port().map(|(l, (_, downs))| (l, downs)),
    )?;
    #[cfg(feature = "dpdk")]
    counter(
        enc,
        "port_driver_faults",
        "Bursts whose driver faulted and that were counted as empty instead of killing the process (net_memif unmapping a gone peer's rings under a burst).",
        dta_netio::dpdk::pmd_faults(),
    )?;
    Ok(())
}
