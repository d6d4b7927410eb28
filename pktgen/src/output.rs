//! Where frames go: a pcap file through `dta-netio`'s burst interface, or a UDP socket (the kernel builds
//! the Ethernet and IP headers, so only the UDP payload is sent).

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
        if let Output::Pcap { sink, batch } = self {
            sink.send_burst(batch).context("writing the pcap")?;
            batch.clear();
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
            Output::Discard => Ok(0),
        }
    }
}
