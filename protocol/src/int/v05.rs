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
mod tests;
