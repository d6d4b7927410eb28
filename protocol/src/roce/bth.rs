//! Base Transport Header (IBA 9.2), 12 bytes.
//!
//! ```text
//! 0: opcode:8 | 1: SE:1 MigReq:1 PadCnt:2 TVer:4 | 2: P_Key:16
//! 4: FECN:1 BECN:1 reserved:6 | 5: dest QP:24
//! 8: AckReq:1 reserved:7 | 9: PSN:24
//! ```

use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u16, get_u24, set_u16, set_u24, Field, Rest};
use crate::roce::{PSN_MASK, QPN_MASK};
use crate::{Error, Result};

/// Byte offsets and bit masks of the BTH's fields, relative to the start of the BTH: the one statement of
/// where each field lies, which the view's accessors read and [`crate::roce::at`] shifts to frame offsets.
pub mod field {
    use super::{Field, Rest};
    /// Opcode.
    pub const OPCODE: usize = 0;
    /// SE, MigReq, PadCnt and TVer.
    pub const FLAGS: usize = 1;
    /// Partition key.
    pub const PKEY: Field = 2..4;
    /// FECN, BECN and six reserved bits.
    pub const BECN_FECN: usize = 4;
    /// Destination QP.
    pub const DEST_QP: Field = 5..8;
    /// AckReq and seven reserved bits: the first byte of the AckReq/PSN word.
    pub const ACK_REQ: usize = 8;
    /// Packet sequence number.
    pub const PSN: Field = 9..12;
    /// What follows the BTH.
    pub const PAYLOAD: Rest = 12..;

    /// Solicited event, in the [`FLAGS`] byte.
    pub const SOLICITED_BIT: u8 = 0x80;
    /// Migration request, in the [`FLAGS`] byte.
    pub const MIG_REQ_BIT: u8 = 0x40;
    /// Where the pad count lies in the [`FLAGS`] byte: `(flags >> PAD_COUNT_SHIFT) & PAD_COUNT_MASK`.
    pub const PAD_COUNT_SHIFT: u32 = 4;
    /// The pad count's width, once shifted down.
    pub const PAD_COUNT_MASK: u8 = 0x3;
    /// Transport header version, in the [`FLAGS`] byte.
    pub const TVER_MASK: u8 = 0x0F;
    /// FECN, in the [`BECN_FECN`] byte.
    pub const FECN_BIT: u8 = 0x80;
    /// BECN, in the [`BECN_FECN`] byte.
    pub const BECN_BIT: u8 = 0x40;
    /// AckReq, in the [`ACK_REQ`] byte.
    pub const ACK_REQ_BIT: u8 = 0x80;
}

/// Length of the BTH.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Offset of the AckReq/PSN word: every byte before it is the same for all packets of one QP and opcode,
/// which is what lets a sender keep frame templates and an iCRC prefix per shape.
pub const ACK_PSN_OFFSET: usize = field::ACK_REQ;
/// Offset of the byte holding FECN, BECN and six reserved bits: switches may change it in flight, so the
/// iCRC covers it as all ones.
pub const FECN_BECN_OFFSET: usize = field::BECN_FECN;

/// The destination QP of a BTH at the start of `buf`, read without checking anything else: enough to route
/// a response to the owner of its QP. `None` if `buf` ends before the field does.
#[inline]
pub fn peek_dest_qp(buf: &[u8]) -> Option<u32> {
    buf.get(field::DEST_QP).map(get_u24)
}

/// Field table of the BTH, in wire order.
pub const LAYOUT: &[FieldSpec] = &[
    f("opcode", 8),
    f("solicited", 1),
    f("mig_req", 1),
    f("pad_count", 2),
    f("tver", 4),
    f("pkey", 16),
    f("fecn", 1),
    f("becn", 1),
    f("reserved6", 6),
    f("dest_qp", 24),
    f("ack_req", 1),
    f("reserved7", 7),
    f("psn", 24),
];

/// Raw opcodes of the RC transport (IBA table 38) and the RoCEv2 CNP, including those dta never sends: a
/// responder must still tell them apart to refuse them the way rxe does. [`BthOpcode`] names the subset dta
/// builds or consumes.
pub mod opcode {
    #![allow(missing_docs)]
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_IMM: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_IMM: u8 = 0x05;
    pub const WRITE_FIRST: u8 = 0x06;
    pub const WRITE_MIDDLE: u8 = 0x07;
    pub const WRITE_LAST: u8 = 0x08;
    pub const WRITE_LAST_IMM: u8 = 0x09;
    pub const WRITE_ONLY: u8 = 0x0A;
    pub const WRITE_ONLY_IMM: u8 = 0x0B;
    pub const READ_REQUEST: u8 = 0x0C;
    pub const READ_RESPONSE_FIRST: u8 = 0x0D;
    pub const READ_RESPONSE_MIDDLE: u8 = 0x0E;
    pub const READ_RESPONSE_LAST: u8 = 0x0F;
    pub const READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const COMPARE_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;
    pub const SEND_LAST_INV: u8 = 0x16;
    pub const SEND_ONLY_INV: u8 = 0x17;
    /// RoCEv2 congestion notification packet.
    pub const CNP: u8 = 0x81;
}

/// The BTH opcodes that dta builds or consumes (RC transport, plus the RoCEv2 CNP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BthOpcode {
    /// RC RDMA WRITE ONLY: RETH and payload.
    RdmaWriteOnly,
    /// RC RDMA WRITE ONLY with immediate: RETH, ImmDt and payload.
    RdmaWriteOnlyImm,
    /// RC ACKNOWLEDGE: AETH.
    Acknowledge,
    /// RC ATOMIC ACKNOWLEDGE: AETH and AtomicAckETH.
    AtomicAcknowledge,
    /// RC COMPARE & SWAP: AtomicETH.
    CompareSwap,
    /// RC FETCH & ADD: AtomicETH.
    FetchAdd,
    /// RoCEv2 congestion notification packet: 16 reserved bytes.
    Cnp,
}

impl BthOpcode {
    /// The opcode's wire value.
    pub const fn code(self) -> u8 {
        match self {
            BthOpcode::RdmaWriteOnly => opcode::WRITE_ONLY,
            BthOpcode::RdmaWriteOnlyImm => opcode::WRITE_ONLY_IMM,
            BthOpcode::Acknowledge => opcode::ACKNOWLEDGE,
            BthOpcode::AtomicAcknowledge => opcode::ATOMIC_ACKNOWLEDGE,
            BthOpcode::CompareSwap => opcode::COMPARE_SWAP,
            BthOpcode::FetchAdd => opcode::FETCH_ADD,
            BthOpcode::Cnp => opcode::CNP,
        }
    }

    /// The opcode for a wire value, if dta handles it.
    pub const fn from_code(code: u8) -> Result<Self> {
        Ok(match code {
            opcode::WRITE_ONLY => BthOpcode::RdmaWriteOnly,
            opcode::WRITE_ONLY_IMM => BthOpcode::RdmaWriteOnlyImm,
            opcode::ACKNOWLEDGE => BthOpcode::Acknowledge,
            opcode::ATOMIC_ACKNOWLEDGE => BthOpcode::AtomicAcknowledge,
            opcode::COMPARE_SWAP => BthOpcode::CompareSwap,
            opcode::FETCH_ADD => BthOpcode::FetchAdd,
            opcode::CNP => BthOpcode::Cnp,
            other => return Err(Error::UnsupportedBthOpcode(other)),
        })
    }

    /// Whether packets with this opcode flow from requester to responder.
    pub const fn is_request(self) -> bool {
        matches!(
            self,
            BthOpcode::RdmaWriteOnly
                | BthOpcode::RdmaWriteOnlyImm
                | BthOpcode::CompareSwap
                | BthOpcode::FetchAdd
        )
    }
}

/// A read/write view of a BTH at the start of a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer that must hold at least a whole BTH.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("BTH", buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The raw opcode.
    pub fn opcode(&self) -> u8 {
        self.buffer.as_ref()[field::OPCODE]
    }
    /// Solicited event.
    pub fn solicited(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & field::SOLICITED_BIT != 0
    }
    /// Migration request.
    pub fn mig_req(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & field::MIG_REQ_BIT != 0
    }
    /// Pad bytes added to the payload to reach a multiple of 4.
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] >> field::PAD_COUNT_SHIFT) & field::PAD_COUNT_MASK
    }
    /// Transport header version.
    pub fn transport_version(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & field::TVER_MASK
    }
    /// Partition key.
    pub fn pkey(&self) -> u16 {
        get_u16(&self.buffer.as_ref()[field::PKEY])
    }
    /// Forward explicit congestion notification.
    pub fn fecn(&self) -> bool {
        self.buffer.as_ref()[field::BECN_FECN] & field::FECN_BIT != 0
    }
    /// Backward explicit congestion notification.
    pub fn becn(&self) -> bool {
        self.buffer.as_ref()[field::BECN_FECN] & field::BECN_BIT != 0
    }
    /// Destination queue pair number (24 bits).
    pub fn dest_qp(&self) -> u32 {
        get_u24(&self.buffer.as_ref()[field::DEST_QP])
    }
    /// Acknowledge request.
    pub fn ack_req(&self) -> bool {
        self.buffer.as_ref()[field::ACK_REQ] & field::ACK_REQ_BIT != 0
    }
    /// Packet sequence number (24 bits).
    pub fn psn(&self) -> u32 {
        get_u24(&self.buffer.as_ref()[field::PSN])
    }

    #[cfg(test)]
    fn flags_byte_for_test(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The bytes after the BTH.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the opcode.
    pub fn set_opcode(&mut self, v: u8) {
        self.buffer.as_mut()[field::OPCODE] = v;
    }
    /// Sets SE, MigReq, PadCnt and TVer together.
    pub fn set_flags(&mut self, solicited: bool, mig_req: bool, pad_count: u8, tver: u8) {
        self.buffer.as_mut()[field::FLAGS] = (if solicited { field::SOLICITED_BIT } else { 0 })
            | (if mig_req { field::MIG_REQ_BIT } else { 0 })
            | ((pad_count & field::PAD_COUNT_MASK) << field::PAD_COUNT_SHIFT)
            | (tver & field::TVER_MASK);
    }
    /// Sets the partition key.
    pub fn set_pkey(&mut self, v: u16) {
        set_u16(&mut self.buffer.as_mut()[field::PKEY], v);
    }
    /// Sets FECN and BECN (reserved bits cleared).
    pub fn set_ecn_bits(&mut self, fecn: bool, becn: bool) {
        self.buffer.as_mut()[field::BECN_FECN] =
            (if fecn { field::FECN_BIT } else { 0 }) | (if becn { field::BECN_BIT } else { 0 });
    }
    /// Sets the destination QP (low 24 bits of `v`).
    pub fn set_dest_qp(&mut self, v: u32) {
        set_u24(&mut self.buffer.as_mut()[field::DEST_QP], v);
    }
    /// Sets AckReq (reserved bits cleared).
    pub fn set_ack_req(&mut self, v: bool) {
        self.buffer.as_mut()[field::ACK_REQ] = if v { field::ACK_REQ_BIT } else { 0 };
    }
    /// Sets the PSN (low 24 bits of `v`).
    pub fn set_psn(&mut self, v: u32) {
        set_u24(&mut self.buffer.as_mut()[field::PSN], v);
    }
}

/// A parsed BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BthRepr {
    /// Opcode.
    pub opcode: BthOpcode,
    /// Solicited event.
    pub solicited: bool,
    /// Migration request. The frame builders send 0, as the TOOLCHAIN.md golden WRITE frame does; RC
    /// responders without automatic path migration ignore it.
    pub mig_req: bool,
    /// Pad count, 0..=3.
    pub pad_count: u8,
    /// Partition key.
    pub pkey: u16,
    /// FECN.
    pub fecn: bool,
    /// BECN.
    pub becn: bool,
    /// Destination QP, 24 bits.
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// PSN, 24 bits.
    pub psn: u32,
}

impl BthRepr {
    /// Parses a BTH; the opcode must be one dta handles and the transport version 0.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        if packet.transport_version() != 0 {
            return Err(Error::InvalidField {
                header: "BTH",
                field: "transport version",
                value: packet.transport_version().into(),
            });
        }
        Ok(BthRepr {
            opcode: BthOpcode::from_code(packet.opcode())?,
            solicited: packet.solicited(),
            mig_req: packet.mig_req(),
            pad_count: packet.pad_count(),
            pkey: packet.pkey(),
            fecn: packet.fecn(),
            becn: packet.becn(),
            dest_qp: packet.dest_qp(),
            ack_req: packet.ack_req(),
            psn: packet.psn(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_room(buf, HEADER_LEN)?;
        if self.dest_qp & !QPN_MASK != 0 || self.psn & !PSN_MASK != 0 || self.pad_count > 3 {
            return Err(Error::InvalidField {
                header: "BTH",
                field: "24-bit QP/PSN or pad count",
                value: u64::from(self.dest_qp.max(self.psn)),
            });
        }
        let mut p = Packet::new_unchecked(&mut buf[..HEADER_LEN]);
        p.set_opcode(self.opcode.code());
        p.set_flags(self.solicited, self.mig_req, self.pad_count, 0);
        p.set_pkey(self.pkey);
        p.set_ecn_bits(self.fecn, self.becn);
        p.set_dest_qp(self.dest_qp);
        p.set_ack_req(self.ack_req);
        p.set_psn(self.psn);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // BTH of the TOOLCHAIN.md WRITE vector: WRITE ONLY, MigReq 0, P_Key 0xFFFF, QP 0x11, AckReq, PSN 0x100.
    const VECTOR: [u8; 12] = [
        0x0a, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x80, 0x00, 0x01, 0x00,
    ];

    fn vector_repr() -> BthRepr {
        BthRepr {
            opcode: BthOpcode::RdmaWriteOnly,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: 0x11,
            ack_req: true,
            psn: 0x100,
        }
    }

    #[test]
    fn parses_vector() {
        let p = Packet::new_checked(&VECTOR[..]).unwrap();
        assert_eq!(BthRepr::parse(&p).unwrap(), vector_repr());
    }

    #[test]
    fn emits_vector() {
        let mut buf = [0u8; 12];
        vector_repr().emit(&mut buf).unwrap();
        assert_eq!(buf, VECTOR);
    }

    #[test]
    fn rejects_short_and_unknown() {
        assert!(matches!(
            Packet::new_checked(&VECTOR[..11]),
            Err(Error::Truncated { .. })
        ));
        let mut v = VECTOR;
        v[0] = 0x06; // WRITE FIRST: not something dta sends or accepts
        let p = Packet::new_checked(&v[..]).unwrap();
        assert_eq!(BthRepr::parse(&p), Err(Error::UnsupportedBthOpcode(0x06)));
    }

    #[test]
    fn layout_matches_accessors() {
        // Walk LAYOUT, setting one field at a time to all ones, and check that the view reads back exactly
        // that field: this ties the table to the accessors' bit positions.
        let mut bit = 0;
        for spec in LAYOUT {
            let mut buf = [0u8; HEADER_LEN];
            for b in bit..bit + spec.bits as usize {
                buf[b / 8] |= 0x80 >> (b % 8);
            }
            let p = Packet::new_unchecked(&buf[..]);
            let ones = (1u64 << spec.bits) - 1;
            let read: u64 = match spec.name {
                "opcode" => p.opcode().into(),
                "solicited" => p.solicited().into(),
                "mig_req" => p.mig_req().into(),
                "pad_count" => p.pad_count().into(),
                "tver" => p.transport_version().into(),
                "pkey" => p.pkey().into(),
                "fecn" => p.fecn().into(),
                "becn" => p.becn().into(),
                "dest_qp" => p.dest_qp().into(),
                "ack_req" => p.ack_req().into(),
                "psn" => p.psn().into(),
                // Reserved fields have no accessor: every named accessor must read 0 instead.
                _ => {
                    assert_eq!(
                        (p.opcode(), p.flags_byte_for_test(), p.dest_qp(), p.psn()),
                        (0, 0, 0, 0)
                    );
                    ones
                }
            };
            assert_eq!(read, ones, "field {}", spec.name);
            bit += spec.bits as usize;
        }
        assert_eq!(bit, HEADER_LEN * 8);
    }

    #[test]
    fn opcodes_are_iba_table_38() {
        // Written out from the table rather than from the constants: RC is transport 000, so the opcode
        // is the five-bit operation code.
        let named = [
            (BthOpcode::RdmaWriteOnly, 0b0_1010),
            (BthOpcode::RdmaWriteOnlyImm, 0b0_1011),
            (BthOpcode::Acknowledge, 0b1_0001),
            (BthOpcode::AtomicAcknowledge, 0b1_0010),
            (BthOpcode::CompareSwap, 0b1_0011),
            (BthOpcode::FetchAdd, 0b1_0100),
            (BthOpcode::Cnp, 0x81),
        ];
        for (op, code) in named {
            assert_eq!(op.code(), code);
            assert_eq!(BthOpcode::from_code(code), Ok(op));
        }
        assert_eq!((opcode::SEND_FIRST, opcode::READ_REQUEST), (0, 0b0_1100));
        assert_eq!((opcode::SEND_LAST_INV, opcode::SEND_ONLY_INV), (0x16, 0x17));
    }

    #[test]
    fn peeks_the_dest_qp_of_a_partial_header() {
        assert_eq!(peek_dest_qp(&VECTOR), Some(0x11));
        assert_eq!(peek_dest_qp(&VECTOR[..8]), Some(0x11));
        assert_eq!(peek_dest_qp(&VECTOR[..7]), None);
        assert_eq!(ACK_PSN_OFFSET, 8);
    }

    #[test]
    fn rejects_out_of_range_psn() {
        let mut r = vector_repr();
        r.psn = 1 << 24;
        assert!(r.emit(&mut [0u8; 12]).is_err());
    }
}
