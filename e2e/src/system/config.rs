//! The daemons' configuration files of a run, and the fixed ports and token they use.

use super::{Export, Io, Responder};
use crate::topo;
use crate::{int_workload, workload};

/// The database the collector's ClickHouse sink writes, in runs with [`Export::clickhouse`].
pub const CLICKHOUSE_DATABASE: &str = "dta_e2e";
/// Where that server listens: the collector's management address.
pub(super) const CLICKHOUSE_PORT: u16 = 8123;

pub use crate::history::CLICKHOUSE_SERVER;

/// The control token of every run.
pub const TOKEN: &str = "e2e-token";
/// The Soft-RoCE device of [`Responder::Rxe`] runs.
pub const RXE_DEVICE: &str = "rxe0";
/// `[requester] retry_limit` of the translator (and DART) in [`Responder::Rxe`] runs.
pub const RXE_RETRY_LIMIT: u32 = 16;
/// The collector's control port (on its management address).
pub const CONTROL_PORT: u16 = 40050;
pub(super) const HTTP_PORT: u16 = 40060;
pub(super) const METRICS_PORT: u16 = 9100;

pub(super) fn collector_config(
    faults: Option<(f64, f64)>,
    io: Io,
    responder: Responder,
    interface: &str,
    int: bool,
    export: Option<(Export, &std::path::Path, Option<String>)>,
) -> String {
    let (drop, reorder) = match responder {
        Responder::Soft => faults.unwrap_or((0.0, 0.0)),
        // rxe is impaired by netem, not by the collector.
        Responder::Rxe => (0.0, 0.0),
    };
    let port = match (responder, io) {
        // The NIC (rxe) answers; the collector has no packet port.
        (Responder::Rxe, _) => String::new(),
        (Responder::Soft, Io::AfPacket) => format!("interface = \"{interface}\""),
        // --no-shconf: no shared runtime files, so the translator's EAL can run beside it.
        (Responder::Soft, Io::Dpdk) => "interface = \"net_af_packet0,iface=c0,framecnt=8192\"\nio = \"dpdk\"\neal_args = [\"-l\", \"0\", \"--no-huge\", \"--no-shconf\", \"-m\", \"256\", \"--no-pci\", \"--log-level=warning\", \"--no-telemetry\"]".to_string(),
    };
    let mut regions =
        workload::collector_regions(int) + if int { int_workload::COLLECTOR_INT } else { "" };
    let mut export_section = String::new();
    if let Some((e, dir, clickhouse)) = export {
        // The exporter reads drop counters with the redundancy the translator writes them with.
        regions = regions.replace(
            "kind = \"key_increment\"\n",
            &format!(
                "kind = \"key_increment\"\nredundancy = {}\n",
                workload::KI_N
            ),
        );
        export_section = format!(
            "\n[export]\nepoch_secs = {}\npoll_ms = {}\n\n[export.parquet]\ndir = \"{}\"\nrotate_secs = 1\n",
            e.epoch_secs,
            e.poll_ms,
            dir.display()
        );
        if let Some(url) = clickhouse {
            export_section += &format!(
                "\n[export.clickhouse]\nurl = \"{url}\"\ndatabase = \"{CLICKHOUSE_DATABASE}\"\nflush_ms = 200\n"
            );
        }
    }
    format!(
        r#"[collector]
mac = "{mac}"
ip = "{ip}"
{port}
max_dest_rd_atomic = 16
path_mtu = 1024

[control]
bind = "{mgmt}:{CONTROL_PORT}"
token = "{TOKEN}"

[http]
bind = "{mgmt}:{HTTP_PORT}"

[faults]
drop = {drop}
reorder = {reorder}
corrupt = 0.0
seed = 7
{regions}{export_section}"#,
        mac = topo::COLLECTOR_MAC,
        ip = topo::COLLECTOR_IP,
        mgmt = topo::COLLECTOR_MGMT,
    )
}

pub(super) fn translator_config(io: Io, workers: usize, ip: &str, mgmt: &str, int: bool) -> String {
    let io_section = match io {
        Io::AfPacket => "[io]\nkind = \"af_packet\"\nports = [\"ta\", \"tb\"]\n".to_string(),
        // The PMD's default ring (512 frames) overflows under the sender's 4,096-report window, and
        // DPDK 22.11's net_af_packet does not count the kernel's ring drops: give it 8,192 frames.
        // One queue pair per worker (run to completion): `qpairs` makes the PMD spread frames over its
        // sockets by PACKET_FANOUT_HASH.
        Io::Dpdk => format!("[io]\nkind = \"dpdk\"\nports = [\"net_af_packet0,iface=ta,framecnt=8192,qpairs={workers}\", \"net_af_packet1,iface=tb,framecnt=8192,qpairs={workers}\"]\neal_args = [\"-l\", \"0\", \"--no-huge\", \"--no-shconf\", \"-m\", \"256\", \"--no-pci\", \"--log-level=warning\", \"--no-telemetry\"]\n"),
    };
    format!(
        r#"{io_section}
[workers]
count = {workers}

[[collectors]]
control = "{cm}:{CONTROL_PORT}"
token = "{TOKEN}"

[metrics]
bind = "{tm}:{METRICS_PORT}"

[local]
ip = [{ip}]
{engine}"#,
        ip = ip.replace('.', ", "),
        cm = topo::COLLECTOR_MGMT,
        tm = mgmt,
        engine = workload::translator_engine_sections(),
    ) + if int { int_workload::INT_SECTIONS } else { "" }
}
