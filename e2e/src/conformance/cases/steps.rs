//! The vocabulary of the script: where a request points, with which key and QP, what it is, and a case.

/// Where a request points, resolved against the scratch region of the collector under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addr {
    /// This many bytes into the case's own window of the region.
    Win(u64),
    /// This many bytes before the end of the region.
    FromEnd(u64),
    /// This many bytes before the start of the region.
    Below(u64),
    /// An absolute VA.
    Abs(u64),
}

/// Which R_Key a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// The region's.
    Good,
    /// The region's with these bits flipped: a key no region has on either collector.
    Xor(u32),
}

/// Which QP a request is addressed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpRef {
    /// The case's QP.
    Case,
    /// A QPN that does not exist.
    Unknown,
}

/// The request of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// RC RDMA WRITE ONLY of `len` bytes of `fill`.
    Write { at: Addr, len: usize, fill: u8 },
    /// UC RDMA WRITE ONLY, an opcode of another transport.
    UcWrite { at: Addr, len: usize, fill: u8 },
    /// RC RDMA WRITE ONLY with immediate.
    WriteImm { at: Addr, len: usize, fill: u8 },
    /// RC FETCH & ADD.
    FetchAdd { at: Addr, add: u64 },
    /// RC COMPARE & SWAP.
    CmpSwap { at: Addr, compare: u64, swap: u64 },
    /// RC RDMA READ REQUEST of `len` bytes.
    Read { at: Addr, len: u32 },
    /// RC SEND ONLY.
    Send { len: usize, fill: u8 },
    /// Any opcode: an optional RETH (VA and DMA length), optional 4 bytes of ImmDt or IETH, payload.
    Raw {
        code: u8,
        reth: Option<(Addr, u32)>,
        imm: bool,
        len: usize,
        fill: u8,
    },
}

/// One request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// What to send.
    pub op: Op,
    /// PSN relative to the case's start PSN (wraps at 24 bits).
    pub psn: i32,
    /// BTH AckReq.
    pub ack_req: bool,
    /// R_Key choice.
    pub key: Key,
    /// Destination QP choice.
    pub qp: QpRef,
    /// BTH P_Key.
    pub pkey: u16,
    /// Whether the iCRC is spoiled.
    pub bad_icrc: bool,
}

impl Step {
    pub(super) fn new(op: Op, psn: i32, ack_req: bool) -> Self {
        Step {
            op,
            psn,
            ack_req,
            key: Key::Good,
            qp: QpRef::Case,
            pkey: 0xFFFF,
            bad_icrc: false,
        }
    }
    pub(super) fn key(self, key: Key) -> Self {
        Step { key, ..self }
    }
}

/// One case of the script.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name, the key of the departure table.
    pub name: &'static str,
    /// What it checks.
    pub about: &'static str,
    /// The hello's start PSN (the first PSN the QP expects).
    pub start_psn: u32,
    /// The requests, in order.
    pub steps: Vec<Step>,
}

/// Bytes of the scratch region each case may write through [`Addr::Win`].
pub const WINDOW: u64 = 128;
