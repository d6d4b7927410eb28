//! Pcap files as endpoints: a reader that replays a capture, a writer that records one (Ethernet link type).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use pcap_file::pcap::{PcapHeader, PcapReader};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::{batch::now_ns, FrameBatch, NetioError, RxBurst, RxStats, TxBurst, TxStats};

/// Largest frame the writer records; tcpdump's default snap length, so that no tool truncates our frames.
pub const PCAP_SNAPLEN: u32 = 262_144;

/// Replays the frames of a pcap file (either timestamp resolution, either byte order), with their timestamps.
/// Receiving never waits: the file's records come as fast as the caller asks, and [`is_done`](Self::is_done)
/// tells the end of the file from a momentarily empty receive.
pub struct PcapSource {
    path: PathBuf,
    reader: PcapReader<File>,
    done: bool,
    stats: RxStats,
}

impl PcapSource {
    /// Opens `path` and checks that it holds Ethernet frames.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, NetioError> {
        let path = path.as_ref().to_path_buf();
        let file =
            File::open(&path).map_err(|e| NetioError::io(format!("open {}", path.display()), e))?;
        // PcapReader buffers on its own and hands out records borrowed from its buffer: no allocation per frame.
        let reader = PcapReader::new(file).map_err(|source| NetioError::Pcap {
            path: path.clone(),
            source,
        })?;
        let link_type = u32::from(reader.header().datalink);
        if reader.header().datalink != DataLink::ETHERNET {
            return Err(NetioError::PcapLinkType { path, link_type });
        }
        Ok(PcapSource {
            path,
            reader,
            done: false,
            stats: RxStats::default(),
        })
    }

    /// True once every record of the file has been read.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

impl RxBurst for PcapSource {
    fn recv_burst(&mut self, batch: &mut FrameBatch) -> Result<usize, NetioError> {
        let mut got = 0;
        while !self.done && batch.free() > 0 {
            let packet = match self.reader.next_packet() {
                None => {
                    self.done = true;
                    break;
                }
                Some(Ok(p)) => p,
                Some(Err(source)) => {
                    return Err(NetioError::Pcap {
                        path: self.path.clone(),
                        source,
                    })
                }
            };
            // A record cut by the capture's snap length is not the frame that was on the wire: drop it.
            if packet.data.len() != packet.orig_len as usize
                || packet.data.len() > batch.slot_size()
            {
                self.stats.dropped += 1;
                continue;
            }
            let stamp = packet.timestamp.as_nanos() as u64;
            batch.push_stamped(&packet.data, stamp)?;
            got += 1;
            self.stats.frames += 1;
            self.stats.bytes += packet.data.len() as u64;
        }
        Ok(got)
    }

    fn rx_stats(&self) -> RxStats {
        self.stats
    }
}

/// Records every frame sent to it into a pcap file with nanosecond timestamps and the Ethernet link type.
/// A frame's timestamp is its batch timestamp, or the time of the send when that is unknown (0).
/// Call [`finish`](Self::finish) to see write errors; dropping the sink flushes too but cannot report them.
pub struct PcapSink {
    path: PathBuf,
    out: BufWriter<File>,
    stats: TxStats,
}

impl PcapSink {
    /// Creates (or truncates) `path` and writes the file header.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, NetioError> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path)
            .map_err(|e| NetioError::io(format!("create {}", path.display()), e))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let header = PcapHeader {
            snaplen: PCAP_SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
            ..PcapHeader::default()
        };
        header
            .write_to(&mut out)
            .map_err(|source| NetioError::Pcap {
                path: path.clone(),
                source,
            })?;
        Ok(PcapSink {
            path,
            out,
            stats: TxStats::default(),
        })
    }

    /// Pushes buffered records to the file.
    pub fn flush(&mut self) -> Result<(), NetioError> {
        self.out
            .flush()
            .map_err(|e| NetioError::io(format!("flush {}", self.path.display()), e))
    }

    /// Flushes and closes the file.
    pub fn finish(mut self) -> Result<(), NetioError> {
        self.flush()
    }

    fn write_record(&mut self, frame: &[u8], stamp_ns: u64) -> std::io::Result<()> {
        // The record header is four little-endian u32s (the byte order the file header declared): seconds,
        // nanoseconds, captured length, original length. Written here rather than through pcap-file's writer,
        // which cannot be flushed without giving up the file.
        let len = frame.len() as u32;
        let mut header = [0u8; 16];
        header[0..4].copy_from_slice(&((stamp_ns / 1_000_000_000) as u32).to_le_bytes());
        header[4..8].copy_from_slice(&((stamp_ns % 1_000_000_000) as u32).to_le_bytes());
        header[8..12].copy_from_slice(&len.to_le_bytes());
        header[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&header)?;
        self.out.write_all(frame)
    }
}

impl TxBurst for PcapSink {
    fn send_burst(&mut self, batch: &FrameBatch) -> Result<usize, NetioError> {
        let mut burst_time = 0;
        let mut sent = 0;
        for i in 0..batch.len() {
            let frame = batch.frame(i);
            if frame.len() > PCAP_SNAPLEN as usize {
                self.stats.dropped += 1;
                continue;
            }
            let mut stamp = batch.timestamp_ns(i);
            if stamp == 0 {
                // One clock read per burst, not per frame.
                if burst_time == 0 {
                    burst_time = now_ns();
                }
                stamp = burst_time;
            }
            self.write_record(frame, stamp)
                .map_err(|e| NetioError::io(format!("write {}", self.path.display()), e))?;
            sent += 1;
            self.stats.frames += 1;
            self.stats.bytes += frame.len() as u64;
        }
        Ok(sent)
    }

    fn tx_stats(&self) -> TxStats {
        self.stats
    }
}
