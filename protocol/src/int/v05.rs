//! Telemetry Report v0.5 as `stratum/fabric-tna` emits it (`p4src/shared/header.p4`).
//!
//! Fixed header, 12 bytes (fabric-tna sets `ver` = 0 and `hw_id` = 1):
//!
//! | field     | bits | notes |
//! |-----------|------|-------|
//! | ver       | 4    | 0 |
//! | nproto    | 4    | what follows: 0 the inner Ethernet frame, 1 common + drop header, 2 common + switch-local header |
//! | d, q, f   | 3    | dropped, congested queue, tracked flow |
//! | rsvd      | 15   | |
//! | hw_id     | 6    | |
//! | seq_no    | 32   | per (switch, hw_id) |
//! | ig_tstamp | 32   | ingress timestamp (ns, truncated) |
//!
//! Common report header, 9 bytes: `switch_id:32, pad:7, ig_port:9, pad:7, eg_port:9, pad:3, queue_id:5`.
//! Drop report header, 3 bytes: `drop_reason:8, pad:16`. Switch-local report header, 7 bytes:
//! `pad:5, queue_occupancy:19, eg_tstamp:32`. The inner frame (Ethernet, usually IPv4 and TCP/UDP,
//! truncated) follows.
//!
//! (Over 500 lines: 172 of them are the tests beside the code.)

use crate::contract::{f, FieldSpec};
use crate::error::{check_len, check_room, Error};
use crate::field::{get_u16, get_u24, get_u32, set_u16, set_u24, set_u32, Field};
use crate::Result;

mod field {
    use super::Field;
    pub const VER_NPROTO: usize = 0;
    pub const FLAGS: usize = 1;
    pub const HW_ID: usize = 3;
    pub const SEQ: Field = 4..8;
    pub const IG_TSTAMP: Field = 8..12;

    pub const SWITCH_ID: Field = 0..4;
    pub const IG_PORT: Field = 4..6;
    pub const EG_PORT: Field = 6..8;
    pub const QUEUE_ID: usize = 8;

    pub const OCCUPANCY: Field = 0..3;
    pub const EG_TSTAMP: Field = 3..7;

    pub const DROP_REASON: usize = 0;
}

/// Length of the fixed header.
pub const FIXED_LEN: usize = 12;
/// Length of the common report header.
pub const COMMON_LEN: usize = 9;
/// Length of the drop report header.
pub const DROP_LEN: usize = 3;
/// Length of the switch-local report header.
pub const LOCAL_LEN: usize = 7;
/// The version fabric-tna writes.
pub const VERSION: u8 = 0;

/// Next protocol: the inner Ethernet frame follows the fixed header.
pub const NPROTO_ETHERNET: u8 = 0;
/// Next protocol: common header and drop report header.
pub const NPROTO_DROP: u8 = 1;
/// Next protocol: common header and switch-local report header.
pub const NPROTO_LOCAL: u8 = 2;

/// Field table of the fixed header, in wire order.
pub const LAYOUT_FIXED: &[FieldSpec] = &[
    f("ver", 4),
    f("nproto", 4),
    f("dqf", 3),
    f("rsvd", 15),
    f("hw_id", 6),
    f("seq_no", 32),
    f("ig_tstamp", 32),
];
/// Field table of the common report header.
pub const LAYOUT_COMMON: &[FieldSpec] = &[
    f("switch_id", 32),
    f("pad1", 7),
    f("ig_port", 9),
    f("pad2", 7),
    f("eg_port", 9),
    f("pad3", 3),
    f("queue_id", 5),
];
/// Field table of the drop report header.
pub const LAYOUT_DROP: &[FieldSpec] = &[f("drop_reason", 8), f("pad", 16)];
/// Field table of the switch-local report header.
pub const LAYOUT_LOCAL: &[FieldSpec] =
    &[f("pad1", 5), f("queue_occupancy", 19), f("eg_tstamp", 32)];

/// A view of the fixed header.
#[derive(Debug, Clone)]
pub struct FixedPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> FixedPacket<T> {
    /// Wraps a buffer that must hold the whole fixed header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("INT v0.5 fixed header", buffer.as_ref(), FIXED_LEN)?;
        Ok(FixedPacket { buffer })
    }
    /// Version.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_NPROTO] >> 4
    }
    /// Next protocol.
    pub fn nproto(&self) -> u8 {
        self.buffer.as_ref()[field::VER_NPROTO] & 0x0F
    }
    /// Dropped flag.
    pub fn dropped(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x80 != 0
    }
    /// Congested-queue flag.
    pub fn congested(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x40 != 0
    }
    /// Tracked-flow flag.
    pub fn tracked_flow(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x20 != 0
    }
    /// Hardware id.
    pub fn hw_id(&self) -> u8 {
        self.buffer.as_ref()[field::HW_ID] & 0x3F
    }
    /// Sequence number.
    pub fn seq_no(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::SEQ])
    }
    /// Ingress timestamp.
    pub fn ig_tstamp(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::IG_TSTAMP])
    }
}

/// A view of the common report header.
#[derive(Debug, Clone)]
pub struct CommonPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> CommonPacket<T> {
    /// Wraps a buffer that must hold the whole common header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("INT v0.5 common report header", buffer.as_ref(), COMMON_LEN)?;
        Ok(CommonPacket { buffer })
    }
    /// Switch id.
    pub fn switch_id(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::SWITCH_ID])
    }
    /// Ingress port (9 bits).
    pub fn ig_port(&self) -> u16 {
        get_u16(&self.buffer.as_ref()[field::IG_PORT]) & 0x1FF
    }
    /// Egress port (9 bits).
    pub fn eg_port(&self) -> u16 {
        get_u16(&self.buffer.as_ref()[field::EG_PORT]) & 0x1FF
    }
    /// Queue id (5 bits).
    pub fn queue_id(&self) -> u8 {
        self.buffer.as_ref()[field::QUEUE_ID] & 0x1F
    }
}

/// What follows the fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Body {
    /// Next protocol 0: the inner frame directly (no switch-local data).
    Ethernet,
    /// Next protocol 1: a drop report.
    Drop {
        /// Where and in which queue.
        common: CommonRepr,
        /// The switch's drop reason code.
        reason: u8,
    },
    /// Next protocol 2: a switch-local (flow or queue) report.
    Local {
        /// Where and in which queue.
        common: CommonRepr,
        /// Queue occupancy (19 bits).
        queue_occupancy: u32,
        /// Egress timestamp.
        eg_tstamp: u32,
    },
}

/// The common report header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommonRepr {
    /// Switch id.
    pub switch_id: u32,
    /// Ingress port (9 bits).
    pub ig_port: u16,
    /// Egress port (9 bits).
    pub eg_port: u16,
    /// Queue id (5 bits).
    pub queue_id: u8,
}

/// A whole v0.5 report: fixed header, body, and the inner frame it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportRepr<'a> {
    /// Dropped flag.
    pub dropped: bool,
    /// Congested-queue flag.
    pub congested: bool,
    /// Tracked-flow flag.
    pub tracked_flow: bool,
    /// Hardware id (6 bits).
    pub hw_id: u8,
    /// Sequence number.
    pub seq_no: u32,
    /// Ingress timestamp.
    pub ig_tstamp: u32,
    /// The headers after the fixed one.
    pub body: Body,
    /// The inner frame (starts with Ethernet; usually truncated).
    pub inner: &'a [u8],
}

fn common_repr(b: &[u8]) -> Result<CommonRepr> {
    let p = CommonPacket::new_checked(b)?;
    Ok(CommonRepr {
        switch_id: p.switch_id(),
        ig_port: p.ig_port(),
        eg_port: p.eg_port(),
        queue_id: p.queue_id(),
    })
}

impl<'a> ReportRepr<'a> {
    /// Parses a report from the start of a UDP payload.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let fixed = FixedPacket::new_checked(bytes)?;
        if fixed.version() != VERSION {
            return Err(Error::InvalidField {
                header: "INT v0.5 fixed header",
                field: "ver",
                value: fixed.version().into(),
            });
        }
        let rest = &bytes[FIXED_LEN..];
        let (body, used) = match fixed.nproto() {
            NPROTO_ETHERNET => (Body::Ethernet, 0),
            NPROTO_DROP => {
                check_len("INT v0.5 drop report", rest, COMMON_LEN + DROP_LEN)?;
                let common = common_repr(rest)?;
                let reason = rest[COMMON_LEN + field::DROP_REASON];
                (Body::Drop { common, reason }, COMMON_LEN + DROP_LEN)
            }
            NPROTO_LOCAL => {
                check_len("INT v0.5 switch-local report", rest, COMMON_LEN + LOCAL_LEN)?;
                let common = common_repr(rest)?;
                let local = &rest[COMMON_LEN..];
                (
                    Body::Local {
                        common,
                        queue_occupancy: get_u24(&local[field::OCCUPANCY]) & 0x7FFFF,
                        eg_tstamp: get_u32(&local[field::EG_TSTAMP]),
                    },
                    COMMON_LEN + LOCAL_LEN,
                )
            }
            other => {
                return Err(Error::InvalidField {
                    header: "INT v0.5 fixed header",
                    field: "nproto",
                    value: other.into(),
                })
            }
        };
        Ok(ReportRepr {
            dropped: fixed.dropped(),
            congested: fixed.congested(),
            tracked_flow: fixed.tracked_flow(),
            hw_id: fixed.hw_id(),
            seq_no: fixed.seq_no(),
            ig_tstamp: fixed.ig_tstamp(),
            body,
            inner: &rest[used..],
        })
    }

    /// Bytes of the headers (without the inner frame).
    pub const fn header_len(&self) -> usize {
        FIXED_LEN
            + match self.body {
                Body::Ethernet => 0,
                Body::Drop { .. } => COMMON_LEN + DROP_LEN,
                Body::Local { .. } => COMMON_LEN + LOCAL_LEN,
            }
    }

    /// Bytes [`emit`](Self::emit) writes: the headers and the inner frame.
    pub const fn buffer_len(&self) -> usize {
        self.header_len() + self.inner.len()
    }

    /// Writes the report (headers, then the inner frame) to the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_room(buf, self.buffer_len())?;
        let nproto = match self.body {
            Body::Ethernet => NPROTO_ETHERNET,
            Body::Drop { .. } => NPROTO_DROP,
            Body::Local { .. } => NPROTO_LOCAL,
        };
        buf[..FIXED_LEN].fill(0);
        buf[field::VER_NPROTO] = VERSION << 4 | nproto;
        buf[field::FLAGS] = u8::from(self.dropped) << 7
            | u8::from(self.congested) << 6
            | u8::from(self.tracked_flow) << 5;
        buf[field::HW_ID] = self.hw_id & 0x3F;
        set_u32(&mut buf[field::SEQ], self.seq_no);
        set_u32(&mut buf[field::IG_TSTAMP], self.ig_tstamp);
        let rest = &mut buf[FIXED_LEN..];
        let emit_common = |b: &mut [u8], c: &CommonRepr| {
            set_u32(&mut b[field::SWITCH_ID], c.switch_id);
            set_u16(&mut b[field::IG_PORT], c.ig_port & 0x1FF);
            set_u16(&mut b[field::EG_PORT], c.eg_port & 0x1FF);
            b[field::QUEUE_ID] = c.queue_id & 0x1F;
        };
        match &self.body {
            Body::Ethernet => {}
            Body::Drop { common, reason } => {
                emit_common(rest, common);
                let d = &mut rest[COMMON_LEN..COMMON_LEN + DROP_LEN];
                d.fill(0);
                d[field::DROP_REASON] = *reason;
            }
            Body::Local {
                common,
                queue_occupancy,
                eg_tstamp,
            } => {
                emit_common(rest, common);
                let l = &mut rest[COMMON_LEN..COMMON_LEN + LOCAL_LEN];
                set_u24(&mut l[field::OCCUPANCY], queue_occupancy & 0x7FFFF);
                set_u32(&mut l[field::EG_TSTAMP], *eg_tstamp);
            }
        }
        let at = self.header_len();
        buf[at..at + self.inner.len()].copy_from_slice(self.inner);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::layout_bytes;
    use crate::int::test_bits::pack;

    /// A switch-local report written field by field from fabric-tna's header declarations.
    fn local_vector(inner: &[u8]) -> Vec<u8> {
        let mut v = pack(&[
            (0, 4),            // ver
            (2, 4),            // nproto: switch-local
            (0b001, 3),        // d=0 q=0 f=1
            (0, 15),           // rsvd
            (1, 6),            // hw_id
            (0x0102_0304, 32), // seq_no
            (0xA0B0_C0D0, 32), // ig_tstamp
            (7, 32),           // switch_id
            (0, 7),
            (0x1FE, 9), // ig_port
            (0, 7),
            (0x101, 9), // eg_port
            (0, 3),
            (0x1B, 5), // queue_id
            (0, 5),
            (0x7_FFFE, 19),    // queue_occupancy
            (0x0BAD_CAFE, 32), // eg_tstamp
        ]);
        v.extend_from_slice(inner);
        v
    }

    #[test]
    fn layouts_match_the_lengths() {
        assert_eq!(layout_bytes(LAYOUT_FIXED), FIXED_LEN);
        assert_eq!(layout_bytes(LAYOUT_COMMON), COMMON_LEN);
        assert_eq!(layout_bytes(LAYOUT_DROP), DROP_LEN);
        assert_eq!(layout_bytes(LAYOUT_LOCAL), LOCAL_LEN);
        // fabric-tna's own constants: fixed 12, common + drop 12, common + local 16.
        assert_eq!(COMMON_LEN + DROP_LEN, 12);
        assert_eq!(COMMON_LEN + LOCAL_LEN, 16);
    }

    #[test]
    fn switch_local_report_parses_and_round_trips() {
        let inner = [0xEE; 20];
        let bytes = local_vector(&inner);
        let r = ReportRepr::parse(&bytes).unwrap();
        assert_eq!(
            r,
            ReportRepr {
                dropped: false,
                congested: false,
                tracked_flow: true,
                hw_id: 1,
                seq_no: 0x0102_0304,
                ig_tstamp: 0xA0B0_C0D0,
                body: Body::Local {
                    common: CommonRepr {
                        switch_id: 7,
                        ig_port: 0x1FE,
                        eg_port: 0x101,
                        queue_id: 0x1B
                    },
                    queue_occupancy: 0x7_FFFE,
                    eg_tstamp: 0x0BAD_CAFE,
                },
                inner: &inner,
            }
        );
        let mut out = vec![0xAA; r.buffer_len()];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn drop_report_parses_and_round_trips() {
        let mut bytes = pack(&[
            (0, 4),
            (1, 4),     // nproto: drop
            (0b101, 3), // d=1 q=0 f=1
            (0, 15),
            (1, 6),
            (9, 32),
            (10, 32),
            (0xFFFF_FFFF, 32), // switch_id
            (0, 7),
            (3, 9),
            (0, 7),
            (4, 9),
            (0, 3),
            (5, 5),
            (0xA0, 8), // drop_reason
            (0, 16),
        ]);
        bytes.extend_from_slice(&[1, 2, 3]);
        let r = ReportRepr::parse(&bytes).unwrap();
        assert!(r.dropped && r.tracked_flow && !r.congested);
        assert_eq!(
            r.body,
            Body::Drop {
                common: CommonRepr {
                    switch_id: u32::MAX,
                    ig_port: 3,
                    eg_port: 4,
                    queue_id: 5
                },
                reason: 0xA0
            }
        );
        assert_eq!(r.inner, &[1, 2, 3]);
        let mut out = vec![0; r.buffer_len()];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn bad_reports_are_errors() {
        let bytes = local_vector(&[]);
        for cut in 0..FIXED_LEN + COMMON_LEN + LOCAL_LEN {
            assert!(
                matches!(
                    ReportRepr::parse(&bytes[..cut]),
                    Err(Error::Truncated { .. })
                ),
                "cut at {cut}"
            );
        }
        let mut v = bytes.clone();
        v[0] = 0x23; // version 2, nproto 3
        assert!(matches!(
            ReportRepr::parse(&v),
            Err(Error::InvalidField { field: "ver", .. })
        ));
        v[0] = 0x03; // nproto 3
        assert!(matches!(
            ReportRepr::parse(&v),
            Err(Error::InvalidField {
                field: "nproto",
                ..
            })
        ));
    }

    #[test]
    fn accessors_read_the_layout_fields() {
        // Every field at its all-ones value, the rest zero: each accessor sees exactly its bits.
        let ones = pack(&[
            (0, 4),
            (0xF, 4),
            (0b111, 3),
            (0, 15),
            (0x3F, 6),
            (0, 32),
            (0, 32),
        ]);
        let p = FixedPacket::new_checked(&ones[..]).unwrap();
        assert_eq!((p.version(), p.nproto(), p.hw_id()), (0, 0xF, 0x3F));
        assert!(p.dropped() && p.congested() && p.tracked_flow());
        let pads = pack(&[
            (0, 32),
            (0x7F, 7),
            (0, 9),
            (0x7F, 7),
            (0, 9),
            (0x7, 3),
            (0, 5),
        ]);
        let c = CommonPacket::new_checked(&pads[..]).unwrap();
        assert_eq!((c.ig_port(), c.eg_port(), c.queue_id()), (0, 0, 0));
    }
}
