//! Building a run: the namespaces (or rxe), the scratch directory and its watchdog, the configuration
//! files, the ClickHouse server, and both daemons started.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use super::config::{
    collector_config, translator_config, CLICKHOUSE_PORT, CLICKHOUSE_SERVER, HTTP_PORT, RXE_DEVICE,
    RXE_RETRY_LIMIT,
};
use super::daemons::{start_collector, start_translator};
use super::watchdog::watchdog;
use super::{Io, Options, Responder, Second, System};
use crate::history::ClickHouse;
use crate::int_workload;
use crate::rxe::Rxe;
use crate::send::Sender;
use crate::topo::{self, Topology};

impl System {
    /// Builds the network and starts both daemons; `Ok(None)` means skip (printed).
    pub fn start(tag: &str, opts: Options) -> Result<Option<System>> {
        Self::start_with(tag, opts, "")
    }

    /// [`start`](Self::start) with `translator_extra` appended to every translator's configuration
    /// (after the INT sections with `int`, so its first lines continue `[int]`: a fabric's
    /// `hop_mode` and `[[int.switches]]`, say).
    pub fn start_with(tag: &str, opts: Options, translator_extra: &str) -> Result<Option<System>> {
        // Short and unique per test process: namespace names show up in `ip netns list`.
        let prefix = format!("dta{}{tag}", std::process::id());
        let (topo, rxe, backend) = match opts.responder {
            Responder::Soft => {
                let Some(topo) = topo::topology_or_skip(&prefix)? else {
                    return Ok(None);
                };
                (topo, None, "soft")
            }
            Responder::Rxe => {
                let topo = Topology::create_with_collector_here(&prefix)?;
                let mut rxe = Rxe::create(RXE_DEVICE, "c0")?;
                if let Some((drop, reorder)) = opts.faults {
                    rxe.impair(drop * 100.0, reorder * 100.0)?;
                }
                (topo, Some(rxe), "ibverbs")
            }
        };
        anyhow::ensure!(
            matches!(opts.translators, 1 | 2),
            "{} translators: runs have 1 or 2",
            opts.translators
        );
        let second_path = if opts.translators == 2 {
            anyhow::ensure!(
                opts.responder == Responder::Soft && opts.collector_io == Io::AfPacket,
                "two translators run with the software responder on AF_PACKET"
            );
            Some(topo.add_second_path(&prefix)?)
        } else {
            None
        };
        let dir = std::env::temp_dir().join(format!("dta-e2e-{prefix}"));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let pids = Arc::new(Mutex::new(Vec::new()));
        let disarm = Arc::new(AtomicBool::new(false));
        watchdog(opts.limit, &prefix, &dir, pids.clone(), disarm.clone());
        let history = dir.join("history");
        let clickhouse = match opts.export {
            Some(e) if e.clickhouse => {
                let ch = ClickHouse::start(
                    std::path::Path::new(CLICKHOUSE_SERVER),
                    topo.collector.name(),
                    format!("{}:{CLICKHOUSE_PORT}", topo::COLLECTOR_MGMT).parse()?,
                    &dir.join("clickhouse"),
                )?;
                if let Ok(mut v) = pids.lock() {
                    v.push(ch.pid());
                }
                Some(ch)
            }
            _ => None,
        };
        std::fs::write(
            dir.join("collector.toml"),
            collector_config(
                opts.faults,
                opts.collector_io,
                opts.responder,
                if second_path.is_some() { "br0" } else { "c0" },
                opts.int,
                opts.export.map(|e| {
                    (
                        e,
                        history.as_path(),
                        clickhouse.as_ref().map(ClickHouse::url),
                    )
                }),
            ),
        )?;
        let mut translator_toml = translator_config(
            opts.io,
            opts.workers,
            topo::TRANSLATOR_IP,
            topo::TRANSLATOR_MGMT,
            opts.int,
        ) + translator_extra;
        if opts.responder == Responder::Rxe {
            // rxe in a TCG guest can stall for longer than the default 7 timeouts (about 0.13 s at a
            // 1 ms timeout) when the host is busy; a failed QP is not what the suite judges.
            translator_toml = translator_toml.replace(
                "[requester]\n",
                &format!("[requester]\nretry_limit = {RXE_RETRY_LIMIT}\n"),
            );
        }
        std::fs::write(dir.join("translator.toml"), translator_toml)?;

        let collector = start_collector(&topo, &dir, &pids, backend)?;
        let (translator, metrics, sender) = start_translator(
            &topo.translator,
            &topo.reporter,
            &dir,
            "translator",
            topo::TRANSLATOR_MGMT,
            topo::REPORTER_IP,
            &pids,
        )?;
        let second = match second_path {
            Some(path) => {
                std::fs::write(
                    dir.join("translator2.toml"),
                    translator_config(
                        opts.io,
                        opts.workers,
                        topo::TRANSLATOR2_IP,
                        topo::TRANSLATOR2_MGMT,
                        opts.int,
                    ) + translator_extra,
                )?;
                let (translator, metrics, sender) = start_translator(
                    &path.translator,
                    &path.reporter,
                    &dir,
                    "translator2",
                    topo::TRANSLATOR2_MGMT,
                    topo::REPORTER2_IP,
                    &pids,
                )?;
                Some(Second {
                    translator,
                    metrics,
                    sender,
                    path,
                })
            }
            None => None,
        };
        let int_sender = if opts.int {
            Some(Sender::open_paced(
                topo.reporter.name(),
                format!("{}:40042", topo::REPORTER_IP).parse()?,
                format!("{}:{}", topo::COLLECTOR_IP, int_workload::INT_PORT).parse()?,
                crate::send::INT_PACKETS,
            )?)
        } else {
            None
        };
        Ok(Some(System {
            int_sender,
            translator,
            collector: Some(collector),
            clickhouse,
            second,
            rxe,
            http: format!("{}:{HTTP_PORT}", topo::COLLECTOR_MGMT).parse()?,
            topo,
            metrics,
            quiet: false,
            sender,
            dir,
            pids,
            disarm,
            backend,
        }))
    }
}
