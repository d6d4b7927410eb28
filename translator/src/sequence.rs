//! Per-reporter sequence tracking of retransmittable reports, and the DTA NACK frames that ask a reporter
//! to resend. The reference keeps one global tracker, which makes two reporters NACK each other's gaps;
//! here each stream has its own. A stream is (reporter IP, collector IP, opcode): reporters number their
//! reports per collector and opcode (dta-reporter does), so one reporter feeding two collectors through
//! this translator has two independent sequences per opcode.

use std::collections::HashMap;
use std::time::Duration;

use dta_protocol::dta::{HeaderForm, NackRepr, Opcode, DTA_NACK_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

use crate::time::Instant;

/// What to do with a tracked report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// In order: process it.
    Accept,
    /// Ahead of the expected seqnum: drop it; `nack` is `Some(last in-order seqnum)` when a NACK is due.
    Gap {
        /// Seqnum for the NACK, or `None` within the hold-off of the previous NACK.
        nack: Option<u8>,
    },
    /// Behind the expected seqnum: already processed.
    Duplicate,
}

#[derive(Debug, Clone, Copy)]
struct Track {
    expected: u8,
    last_nack: Option<(u8, Instant)>,
}

/// One reporter's sequence of one opcode towards one collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stream {
    /// The reporter's IPv4 address (the report's source).
    pub reporter: [u8; 4],
    /// The collector's IPv4 address (the report's destination).
    pub collector: [u8; 4],
    /// The report opcode.
    pub opcode: Opcode,
}

/// The trackers of every reporter.
#[derive(Debug, Default)]
pub struct SequenceTracker {
    tracks: HashMap<Stream, Track>,
    max: usize,
    holdoff: Duration,
}

impl SequenceTracker {
    /// Tracks at most `max` reporters; a gap is NACKed again after `holdoff`.
    pub fn new(max: usize, holdoff: Duration) -> Self {
        SequenceTracker {
            tracks: HashMap::new(),
            max,
            holdoff,
        }
    }

    /// Checks `seq` on `stream`. The first report of a stream starts its sequence. `None` means the table
    /// is full and the report is accepted untracked.
    pub fn check(&mut self, now: Instant, stream: Stream, seq: u8) -> Option<Verdict> {
        let len = self.tracks.len();
        let key = stream;
        let t = match self.tracks.get_mut(&key) {
            Some(t) => t,
            None if len >= self.max => return None,
            None => {
                self.tracks.insert(
                    key,
                    Track {
                        expected: seq.wrapping_add(1),
                        last_nack: None,
                    },
                );
                return Some(Verdict::Accept);
            }
        };
        let ahead = seq.wrapping_sub(t.expected);
        Some(if ahead == 0 {
            t.expected = seq.wrapping_add(1);
            t.last_nack = None;
            Verdict::Accept
        } else if ahead < 128 {
            let last = t.expected.wrapping_sub(1);
            let due = match t.last_nack {
                Some((s, at)) => s != last || now - at >= self.holdoff,
                None => true,
            };
            if due {
                t.last_nack = Some((last, now));
            }
            Verdict::Gap {
                nack: due.then_some(last),
            }
        } else {
            Verdict::Duplicate
        })
    }

    /// Un-accepts `seq` (a report accepted in order but then refused for backpressure), so that the
    /// reporter's resend of it is in order. Returns the seqnum to NACK with.
    pub fn rollback(&mut self, stream: Stream, seq: u8) -> u8 {
        let last = seq.wrapping_sub(1);
        if let Some(t) = self.tracks.get_mut(&stream) {
            if t.expected == seq.wrapping_add(1) {
                t.expected = seq;
            }
        }
        last
    }
}

/// A DTA NACK frame answering a report received on `report`: addresses swapped, UDP destination 40044.
/// `None` if the NACK cannot be encoded (the caller sends nothing and counts nothing).
pub fn nack_frame(
    report: &UdpEndpoints,
    form: HeaderForm,
    op: Opcode,
    seqnum: u8,
) -> Option<Vec<u8>> {
    let mut ep = report.reversed();
    ep.dst_port = DTA_NACK_UDP_PORT;
    let nack = NackRepr {
        opcode: op,
        seqnum,
        nack: true,
    };
    let mut payload = [0u8; 8];
    let n = nack.emit(&mut payload, form).ok()?;
    let mut out = vec![0u8; dta_protocol::udp::HEADERS_LEN + n];
    ep.emit_frame(&mut out, &payload[..n]).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::udp::UdpFrame;

    const IP: [u8; 4] = [10, 0, 0, 1];
    const COLLECTOR: [u8; 4] = [198, 18, 0, 2];

    fn stream(opcode: Opcode) -> Stream {
        Stream {
            reporter: IP,
            collector: COLLECTOR,
            opcode,
        }
    }

    #[test]
    fn in_order_gap_duplicate_and_wrap() {
        let mut t = SequenceTracker::new(4, Duration::from_nanos(100));
        let kw = stream(Opcode::KeyWrite);
        assert_eq!(t.check(Instant(0), kw, 254), Some(Verdict::Accept));
        assert_eq!(t.check(Instant(0), kw, 255), Some(Verdict::Accept));
        assert_eq!(t.check(Instant(0), kw, 0), Some(Verdict::Accept));
        assert_eq!(
            t.check(Instant(0), kw, 2),
            Some(Verdict::Gap { nack: Some(0) })
        );
        // Within the hold-off the gap is not NACKed again; after it, it is.
        assert_eq!(
            t.check(Instant(50), kw, 3),
            Some(Verdict::Gap { nack: None })
        );
        assert_eq!(
            t.check(Instant(150), kw, 3),
            Some(Verdict::Gap { nack: Some(0) })
        );
        assert_eq!(t.check(Instant(160), kw, 255), Some(Verdict::Duplicate));
        assert_eq!(t.check(Instant(160), kw, 1), Some(Verdict::Accept));
        // Another opcode of the same reporter is a sequence of its own.
        assert_eq!(
            t.check(Instant(0), stream(Opcode::Append), 9),
            Some(Verdict::Accept)
        );
        // So is the same reporter's sequence towards another collector.
        let other = Stream {
            collector: [198, 18, 0, 3],
            ..kw
        };
        assert_eq!(t.check(Instant(0), other, 7), Some(Verdict::Accept));
        assert_eq!(t.check(Instant(0), other, 8), Some(Verdict::Accept));
        assert_eq!(t.rollback(kw, 1), 0);
        assert_eq!(t.check(Instant(170), kw, 1), Some(Verdict::Accept));
    }

    #[test]
    fn nack_frame_bytes() {
        let report = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 9],
            [2, 0, 0, 0, 0, 1],
            [10, 0, 0, 9],
            [198, 18, 0, 2],
            5555,
            40040,
        );
        let f = nack_frame(&report, HeaderForm::Seq, Opcode::KeyWrite, 0x11).unwrap();
        let u = UdpFrame::parse(&f).unwrap();
        assert_eq!(u.endpoints.dst_ip, [10, 0, 0, 9]);
        assert_eq!(u.endpoints.src_ip, [198, 18, 0, 2]);
        assert_eq!(u.endpoints.dst_mac, [2, 0, 0, 0, 0, 9]);
        assert_eq!((u.endpoints.src_port, u.endpoints.dst_port), (40040, 40044));
        assert_eq!(u.payload, &[0x01, 0x11, 0x00, 0x11, 0x80]);
    }
}
