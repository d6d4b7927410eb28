//! Responder counters, kept as plain integers in the sans-IO core and published by the I/O loop.

/// Why a frame was dropped without a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Not Ethernet/IPv4/UDP to port 4791 (ordinary traffic on a shared interface).
    NotRoce,
    /// A VLAN tag the responder's `vlan` setting does not take: a tagged frame (VID other than 0) to a
    /// responder configured untagged, an untagged or otherwise tagged frame to one configured with a VID.
    /// A NIC hands such a frame to another (VLAN) interface, or to none, never to this one's RoCE.
    Vlan,
    /// RoCE to a destination MAC that is neither the responder's nor broadcast: a NIC's address filter
    /// drops it (Linux marks it PACKET_OTHERHOST and IP drops it), so rxe never sees it.
    ForeignMac,
    /// The IPv4 header checksum is wrong: IP drops the datagram before UDP.
    Ipv4Checksum,
    /// The UDP length is not the IPv4 payload's (0 included): UDP drops the datagram.
    UdpLength,
    /// A non-zero UDP checksum that does not match: UDP drops the datagram (0 means "none", as RoCEv2
    /// senders send it).
    UdpChecksum,
    /// Addressed to another IPv4 address.
    NotForUs,
    /// The iCRC does not match.
    Icrc,
    /// A BTH opcode the responder does not serve.
    UnsupportedOpcode,
    /// Malformed below the BTH (lengths, pad count, truncated headers).
    Malformed,
    /// A response or CNP arrived where only requests are expected.
    NotRequest,
    /// P_Key is not the default partition.
    PKey,
    /// No QP with that number.
    UnknownQp,
    /// The QP exists, but the request's source IPv4 address is not the QP's requester, or its UDP source
    /// port lies outside the RoCE v2 range (a spoofed or misdirected request; rxe drops these too).
    WrongSource,
    /// The QP is in the error state.
    QpError,
    /// Out of sequence after the one PSN NAK was already sent.
    OutOfSequence,
    /// A duplicate atomic older than the response cache: nothing to replay, so it is dropped (as rxe does).
    StaleDuplicateAtomic,
    /// A duplicate RDMA READ: READs are refused, so there is no response to replay (rxe drops it too).
    DuplicateRead,
}

impl DropReason {
    /// Every reason, in a stable order for metrics.
    pub const ALL: [DropReason; 18] = [
        DropReason::NotRoce,
        DropReason::Vlan,
        DropReason::ForeignMac,
        DropReason::Ipv4Checksum,
        DropReason::UdpLength,
        DropReason::UdpChecksum,
        DropReason::NotForUs,
        DropReason::Icrc,
        DropReason::UnsupportedOpcode,
        DropReason::Malformed,
        DropReason::NotRequest,
        DropReason::PKey,
        DropReason::UnknownQp,
        DropReason::WrongSource,
        DropReason::QpError,
        DropReason::OutOfSequence,
        DropReason::StaleDuplicateAtomic,
        DropReason::DuplicateRead,
    ];

    /// Metric label.
    pub const fn label(self) -> &'static str {
        match self {
            DropReason::NotRoce => "not_roce",
            DropReason::Vlan => "vlan",
            DropReason::ForeignMac => "foreign_mac",
            DropReason::Ipv4Checksum => "ipv4_checksum",
            DropReason::UdpLength => "udp_length",
            DropReason::UdpChecksum => "udp_checksum",
            DropReason::NotForUs => "not_for_us",
            DropReason::Icrc => "icrc",
            DropReason::UnsupportedOpcode => "unsupported_opcode",
            DropReason::Malformed => "malformed",
            DropReason::NotRequest => "not_request",
            DropReason::PKey => "pkey",
            DropReason::UnknownQp => "unknown_qp",
            DropReason::WrongSource => "wrong_source",
            DropReason::QpError => "qp_error",
            DropReason::OutOfSequence => "out_of_sequence",
            DropReason::StaleDuplicateAtomic => "stale_duplicate_atomic",
            DropReason::DuplicateRead => "duplicate_read",
        }
    }

    fn index(self) -> usize {
        DropReason::ALL
            .iter()
            .position(|r| *r == self)
            .unwrap_or_default()
    }
}

/// Which NAK the responder sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakKind {
    /// PSN sequence error.
    PsnSequence,
    /// Invalid request (misaligned atomic, bad write length, READ, a MIDDLE or LAST without FIRST, a
    /// multi-packet WRITE, no atomic resources).
    InvalidRequest,
    /// Remote access error (R_Key or bounds).
    RemoteAccess,
    /// RNR NAK: the request needs a receive WQE and none is ever posted.
    ReceiverNotReady,
}

impl NakKind {
    /// Every kind, in a stable order for metrics.
    pub const ALL: [NakKind; 4] = [
        NakKind::PsnSequence,
        NakKind::InvalidRequest,
        NakKind::RemoteAccess,
        NakKind::ReceiverNotReady,
    ];

    /// Metric label.
    pub const fn label(self) -> &'static str {
        match self {
            NakKind::PsnSequence => "psn_sequence",
            NakKind::InvalidRequest => "invalid_request",
            NakKind::RemoteAccess => "remote_access",
            NakKind::ReceiverNotReady => "rnr",
        }
    }
}

/// Everything the responder counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// RoCE frames that passed the iCRC, by BTH opcode byte.
    pub frames_by_opcode: [u64; 256],
    /// Drops by reason, indexed like [`DropReason::ALL`].
    pub drops: [u64; DropReason::ALL.len()],
    /// NAKs sent, indexed like [`NakKind::ALL`].
    pub naks: [u64; NakKind::ALL.len()],
    /// ACKs sent (ATOMIC ACKNOWLEDGEs included).
    pub acks: u64,
    /// Duplicate WRITEs re-ACKed without being applied.
    pub duplicate_writes: u64,
    /// Duplicate atomics answered from the cache without being applied.
    pub duplicate_atomics: u64,
    /// WRITEs applied to memory.
    pub writes: u64,
    /// Bytes written by WRITEs.
    pub write_bytes: u64,
    /// Atomics applied to memory.
    pub atomics: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            frames_by_opcode: [0; 256],
            drops: [0; DropReason::ALL.len()],
            naks: [0; NakKind::ALL.len()],
            acks: 0,
            duplicate_writes: 0,
            duplicate_atomics: 0,
            writes: 0,
            write_bytes: 0,
            atomics: 0,
        }
    }
}

impl Stats {
    /// Counts a drop.
    pub fn drop(&mut self, r: DropReason) {
        self.drops[r.index()] += 1;
    }
    /// Drops for one reason.
    pub fn drops_for(&self, r: DropReason) -> u64 {
        self.drops[r.index()]
    }
    /// Counts a NAK.
    pub fn nak(&mut self, k: NakKind) {
        self.naks[NakKind::ALL
            .iter()
            .position(|x| *x == k)
            .unwrap_or_default()] += 1;
    }
    /// NAKs of one kind.
    pub fn naks_for(&self, k: NakKind) -> u64 {
        self.naks[NakKind::ALL
            .iter()
            .position(|x| *x == k)
            .unwrap_or_default()]
    }
}
