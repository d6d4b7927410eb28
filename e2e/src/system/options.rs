//! What a run asks for: the translator's and the collector's I/O, the responder, faults, workers,
//! translators, INT and the exporter.

use std::time::Duration;

/// Packet I/O of the translator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// AF_PACKET sockets on the veths.
    AfPacket,
    /// DPDK `net_af_packet` vdevs on the veths, without hugepages.
    Dpdk,
}

/// Who holds the collector's memory and answers the translator's RoCE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responder {
    /// dta's software RoCEv2 responder (`--backend soft`) in the collector's namespace.
    Soft,
    /// Linux Soft-RoCE: `--backend ibverbs --device rxe0`, the collector in this process's own (init)
    /// namespace, where rxe receives. Needs a kernel with `rdma_rxe` (the VM suite).
    Rxe,
}

/// Options of a run.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Translator I/O.
    pub io: Io,
    /// Collector fault injection: drop and reorder probabilities.
    pub faults: Option<(f64, f64)>,
    /// The watchdog's limit for the whole test.
    pub limit: Duration,
    /// Translator worker threads (engines); reports are steered among them by the I/O thread.
    pub workers: usize,
    /// The collector's software responder I/O.
    pub collector_io: Io,
    /// The responder. With [`Responder::Rxe`], `faults` become netem loss and reorder (percent of
    /// `faults` × 100) on both directions of the collector's link.
    pub responder: Responder,
    /// Translators in front of the collector: 1, or 2 (each with its own reporter, both with the same
    /// QPNs, as every translator has by default; the software responder over AF_PACKET only).
    pub translators: usize,
    /// The translator takes INT reports too
    /// ([`int_workload::INT_SECTIONS`](crate::int_workload::INT_SECTIONS): 12-byte Key-Write data, so the
    /// DTA Key-Write workloads do not fit such a run), and the collector has the INT lists.
    pub int: bool,
    /// The collector runs its history exporter (`[export]`): Parquet files under the run's scratch
    /// directory ([`System::history_dir`](super::System::history_dir)), and with `clickhouse` a
    /// `clickhouse-server` of the run's own in the collector's namespace.
    pub export: Option<Export>,
}

impl Default for Options {
    /// The common run: AF_PACKET on both daemons, two translator workers, one translator, the software
    /// responder without faults, no INT and no exporter, 480 s for the whole test.
    fn default() -> Self {
        Options {
            io: Io::AfPacket,
            faults: None,
            limit: Duration::from_secs(480),
            workers: 2,
            collector_io: Io::AfPacket,
            responder: Responder::Soft,
            translators: 1,
            int: false,
            export: None,
        }
    }
}

/// The collector's `[export]` in a run.
#[derive(Debug, Clone, Copy)]
pub struct Export {
    /// `[export] poll_ms`: a list with nothing new is read again after this long. A test that must know
    /// exactly what a ring overwrote before it was read sets it longer than the run: the exporter then
    /// reads the lists when it starts and when the collector stops (SIGTERM wakes it), never between.
    pub poll_ms: u64,
    /// `[export] epoch_secs`.
    pub epoch_secs: u64,
    /// Also a real ClickHouse server (Debian's `clickhouse-server`,
    /// [`CLICKHOUSE_SERVER`](super::CLICKHOUSE_SERVER)).
    pub clickhouse: bool,
}
