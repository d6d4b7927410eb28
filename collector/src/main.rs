//! `dta-collector`: `serve` runs a collector; `query` asks a running one over its HTTP API.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use dta_collector::client;
use dta_collector::config::Config;
use dta_collector::port::IoKind;
use dta_collector::query::int::{
    parse_flow, FlowText, IntDropsAnswer, IntFlowAnswer, IntQueuesAnswer, Shard,
};
use dta_collector::server::{self, Backend};
use dta_collector::signals::StopSignals;
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::flow_key;

#[derive(Parser)]
#[command(
    name = "dta-collector",
    version,
    about = "DTA collector: regions, RoCEv2 responder, queries"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// TOML configuration.
    #[arg(long)]
    config: PathBuf,
    #[arg(long, value_enum, default_value = "soft")]
    backend: BackendArg,
    /// The software responder's port (overrides the config): an interface for AF_PACKET, or a DPDK
    /// device / vdev spec (`net_af_packet0,iface=eth1`) with `--io dpdk`; none serves queries only.
    #[arg(long)]
    interface: Option<String>,
    /// Packet I/O of the software responder (overrides the config).
    #[arg(long, value_enum)]
    io: Option<IoKind>,
    /// EAL arguments for `--io dpdk`, split on whitespace (overrides the config).
    #[arg(long, allow_hyphen_values = true)]
    eal: Option<String>,
    /// RDMA device name for --backend ibverbs (default: the first).
    #[arg(long)]
    device: Option<String>,
    /// HTTP API address (overrides the config).
    #[arg(long)]
    http: Option<std::net::SocketAddr>,
    /// Control server address (overrides the config; required somewhere to serve translators).
    #[arg(long)]
    control: Option<std::net::SocketAddr>,
    /// Control token (overrides the config).
    #[arg(long)]
    token: Option<String>,
    /// Start with zeroed regions in `[collector] memory_file`, discarding what it holds (a file laid
    /// out for other regions is refused without this).
    #[arg(long)]
    fresh_memory: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// Our own RoCEv2 responder over AF_PACKET or DPDK (no RDMA NIC needed).
    Soft,
    /// A real RDMA NIC (or Soft-RoCE) through libibverbs.
    Ibverbs,
}

#[derive(Subcommand)]
enum Command {
    /// Run a collector.
    Serve(Box<ServeArgs>),
    /// Query a running collector, or every collector of a translator as one.
    Query {
        /// The collector's HTTP API address; or every collector of the translator, in its
        /// `[[collectors]]` order (comma-separated or repeated). A key goes to the collector the
        /// translator routes it to (key_checksum(key) mod the number of collectors, its default
        /// `routing.keys = "key_hash"`); a list or sketch to the collector that holds it. int-flow and
        /// int-drops read many keys: every collector is asked for the keys it holds, and the answers
        /// are joined into one; int-queues asks every collector too, and the one with the queue list
        /// answers.
        #[arg(long, default_value = "127.0.0.1:40060", value_delimiter = ',')]
        server: Vec<String>,
        #[command(subcommand)]
        what: Query,
    },
}

#[derive(Subcommand)]
enum Query {
    /// Key-Write value of a key.
    Keywrite {
        #[arg(long)]
        key: u32,
        /// Redundancy the reporter used (default: the region's `redundancy`, else its n_max).
        #[arg(long)]
        n: Option<u8>,
        /// Votes a value needs.
        #[arg(long, default_value_t = 1)]
        threshold: u32,
    },
    /// Key-Increment counter of a key (count-min over its N counters).
    Keyincrement {
        #[arg(long)]
        key: u32,
        /// Redundancy the reporters used (default: the region's configured `redundancy`; without one,
        /// a region with n_max > 1 cannot tell and the query is refused).
        #[arg(long)]
        n: Option<u8>,
    },
    /// Postcarding path of a flow.
    Postcard {
        #[arg(long)]
        key: u32,
        /// Redundancy the translator used (default: the region's `redundancy`, else its n_max).
        #[arg(long)]
        n: Option<u8>,
    },
    /// Entries of an Append list.
    Append {
        #[arg(long)]
        list: u32,
        /// First absolute entry index to read.
        #[arg(long, default_value_t = 0)]
        tail: u64,
        #[arg(long, default_value_t = 1024)]
        max: usize,
        /// Keep reading new entries as they arrive.
        #[arg(long)]
        follow: bool,
        /// Poll interval of --follow, in milliseconds.
        #[arg(long, default_value_t = 500)]
        interval_ms: u64,
    },
    /// Sketch estimate: count-min for --key, HyperLogLog for max-merged sketches.
    Sketch {
        #[arg(long)]
        id: u32,
        #[arg(long)]
        key: Option<u32>,
    },
    /// INT: the path of a flow, the node ids of its switches hop by hop.
    IntPath {
        /// The flow: SRC,DST,PROTO,SPORT,DPORT (IPv4 or IPv6; PROTO a number, tcp or udp).
        #[arg(long, value_parser = flow_arg)]
        flow: FlowKey,
        /// Redundancy the translator used (default: the postcarding region's `redundancy`, else n_max).
        #[arg(long)]
        n: Option<u8>,
    },
    /// INT: a flow's per-hop records (node, hop latency, queue) and their totals.
    IntFlow {
        /// The flow: SRC,DST,PROTO,SPORT,DPORT (IPv4 or IPv6; PROTO a number, tcp or udp).
        #[arg(long, value_parser = flow_arg)]
        flow: FlowKey,
        /// Redundancy the translator used (default: the key_write region's `redundancy`, else n_max).
        #[arg(long)]
        n: Option<u8>,
        /// Votes a hop's record needs.
        #[arg(long, default_value_t = 1)]
        threshold: u32,
    },
    /// INT: a switch's drop counts per reason and its drop events.
    IntDrops {
        /// The switch's node id.
        #[arg(long)]
        node: u32,
        /// One drop reason (default: every reason with drops).
        #[arg(long)]
        reason: Option<u8>,
        /// Redundancy of the drop counters (default: the key_increment region's `redundancy`).
        #[arg(long)]
        n: Option<u8>,
        /// First drop list entry to scan (default: the newest --max entries).
        #[arg(long)]
        tail: Option<u64>,
        /// Most drop list entries to scan.
        #[arg(long, default_value_t = 1024)]
        max: usize,
    },
    /// INT: a switch's congestion events in the queue list.
    IntQueues {
        /// The switch's node id.
        #[arg(long)]
        node: u32,
        /// One queue id (default: every queue).
        #[arg(long)]
        queue: Option<u8>,
        /// First queue list entry to scan (default: the newest --max entries).
        #[arg(long)]
        tail: Option<u64>,
        /// Most queue list entries to scan.
        #[arg(long, default_value_t = 1024)]
        max: usize,
    },
    /// Prometheus metrics.
    Metrics,
}

/// `--flow`: the library's parser, its message without the "bad query" prefix.
fn flow_arg(s: &str) -> std::result::Result<FlowKey, String> {
    parse_flow(s).map_err(|e| match e {
        dta_collector::Error::BadQuery(m) => m,
        other => other.to_string(),
    })
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    match Cli::parse().command {
        Command::Serve(a) => serve(*a),
        Command::Query { server, what } => query(&server, what),
    }
}

fn serve(a: ServeArgs) -> Result<()> {
    let ServeArgs {
        config: path,
        backend,
        interface,
        io,
        eal,
        device,
        http,
        control,
        token,
        fresh_memory,
    } = a;
    let mut config = Config::load(&path)?;
    if let Some(addr) = http {
        config.http = Some(dta_collector::config::HttpSection { bind: addr });
    }
    match (&mut config.control, control, token) {
        (Some(c), addr, token) => {
            c.bind = addr.unwrap_or(c.bind);
            c.token = token.unwrap_or(c.token.clone());
        }
        (None, Some(bind), Some(token)) => {
            config.control = Some(dta_collector::config::ControlSection { bind, token })
        }
        (None, Some(_), None) => bail!("--control needs --token (or a [control] section)"),
        (None, None, _) => log::warn!("no control server configured: translators cannot connect"),
    }
    if let Some(io) = io {
        config.collector.io = io;
    }
    if let Some(eal) = eal {
        config.collector.eal_args = eal.split_whitespace().map(String::from).collect();
    }
    if fresh_memory && config.collector.memory_file.is_none() {
        bail!("--fresh-memory needs [collector] memory_file: without it the regions always start zeroed");
    }
    config.collector.fresh_memory = fresh_memory;
    let interface = interface.or(config.collector.interface.clone());
    let backend = match backend {
        BackendArg::Soft => Backend::Soft,
        BackendArg::Ibverbs => Backend::Ibverbs,
    };
    // Before any thread exists, so that every thread inherits the mask and the signal comes here.
    let signals = StopSignals::block().context("blocking SIGINT, SIGTERM, SIGHUP and SIGUSR1")?;
    let mut running = server::start(&config, backend, interface.as_deref(), device.as_deref())
        .context("starting the collector")?;
    // Scripts and tests read the bound addresses from stdout (ports may be 0 in the config).
    for (what, addr) in server::listening(&running) {
        println!("{what} listening on {addr}");
    }
    let why = running
        .wait_for_stop(&signals)?
        .unwrap_or("the end of the I/O loop");
    log::info!("stopping on {why}");
    // The I/O loop first, then the exporter's last drain: the summary counts what that drain found
    // (entries exported, rings overrun).
    running.shutdown();
    let summary = running.summary();
    // Stops the control and HTTP servers, and joins them.
    drop(running);
    println!("dta-collector stopped on {why}");
    print!("{summary}");
    Ok(())
}

/// Where a query goes among `servers` (a translator's collectors, in its order): the one its key is
/// routed to, or, for lists and sketches (which live on one collector, found by asking), all of them.
fn targets<'a>(servers: &'a [String], what: &Query) -> Vec<&'a str> {
    let key = match what {
        Query::Keywrite { key, .. }
        | Query::Keyincrement { key, .. }
        | Query::Postcard { key, .. } => Some(*key),
        Query::IntPath { flow, .. } => Some(flow_key(flow)),
        _ => None,
    };
    match key {
        // The translator's KeyRouting::KeyHash: the same function, so one question finds the key.
        Some(k) if servers.len() > 1 => {
            let i = dta_protocol::hash::key_checksum(k) as usize % servers.len();
            vec![servers[i].as_str()]
        }
        _ => servers.iter().map(String::as_str).collect(),
    }
}

fn query(servers: &[String], what: Query) -> Result<()> {
    let joined = matches!(
        what,
        Query::IntFlow { .. } | Query::IntDrops { .. } | Query::IntQueues { .. }
    );
    if servers.len() > 1 && joined {
        return query_joined(servers, &what);
    }
    let candidates = targets(servers, &what);
    if let Query::Metrics = what {
        for s in &candidates {
            if candidates.len() > 1 {
                println!("# collector {s}");
            }
            query_one(s, &what)?;
        }
        return Ok(());
    }
    // A list or sketch: the collector that has it answers; the others say 404.
    let mut last = None;
    for s in &candidates {
        match query_one(s, &what) {
            Err(e) if candidates.len() > 1 && e.to_string().contains("HTTP 404") => last = Some(e),
            other => return other,
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no collector to ask")))
}

/// Asks every collector, collector i of n for the keys it holds (`shard=i/n`), and prints the joined
/// answer.
fn query_joined(servers: &[String], what: &Query) -> Result<()> {
    let count = u32::try_from(servers.len()).context("too many collectors")?;
    let mut bodies = Vec::with_capacity(servers.len());
    for (index, server) in (0..count).zip(servers) {
        let mut path = http_path(what);
        // The queue list has no keys: the collector that holds it answers with it, the others with none.
        if !matches!(what, Query::IntQueues { .. }) {
            path.push_str(&format!("&shard={}", Shard { index, count }));
        }
        let (status, body) = client::get(server, &path)?;
        if status != 200 {
            bail!(
                "collector {server} answered HTTP {status}: {}",
                body.trim_end()
            );
        }
        bodies.push(body);
    }
    let joined = match what {
        Query::IntFlow { .. } => serde_json::to_string(&IntFlowAnswer::merge(parse_all(&bodies)?)?),
        Query::IntDrops { .. } => {
            serde_json::to_string(&IntDropsAnswer::merge(parse_all(&bodies)?)?)
        }
        Query::IntQueues { .. } => {
            serde_json::to_string(&IntQueuesAnswer::merge(parse_all(&bodies)?)?)
        }
        _ => bail!("only int-flow, int-drops and int-queues are asked of every collector"),
    }?;
    println!("{joined}");
    Ok(())
}

fn parse_all<T: serde::de::DeserializeOwned>(bodies: &[String]) -> Result<Vec<T>> {
    bodies
        .iter()
        .map(|b| serde_json::from_str(b).with_context(|| format!("parsing the answer {b}")))
        .collect()
}

/// The HTTP API path that answers `what`.
fn http_path(what: &Query) -> String {
    let opt = |name: &str, v: Option<String>| v.map(|v| format!("&{name}={v}")).unwrap_or_default();
    let flow = |f: &FlowKey| {
        form_urlencoded::byte_serialize(FlowText(f).to_string().as_bytes()).collect::<String>()
    };
    match what {
        Query::Keywrite { key, n, threshold } => {
            format!(
                "/query/keywrite?key={key}&t={threshold}{}",
                opt("n", n.map(|x| x.to_string()))
            )
        }
        Query::Keyincrement { key, n } => {
            format!(
                "/query/keyincrement?key={key}{}",
                opt("n", n.map(|x| x.to_string()))
            )
        }
        Query::Postcard { key, n } => {
            format!(
                "/query/postcard?key={key}{}",
                opt("n", n.map(|x| x.to_string()))
            )
        }
        Query::Append {
            list, tail, max, ..
        } => format!("/query/append?list={list}&tail={tail}&max={max}"),
        Query::Sketch { id, key } => format!(
            "/query/sketch?id={id}{}",
            opt("key", key.map(|x| x.to_string()))
        ),
        Query::IntPath { flow: f, n } => format!(
            "/query/int-path?flow={}{}",
            flow(f),
            opt("n", n.map(|x| x.to_string()))
        ),
        Query::IntFlow {
            flow: f,
            n,
            threshold,
        } => format!(
            "/query/int-flow?flow={}&t={threshold}{}",
            flow(f),
            opt("n", n.map(|x| x.to_string()))
        ),
        Query::IntDrops {
            node,
            reason,
            n,
            tail,
            max,
        } => format!(
            "/query/int-drops?node={node}&max={max}{}{}{}",
            opt("reason", reason.map(|x| x.to_string())),
            opt("n", n.map(|x| x.to_string())),
            opt("tail", tail.map(|x| x.to_string()))
        ),
        Query::IntQueues {
            node,
            queue,
            tail,
            max,
        } => format!(
            "/query/int-queues?node={node}&max={max}{}{}",
            opt("queue", queue.map(|x| x.to_string())),
            opt("tail", tail.map(|x| x.to_string()))
        ),
        Query::Metrics => "/metrics".to_string(),
    }
}

fn query_one(server: &str, what: &Query) -> Result<()> {
    let path = http_path(what);
    if let Query::Append {
        list,
        follow: true,
        max,
        interval_ms,
        tail,
    } = *what
    {
        return follow(server, list, tail, max, Duration::from_millis(interval_ms));
    }
    let (status, body) = client::get(server, &path)?;
    if status == 404 {
        bail!("collector {server} answered HTTP 404: {}", body.trim_end());
    }
    println!("{}", body.trim_end());
    if status != 200 {
        bail!("collector answered HTTP {status}");
    }
    Ok(())
}

/// Prints entries of a list as they arrive, one JSON line per poll with entries, until interrupted.
fn follow(server: &str, list: u32, mut tail: u64, max: usize, every: Duration) -> Result<()> {
    loop {
        let (status, body) = client::get(
            server,
            &format!("/query/append?list={list}&tail={tail}&max={max}"),
        )?;
        if status != 200 {
            bail!("collector answered HTTP {status}: {body}");
        }
        let v: serde_json::Value =
            serde_json::from_str(&body).context("parsing the append answer")?;
        if let Some(lost) = v["overrun"].as_u64().filter(|&l| l > 0) {
            eprintln!("overrun: {lost} entries were overwritten before they were read");
        }
        for e in v["entries"].as_array().into_iter().flatten() {
            println!("{}", e.as_str().unwrap_or_default());
        }
        tail = v["next_tail"].as_u64().unwrap_or(tail);
        if v["entries"].as_array().map_or(true, |a| a.len() < max) {
            std::thread::sleep(every);
        }
    }
}
