//! Where frames go: a pcap file or a DPDK port through `dta-netio`'s burst interface, or a UDP socket (the
//! kernel builds the Ethernet and IP headers, so only the UDP payload is sent).

use std::net::{SocketAddr, UdpSocket};

use anyhow::{Context, Result};
use dta_netio::{FrameBatch, PcapSink, TxBurst};
use dta_pktgen::source::FrameSource;
use dta_protocol::udp::HEADERS_LEN;

use crate::args::Cli;

/// Room for any frame the generator builds (the largest, a Sketch-Merge of 255 rows, is 1,072 bytes).
const SCRATCH_LEN: usize = 2048;

/// An open output.
pub enum Output {
    /// Frames recorded to a pcap file.
    Pcap {
        /// The file.
        sink: PcapSink,
        /// The burst being filled.
        batch: FrameBatch,
    },
    /// UDP payloads sent to an address.
    Udp {
        /// The socket.
        socket: UdpSocket,
        /// The destination.
        to: SocketAddr,
        /// Sends the kernel refused.
        dropped: u64,
    },
    /// Frames sent out of a DPDK port, built in place in the mbufs.
    #[cfg(feature = "dpdk")]
    Dpdk {
        /// The port's only queue.
        queue: dta_netio::dpdk::DpdkQueue,
        /// Keeps the port open while the queue is used.
        _port: dta_netio::dpdk::Port,
    },
    /// Generate only (to measure the generator).
    Discard,
}

/// Where a frame is built when the output does not offer its own buffers.
pub struct Scratch(Box<[u8; SCRATCH_LEN]>);

impl Default for Scratch {
    fn default() -> Self {
        Scratch(Box::new([0; SCRATCH_LEN]))
    }
}

impl Output {
    /// Opens the output the command line names.
    pub fn open(cli: &Cli) -> Result<Self> {
        if let Some(p) = &cli.pcap {
            let sink = PcapSink::create(p).with_context(|| format!("creating {}", p.display()))?;
            return Ok(Output::Pcap {
                sink,
                batch: FrameBatch::new(crate::BURST, 2048),
            });
        }
        if let Some(spec) = &cli.dpdk {
            return open_dpdk(spec, &cli.eal);
        }
        if let Some(to) = cli.udp {
            let socket = UdpSocket::bind(cli.udp_bind).context("binding the UDP socket")?;
            return Ok(Output::Udp {
                socket,
                to,
                dropped: 0,
            });
        }
        Ok(Output::Discard)
    }

    /// Generates `n` frames (at most [`BURST`](crate::BURST)) from `gen` and sends them as one burst: the
    /// whole frame to pcap (stamped `1 s + index * stamp_ns`) and DPDK, its UDP payload to the socket.
    /// Returns how many frames were generated (all `n` unless a frame does not fit an mbuf).
    pub fn send(
        &mut self,
        gen: &mut impl FrameSource,
        n: usize,
        stamp_ns: f64,
        scratch: &mut Scratch,
    ) -> Result<usize> {
        let first = gen.index();
        let buf = &mut scratch.0[..];
        match self {
            Output::Pcap { sink, batch } => {
                for _ in 0..n {
                    let len = gen
                        .next_frame(buf)
                        .context("frame larger than the scratch")?;
                    let ts = 1_000_000_000 + (gen.index() as f64 * stamp_ns) as u64;
                    batch
                        .push_stamped(&buf[..len], ts)
                        .context("queueing a frame")?;
                }
                sink.send_burst(batch).context("writing the pcap")?;
                batch.clear();
            }
            // Built straight into the mbufs. A full TX ring drops the rest of the burst; the port's
            // counters say how many.
            #[cfg(feature = "dpdk")]
            Output::Dpdk { queue, .. } => {
                queue.send_in_place(n, |_, room| gen.next_frame(room).unwrap_or(0));
            }
            Output::Udp {
                socket,
                to,
                dropped,
            } => {
                for _ in 0..n {
                    let len = gen
                        .next_frame(buf)
                        .context("frame larger than the scratch")?;
                    if socket.send_to(&buf[HEADERS_LEN..len], *to).is_err() {
                        *dropped += 1;
                    }
                }
            }
            Output::Discard => {
                for _ in 0..n {
                    gen.next_frame(buf)
                        .context("frame larger than the scratch")?;
                }
            }
        }
        Ok((gen.index() - first) as usize)
    }

    /// Flushes and closes; returns the frames dropped.
    pub fn finish(&mut self) -> Result<u64> {
        match self {
            Output::Pcap { sink, batch } => {
                if !batch.is_empty() {
                    sink.send_burst(batch).context("writing the pcap")?;
                    batch.clear();
                }
                sink.flush().context("flushing the pcap")?;
                Ok(sink.tx_stats().dropped)
            }
            Output::Udp { dropped, .. } => Ok(*dropped),
            #[cfg(feature = "dpdk")]
            Output::Dpdk { queue, .. } => Ok(queue.tx_stats().dropped),
            Output::Discard => Ok(0),
        }
    }
}

#[cfg(feature = "dpdk")]
fn open_dpdk(spec: &str, eal_args: &str) -> Result<Output> {
    use dta_netio::dpdk::{eal_init, Port, PortConfig};
    let args = eal_args.split_whitespace().map(str::to_string).collect();
    let eal = eal_init(args).with_context(|| format!("DPDK EAL init with {eal_args:?}"))?;
    let cfg = PortConfig {
        max_burst: crate::BURST as u16,
        ..PortConfig::default()
    };
    let (port, mut queues) =
        Port::open_spec(eal, spec, &cfg).with_context(|| format!("opening DPDK port {spec}"))?;
    let queue = queues.pop().context("DPDK port without a queue")?;
    wait_for_link(&port);
    Ok(Output::Dpdk { queue, _port: port })
}

/// Waits up to [`LINK_WAIT`] for the port's link: a `net_memif` to another process, or a NIC, drops what
/// it is given until its link is up, and those drops would count as the receiver's. Goes on (with a
/// warning) if it stays down.
#[cfg(feature = "dpdk")]
fn wait_for_link(port: &dta_netio::dpdk::Port) {
    let start = std::time::Instant::now();
    loop {
        match port.link_up() {
            Ok(true) => {
                log::debug!("{}: link up after {:?}", port.name(), start.elapsed());
                return;
            }
            Ok(false) if start.elapsed() < LINK_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Ok(false) => {
                log::warn!(
                    "{}: link still down after {LINK_WAIT:?}; sending anyway",
                    port.name()
                );
                return;
            }
            Err(e) => {
                log::warn!("{}: link status: {e}; sending without waiting", port.name());
                return;
            }
        }
    }
}

/// Longest wait for a DPDK port's link before sending.
#[cfg(feature = "dpdk")]
const LINK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(_spec: &str, _eal_args: &str) -> Result<Output> {
    anyhow::bail!("this build has no DPDK output (feature `dpdk` off)")
}
