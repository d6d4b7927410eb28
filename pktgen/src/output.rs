//! Where frames go: a pcap file or a DPDK port through `dta-netio`'s burst interface, or a UDP socket (the
//! kernel builds the Ethernet and IP headers, so only the UDP payload is sent).

use std::net::{SocketAddr, UdpSocket};

use anyhow::{Context, Result};
use dta_netio::{FrameBatch, PcapSink, TxBurst};

use crate::args::Cli;

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
    /// Frames sent out of a DPDK port.
    #[cfg(feature = "dpdk")]
    Dpdk {
        /// The port's only queue.
        queue: dta_netio::dpdk::DpdkQueue,
        /// Keeps the port open while the queue is used.
        _port: dta_netio::dpdk::Port,
        /// The burst being filled.
        batch: FrameBatch,
    },
    /// Generate only (to measure the generator).
    Discard,
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

    /// Queues one frame (whole frame for pcap, its UDP payload for the socket).
    pub fn push(&mut self, frame: &[u8], payload: &[u8], stamp_ns: u64) -> Result<()> {
        match self {
            Output::Pcap { batch, .. } => batch
                .push_stamped(frame, stamp_ns)
                .context("queueing a frame")?,
            #[cfg(feature = "dpdk")]
            Output::Dpdk { batch, .. } => batch.push(frame).context("queueing a frame")?,
            Output::Udp {
                socket,
                to,
                dropped,
            } => {
                if socket.send_to(payload, *to).is_err() {
                    *dropped += 1;
                }
            }
            Output::Discard => {}
        }
        Ok(())
    }

    /// Sends the queued burst.
    pub fn flush_burst(&mut self) -> Result<()> {
        match self {
            Output::Pcap { sink, batch } => {
                sink.send_burst(batch).context("writing the pcap")?;
                batch.clear();
            }
            // A full TX ring drops the rest of the burst; the port's counters say how many.
            #[cfg(feature = "dpdk")]
            Output::Dpdk { queue, batch, .. } => {
                queue.send_burst(batch).context("DPDK tx burst")?;
                batch.clear();
            }
            _ => {}
        }
        Ok(())
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
            Output::Dpdk { queue, batch, .. } => {
                if !batch.is_empty() {
                    queue.send_burst(batch).context("DPDK tx burst")?;
                    batch.clear();
                }
                Ok(queue.tx_stats().dropped)
            }
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
    Ok(Output::Dpdk {
        queue,
        _port: port,
        batch: FrameBatch::new(crate::BURST, 2048),
    })
}

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(_spec: &str, _eal_args: &str) -> Result<Output> {
    anyhow::bail!("this build has no DPDK output (feature `dpdk` off)")
}
