//! The report workloads every measurement shares: the same report payloads feed the translator (as Ethernet
//! frames) and the UDP baseline (as datagrams), so the two sides process byte-identical reports.

use anyhow::{anyhow, bail, Result};
use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::dta::{
    AppendRepr, Body, HeaderForm, KeyIncrementRepr, KeyWriteRepr, PostcardRepr, ReportFormat,
    ReportRepr, SketchOp, SketchRepr,
};
use dta_protocol::int::v05;
use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry, Region,
    SketchGeometry,
};
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};
use dta_translator::Config;

/// Reports in one pre-built ring. A multiple of 256 (the seqnum space) and of the sketch's rounds, large
/// enough that keys do not sit in one cache line, small enough (a few hundred KiB) to stay in L2/L3 as a
/// NIC's RX ring would.
pub const RING: usize = 4096;
/// Sketch shape: 1024 columns of 4 rows, merged from 2 reporters.
pub const SKETCH_COLUMNS: u32 = 1024;
pub const SKETCH_ROWS: usize = 4;
pub const SKETCH_REPORTERS: u16 = 2;

/// Translator MAC/IP, collector MAC/IP, reporter addresses as the defaults of the translator config.
pub const TRANSLATOR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
pub const TRANSLATOR_IP: [u8; 4] = [198, 18, 0, 1];
pub const COLLECTOR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
pub const COLLECTOR_IP: [u8; 4] = [198, 18, 0, 2];
/// The responder QPN the collector advertises.
pub const COLLECTOR_QPN: u32 = 17;

/// One measured workload of the translator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    KeyWrite {
        n: u8,
    },
    KeyIncrement,
    Append {
        batch: u32,
    },
    Postcard,
    Sketch,
    /// fabric-tna INT v0.5 switch-local reports, 5 hops per flow (the INT front end: path, hop state).
    Int,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode> {
        Ok(match s {
            "keywrite-n1" => Mode::KeyWrite { n: 1 },
            "keywrite-n2" => Mode::KeyWrite { n: 2 },
            "keyincrement" => Mode::KeyIncrement,
            "append-b1" => Mode::Append { batch: 1 },
            "append-b4" => Mode::Append { batch: 4 },
            "append-b16" => Mode::Append { batch: 16 },
            "postcard5" => Mode::Postcard,
            "sketch" => Mode::Sketch,
            "int-v05" => Mode::Int,
            _ => bail!("unknown mode {s}"),
        })
    }

    pub fn name(self) -> String {
        match self {
            Mode::KeyWrite { n } => format!("keywrite-n{n}"),
            Mode::KeyIncrement => "keyincrement".into(),
            Mode::Append { batch } => format!("append-b{batch}"),
            Mode::Postcard => "postcard5".into(),
            Mode::Sketch => "sketch".into(),
            Mode::Int => "int-v05".into(),
        }
    }
}

pub fn format() -> ReportFormat {
    ReportFormat {
        form: HeaderForm::Seq,
        keywrite_data_len: 4,
        append_entry_len: 4,
    }
}

/// Scrambles `i` into a key so that consecutive reports hit unrelated slots, as real flows do.
pub fn key_of(i: usize) -> u32 {
    (i as u32).wrapping_mul(0x9E37_79B1) ^ 0x5bd1_e995
}

/// INT hops per flow.
pub const INT_HOPS: usize = 5;

/// Report `i` of the INT ring: hop `i mod 5` of flow `i / 5`, from switch 101 + hop, as fabric-tna's
/// egress mirror sends it (its TTL already decremented by this hop), with a 64-byte truncated packet.
pub fn int_payload(i: usize) -> Result<Vec<u8>> {
    let (flow, hop) = ((i / INT_HOPS) as u32, (i % INT_HOPS) as u32 + 1);
    let mut inner = Vec::with_capacity(64);
    let f = flow.to_be_bytes();
    etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0xA], [2, 0, 0, 0, 0, 0xB])
        .ipv4([10, f[1], f[2], f[3]], [10, 200, 0, 1], 64 - hop as u8)
        .udp(10_000 + (flow % 50_000) as u16, 80)
        .write(&mut inner, &[0u8; 22])
        .map_err(|e| anyhow!("inner packet {i}: {e}"))?;
    let r = v05::ReportRepr {
        dropped: false,
        congested: false,
        tracked_flow: true,
        hw_id: 1,
        seq_no: i as u32,
        ig_tstamp: 1000 * i as u32,
        body: v05::Body::Local {
            common: v05::CommonRepr {
                switch_id: 100 + hop,
                ig_port: 1,
                eg_port: 2,
                queue_id: 0,
            },
            queue_occupancy: 10 * hop,
            eg_tstamp: 1000 * i as u32 + 300,
        },
        inner: &inner,
    };
    let mut out = vec![0u8; r.buffer_len()];
    r.emit(&mut out)
        .map_err(|e| anyhow!("INT report {i}: {e}"))?;
    Ok(out)
}

/// The UDP payload (the DTA report) of report `i` of `mode`'s ring.
pub fn report_payload(mode: Mode, i: usize) -> Result<Vec<u8>> {
    if mode == Mode::Int {
        return int_payload(i);
    }
    let seq = (i % 256) as u8;
    let data = (i as u32).to_be_bytes();
    let counters: Vec<u8> = (0..SKETCH_ROWS as u32)
        .flat_map(|r| (i as u32 + r).to_be_bytes())
        .collect();
    let body = match mode {
        Mode::KeyWrite { n } => Body::KeyWrite(KeyWriteRepr {
            redundancy: n,
            key: key_of(i),
            data: &data,
        }),
        Mode::KeyIncrement => Body::KeyIncrement(KeyIncrementRepr {
            redundancy: 1,
            key: key_of(i),
            counter: 1,
        }),
        Mode::Append { .. } => Body::Append(AppendRepr {
            list_id: 0,
            data: &data,
        }),
        // Five hops per flow, hop 1 to 5 in order, as a 5-hop fat-tree path reports them.
        Mode::Postcard => Body::Postcard(PostcardRepr {
            key: key_of(i / 5),
            hop: (i % 5) as u8 + 1,
            data: 100 + (i % 5) as u32,
        }),
        // Reporters interleave column by column, each in column order (what the merger requires).
        Mode::Int => unreachable!("handled above"),
        Mode::Sketch => Body::SketchMerge(SketchRepr {
            sketch_id: 0,
            op: SketchOp::Sum,
            reporter_id: (i % SKETCH_REPORTERS as usize) as u16,
            column: ((i / SKETCH_REPORTERS as usize) % SKETCH_COLUMNS as usize) as u16,
            counters: &counters,
        }),
    };
    // The sketch merger tracks columns, not seqnums; every other stream numbers its reports in order.
    let r = ReportRepr::new(body, HeaderForm::Seq, seq);
    let fmt = format();
    let mut payload = vec![0u8; r.buffer_len(&fmt)];
    r.emit(&mut payload, &fmt)
        .map_err(|e| anyhow!("report {i}: {e}"))?;
    Ok(payload)
}

/// The reporter's endpoints: a switch sending to the collector's IP on the DTA port (the INT port for
/// [`Mode::Int`]).
pub fn report_endpoints(mode: Mode, cfg: &Config) -> UdpEndpoints {
    UdpEndpoints::new(
        [2, 0, 0, 0, 0, 9],
        TRANSLATOR_MAC,
        [10, 0, 0, 9],
        COLLECTOR_IP,
        5000,
        if mode == Mode::Int {
            cfg.int.udp_port
        } else {
            cfg.report.udp_port
        },
    )
}

/// The translator's RoCEv2 endpoints towards the collector (the source port is the first of the range).
pub fn roce_endpoints() -> UdpEndpoints {
    UdpEndpoints::new(
        TRANSLATOR_MAC,
        COLLECTOR_MAC,
        TRANSLATOR_IP,
        COLLECTOR_IP,
        49152,
        dta_protocol::roce::ROCEV2_UDP_PORT,
    )
}

/// The ring of whole Ethernet frames for `mode`.
pub fn report_frames(mode: Mode, cfg: &Config) -> Result<Vec<Vec<u8>>> {
    let ep = report_endpoints(mode, cfg);
    (0..RING)
        .map(|i| {
            let payload = report_payload(mode, i)?;
            let mut out = vec![0u8; HEADERS_LEN + payload.len()];
            ep.emit_frame(&mut out, &payload)
                .map_err(|e| anyhow!("frame {i}: {e}"))?;
            Ok(out)
        })
        .collect()
}

/// Bytes of the Key-Write region the benchmarks configure: 2^26 slots (the paper's query figure) of 8 bytes.
pub const KEYWRITE_SLOTS: u64 = 1 << 26;

/// The regions one collector advertises for `mode` (Append's batch is the region's batch size).
pub fn regions(mode: Mode) -> Result<Vec<Region>> {
    let g = |e: dta_protocol::layout::GeometryError| anyhow!("geometry: {e}");
    let mut out = vec![
        Region {
            id: 0,
            va: 0x7f00_0000_0000,
            rkey: 0x1001,
            // INT's hop records are 12 bytes of Key-Write data.
            geometry: Geometry::KeyWrite(
                KeyWriteGeometry::new(KEYWRITE_SLOTS, if mode == Mode::Int { 16 } else { 8 }, 4)
                    .map_err(g)?,
            ),
        },
        Region {
            id: 0,
            va: 0x7f10_0000_0000,
            rkey: 0x1002,
            geometry: Geometry::KeyIncrement(KeyIncrementGeometry::new(1 << 24, 4).map_err(g)?),
        },
        Region {
            id: 0,
            va: 0x7f20_0000_0000,
            rkey: 0x1003,
            geometry: Geometry::Postcarding(PostcardGeometry::new(1 << 22, 5, 4).map_err(g)?),
        },
        Region {
            id: 0,
            va: 0x7f40_0000_0000,
            rkey: 0x1005,
            geometry: Geometry::Sketch(
                SketchGeometry::new(SKETCH_ROWS as u32, SKETCH_COLUMNS).map_err(g)?,
            ),
        },
    ];
    let batch = match mode {
        Mode::Append { batch } => batch,
        _ => 16,
    };
    out.push(Region {
        id: 0,
        va: 0x7f30_0000_0000,
        rkey: 0x1004,
        geometry: Geometry::Append(AppendGeometry::new(1 << 24, 4, batch).map_err(g)?),
    });
    Ok(out)
}

/// What the collector's control channel would answer.
pub fn welcome(mode: Mode) -> Result<Welcome> {
    Ok(Welcome {
        version: CONTROL_VERSION,
        mac: COLLECTOR_MAC,
        ip: COLLECTOR_IP,
        qps: vec![ResponderQp {
            qpn: COLLECTOR_QPN,
            peer_qpn: 0x100,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: regions(mode)?,
        append_heads: Vec::new(),
    })
}

/// The translator configuration of the benchmarks: the defaults (window 256, AckReq every 16th frame) with
/// two reporters for the sketch, and for [`Mode::Int`] the INT front end with its defaults (paths, hop
/// records with N = 2, drop counts).
pub fn config(mode: Mode) -> Config {
    let mut c = Config::default();
    c.sketch.reporters = SKETCH_REPORTERS;
    c.local.mac = TRANSLATOR_MAC;
    c.local.ip = TRANSLATOR_IP;
    if mode == Mode::Int {
        c.int.enabled = true;
        c.report.keywrite_data_len = 12;
    }
    c
}
