//! The frame offsets against the views (each setter, run on a frame at its header's start, touches exactly
//! the constant's bytes) and against frames scapy's RoCE layer built (each constant reads the value scapy
//! was given). The scapy frames were made with scapy 2.x (`scapy.contrib.roce`: `BTH`, `AETH`, its `icrc`
//! computed by scapy; RETH and AtomicETH as `struct.pack(">QII")` and `(">QIQQ")`, which scapy lacks):
//!
//! ```python
//! def ep(p): return Ether(dst="02:00:00:00:00:0a", src="02:00:00:00:00:0b")/IP(src="198.18.0.1",
//!     dst="198.18.0.2", tos=0x2a<<2|2, id=0x1234, ttl=61, flags="DF")/UDP(sport=49153, dport=4791, chksum=0)/p
//! ep(BTH(opcode=0x0a, solicited=1, pkey=0xabcd, becn=1, dqpn=0x123456, ackreq=1, psn=0x789abc)
//!    /Raw(struct.pack(">QII", 0x0123456789abcdef, 0x8badf00d, 8) + bytes(range(0xa0, 0xa8))))
//! ep(BTH(opcode=0x14, pkey=0xabcd, dqpn=0x123456, ackreq=1, psn=0x789abd)/Raw(struct.pack(">QIQQ",
//!    0x1122334455667788, 0xcafe0001, 0x0102030405060708, 0x1112131415161718)))
//! ep(BTH(opcode=0x11, pkey=0xffff, dqpn=0x654321, psn=0xfedcba)/AETH(syndrome=0x1f, msn=0xa5b6c7))
//! ep(BTH(opcode=0x12, pkey=0xffff, dqpn=0x654321, psn=0xfedcbb)/AETH(syndrome=0x1f, msn=0xa5b6c8)
//!    /Raw(struct.pack(">Q", 0xdeadbeef01020304)))
//! ```

use super::*;
use crate::roce::{aeth, atomic_ack_eth, atomic_eth, bth, icrc, reth, FrameRepr};
use crate::udp::at as env;

pub(crate) const SCAPY_WRITE: &str = "02000000000a02000000000b080045aa0044123440003d119ea3c6120001c6120002c00112b7003000000a80abcd4012345680789abc0123456789abcdef8badf00d00000008a0a1a2a3a4a5a6a7e9c3b213";
pub(crate) const SCAPY_FETCH_ADD: &str = "02000000000a02000000000b080045aa0048123440003d119e9fc6120001c6120002c00112b7003400001400abcd0012345680789abd1122334455667788cafe00010102030405060708111213141516171858c4d686";
pub(crate) const SCAPY_ACK: &str = "02000000000a02000000000b080045aa0030123440003d119eb7c6120001c6120002c00112b7001c00001100ffff0065432100fedcba1fa5b6c758d276c0";
pub(crate) const SCAPY_ATOMIC_ACK: &str = "02000000000a02000000000b080045aa0038123440003d119eafc6120001c6120002c00112b7002400001200ffff0065432100fedcbb1fa5b6c8deadbeef010203043c0acd18";

pub(crate) fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0, |v, &x| v << 8 | u64::from(x))
}

/// The bytes of a zeroed 128-byte frame that `set` changes, as one range (`set` writes all ones).
fn touched(set: impl Fn(&mut [u8])) -> Range<usize> {
    let mut f = [0u8; 128];
    set(&mut f);
    let first = f.iter().position(|&b| b != 0).unwrap();
    let last = f.iter().rposition(|&b| b != 0).unwrap();
    assert!(f[first..=last].iter().all(|&b| b != 0), "not one range");
    first..last + 1
}

#[test]
fn bth_offsets_are_the_views() {
    fn view(f: &mut [u8]) -> bth::Packet<&mut [u8]> {
        bth::Packet::new_unchecked(&mut f[BTH..])
    }
    assert_eq!(
        touched(|f| view(f).set_opcode(0xFF)),
        BTH_OPCODE..BTH_OPCODE + 1
    );
    assert_eq!(
        touched(|f| view(f).set_flags(true, true, 3, 15)),
        BTH_FLAGS..BTH_FLAGS + 1
    );
    assert_eq!(touched(|f| view(f).set_pkey(0xFFFF)), BTH_PKEY);
    assert_eq!(
        touched(|f| view(f).set_ecn_bits(true, true)),
        BTH_BECN_FECN..BTH_BECN_FECN + 1
    );
    assert_eq!(touched(|f| view(f).set_dest_qp(0xFF_FFFF)), BTH_DEST_QP);
    assert_eq!(
        touched(|f| view(f).set_ack_req(true)),
        BTH_ACK_REQ..BTH_ACK_REQ + 1
    );
    assert_eq!(touched(|f| view(f).set_psn(0xFF_FFFF)), BTH_PSN);
    assert_eq!(BTH_ACK_REQ, BTH + bth::ACK_PSN_OFFSET);
    assert_eq!(BTH_BECN_FECN, BTH + bth::FECN_BECN_OFFSET);
    assert_eq!(EXT, BTH + bth::HEADER_LEN);
    // The bits inside the flag bytes, through the view's own accessors.
    let mut f = [0u8; 128];
    f[BTH_FLAGS] = 2 << bth::field::PAD_COUNT_SHIFT | bth::field::SOLICITED_BIT;
    f[BTH_ACK_REQ] = bth::field::ACK_REQ_BIT;
    let p = bth::Packet::new_unchecked(&f[BTH..]);
    assert_eq!(
        (p.pad_count(), p.solicited(), p.mig_req(), p.ack_req()),
        (2, true, false, true)
    );
}

#[test]
fn extension_offsets_are_the_views() {
    fn r(f: &mut [u8]) -> reth::Packet<&mut [u8]> {
        reth::Packet::new_unchecked(&mut f[EXT..])
    }
    assert_eq!(touched(|f| r(f).set_va(u64::MAX)), RETH_VA);
    assert_eq!(touched(|f| r(f).set_rkey(u32::MAX)), RETH_RKEY);
    assert_eq!(touched(|f| r(f).set_dma_len(u32::MAX)), RETH_DMA_LEN);
    assert_eq!(WRITE_PAYLOAD, RETH_DMA_LEN.end);
    fn a(f: &mut [u8]) -> atomic_eth::Packet<&mut [u8]> {
        atomic_eth::Packet::new_unchecked(&mut f[EXT..])
    }
    assert_eq!(touched(|f| a(f).set_va(u64::MAX)), ATOMIC_VA);
    assert_eq!(touched(|f| a(f).set_rkey(u32::MAX)), ATOMIC_RKEY);
    assert_eq!(touched(|f| a(f).set_swap_add(u64::MAX)), ATOMIC_SWAP_ADD);
    assert_eq!(touched(|f| a(f).set_compare(u64::MAX)), ATOMIC_COMPARE);
    fn ae(f: &mut [u8]) -> aeth::Packet<&mut [u8]> {
        aeth::Packet::new_unchecked(&mut f[EXT..])
    }
    assert_eq!(
        touched(|f| ae(f).set_syndrome(0xFF)),
        AETH_SYNDROME..AETH_SYNDROME + 1
    );
    assert_eq!(touched(|f| ae(f).set_msn(0xFF_FFFF)), AETH_MSN);
    assert_eq!(
        touched(
            |f| atomic_ack_eth::Packet::new_unchecked(&mut f[EXT + aeth::HEADER_LEN..])
                .set_orig_remote_data(u64::MAX)
        ),
        ATOMIC_ACK_ORIG
    );
}

#[test]
fn offsets_read_scapys_write_and_fetch_add() {
    let w = unhex(SCAPY_WRITE);
    assert_eq!(icrc::verify(&w), Ok(()), "scapy's iCRC is ours");
    assert_eq!(w.len(), write_only_len(8));
    assert_eq!(w[env::ETH_DST], [2, 0, 0, 0, 0, 0x0a]);
    assert_eq!(w[env::ETH_SRC], [2, 0, 0, 0, 0, 0x0b]);
    assert_eq!(w[env::IPV4_TOS], 0x2a << 2 | 2);
    assert_eq!(be(&w[env::IPV4_TOTAL_LEN]), (w.len() - env::IPV4) as u64);
    assert_eq!(be(&w[env::IPV4_ID]), 0x1234);
    assert_eq!(w[env::IPV4_TTL], 61);
    assert_eq!(w[env::IPV4_SRC], [198, 18, 0, 1]);
    assert_eq!(w[env::IPV4_DST], [198, 18, 0, 2]);
    assert_eq!(be(&w[env::UDP_SRC_PORT]), 49153);
    assert_eq!(be(&w[env::UDP_DST_PORT]), 4791);
    assert_eq!(w[BTH_OPCODE], 0x0a);
    assert_eq!(w[BTH_FLAGS], bth::field::SOLICITED_BIT);
    assert_eq!(be(&w[BTH_PKEY]), 0xabcd);
    assert_eq!(w[BTH_BECN_FECN], bth::field::BECN_BIT);
    assert_eq!(be(&w[BTH_DEST_QP]), 0x12_3456);
    assert_eq!(w[BTH_ACK_REQ], bth::field::ACK_REQ_BIT);
    assert_eq!(be(&w[BTH_PSN]), 0x78_9abc);
    assert_eq!(be(&w[RETH_VA]), 0x0123_4567_89ab_cdef);
    assert_eq!(be(&w[RETH_RKEY]), 0x8bad_f00d);
    assert_eq!(be(&w[RETH_DMA_LEN]), 8);
    assert_eq!(
        w[WRITE_PAYLOAD..WRITE_PAYLOAD + 8],
        [0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7]
    );
    // And the views agree (FrameRepr::parse checks the iCRC, lengths and pad count too).
    let f = FrameRepr::parse(&w).unwrap();
    assert_eq!(
        (f.bth.psn, f.bth.dest_qp, f.payload.len()),
        (0x78_9abc, 0x12_3456, 8)
    );

    let a = unhex(SCAPY_FETCH_ADD);
    assert_eq!(icrc::verify(&a), Ok(()));
    assert_eq!(a.len(), ATOMIC_LEN);
    assert_eq!(a[BTH_OPCODE], bth::opcode::FETCH_ADD);
    assert_eq!(be(&a[BTH_PSN]), 0x78_9abd);
    assert_eq!(be(&a[ATOMIC_VA]), 0x1122_3344_5566_7788);
    assert_eq!(be(&a[ATOMIC_RKEY]), 0xcafe_0001);
    assert_eq!(be(&a[ATOMIC_SWAP_ADD]), 0x0102_0304_0506_0708);
    assert_eq!(be(&a[ATOMIC_COMPARE]), 0x1112_1314_1516_1718);
    assert!(FrameRepr::parse(&a).is_ok());
}

#[test]
fn offsets_read_scapys_acknowledges() {
    let k = unhex(SCAPY_ACK);
    assert_eq!(icrc::verify(&k), Ok(()));
    assert_eq!(k.len(), ACK_LEN);
    assert_eq!(k[BTH_OPCODE], bth::opcode::ACKNOWLEDGE);
    assert_eq!(be(&k[BTH_DEST_QP]), 0x65_4321);
    assert_eq!(be(&k[BTH_PSN]), 0xfe_dcba);
    assert_eq!(k[AETH_SYNDROME], 0x1f);
    assert_eq!(be(&k[AETH_MSN]), 0xa5_b6c7);
    assert!(FrameRepr::parse(&k).is_ok());
    let t = unhex(SCAPY_ATOMIC_ACK);
    assert_eq!(icrc::verify(&t), Ok(()));
    assert_eq!(t.len(), ATOMIC_ACK_LEN);
    assert_eq!(t[BTH_OPCODE], bth::opcode::ATOMIC_ACKNOWLEDGE);
    assert_eq!(be(&t[BTH_PSN]), 0xfe_dcbb);
    assert_eq!(be(&t[AETH_MSN]), 0xa5_b6c8);
    assert_eq!(be(&t[ATOMIC_ACK_ORIG]), 0xdead_beef_0102_0304);
    assert!(FrameRepr::parse(&t).is_ok());
}

/// The byte range `layout` gives the field `name` (a field of whole bytes).
fn layout_range(layout: &[crate::field::FieldSpec], name: &str) -> Range<usize> {
    let mut bit = 0;
    for f in layout {
        if f.name == name {
            assert!(bit % 8 == 0 && f.bits % 8 == 0, "{name} is not whole bytes");
            return bit as usize / 8..(bit + f.bits) as usize / 8;
        }
        bit += f.bits;
    }
    panic!("no field {name}");
}

/// The `field` tables are the `LAYOUT` tables' byte-aligned fields (the P4 headers are generated from
/// `LAYOUT`, so the fast paths and the switch agree on every offset).
#[test]
fn field_tables_are_the_layouts() {
    let one = |at: usize| at..at + 1;
    let l = bth::LAYOUT;
    assert_eq!(layout_range(l, "opcode"), one(bth::field::OPCODE));
    assert_eq!(layout_range(l, "pkey"), bth::field::PKEY);
    assert_eq!(layout_range(l, "dest_qp"), bth::field::DEST_QP);
    assert_eq!(layout_range(l, "psn"), bth::field::PSN);
    let l = reth::LAYOUT;
    assert_eq!(layout_range(l, "va"), reth::field::VA);
    assert_eq!(layout_range(l, "rkey"), reth::field::RKEY);
    assert_eq!(layout_range(l, "dma_len"), reth::field::DMA_LEN);
    let l = atomic_eth::LAYOUT;
    assert_eq!(layout_range(l, "va"), atomic_eth::field::VA);
    assert_eq!(layout_range(l, "rkey"), atomic_eth::field::RKEY);
    assert_eq!(layout_range(l, "swap_add"), atomic_eth::field::SWAP_ADD);
    assert_eq!(layout_range(l, "compare"), atomic_eth::field::COMPARE);
    assert_eq!(
        layout_range(aeth::LAYOUT, "syndrome"),
        one(aeth::field::SYNDROME)
    );
    assert_eq!(layout_range(aeth::LAYOUT, "msn"), aeth::field::MSN);
    assert_eq!(
        layout_range(atomic_ack_eth::LAYOUT, "orig_remote_data"),
        atomic_ack_eth::field::ORIG
    );
}
