/*
 * dta: header types shared by the reporter and the translator.
 * The DTA and RoCE field names, widths and order are the contract of DESIGN.md sections 2 and 4 and are
 * compared with the Rust crate dta-protocol by a test; do not rename fields.
 */
#ifndef _DTA_HEADER_P4_
#define _DTA_HEADER_P4_

#include "define.p4"

/* ---------------- L2-L4 ---------------- */
header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* first four bytes of TCP or UDP: enough for a 5-tuple */
header l4_ports_h {
    bit<16> src_port;
    bit<16> dst_port;
}

/* ---------------- DTA (DESIGN.md section 2) ---------------- */
header dta_base_seq_h {
    bit<8> opcode;
    bit<8> seqnum;
    bit<1> immediate;
    bit<1> retransmit;
    bit<6> reserved;
}

header dta_base_compact_h {
    bit<8> opcode;
    bit<1> immediate;
    bit<1> retransmit;
    bit<6> reserved;
}

/* 0x01 Key-Write; the data follows in dta_keywrite_data_h */
header dta_keywrite_h {
    bit<8>  redundancy;
    bit<32> key;
}

/* Key-Write data, KW_DATA_BYTES bytes, carried unchanged into the collector entry */
header dta_keywrite_data_h {
    bit<KW_DATA_BITS> data;
}

/* 0x02 Append; the entry follows in dta_append_data_h */
header dta_append_h {
    bit<32> list_id;
}

header dta_append_data_h {
    bit<32> data;
}

/* 0x03 Key-Increment */
header dta_keyincrement_h {
    bit<8>  redundancy;
    bit<32> key;
    bit<64> counter;
}

/* 0x04 Postcarding */
header dta_postcard_h {
    bit<32> key;
    bit<8>  hop;
    bit<32> data;
}

/* 0x06 Postcarding with path length */
header dta_postcard_pathlen_h {
    bit<32> key;
    bit<8>  hop;
    bit<8>  path_len;
    bit<32> data;
}

/* 0x05 Sketch-Merge; rows x 32-bit counters follow */
header dta_sketch_h {
    bit<8>  sketch_id;
    bit<8>  op;
    bit<16> reporter_id;
    bit<16> column;
    bit<8>  rows;
    bit<8>  reserved;
}

/* DTA NACK (UDP 40044): base header with the reporter's opcode, then this */
header dta_nack_h {
    bit<8> seqnum;
    bit<1> nack;
    bit<7> reserved;
}

/* ---------------- RoCEv2 (DESIGN.md section 4) ---------------- */
header bth_h {
    bit<8>  opcode;
    bit<1>  solicited;
    bit<1>  mig_req;
    bit<2>  pad_count;
    bit<4>  tver;
    bit<16> pkey;
    bit<1>  fecn;
    bit<1>  becn;
    bit<6>  reserved6;
    bit<24> dest_qp;
    bit<1>  ack_req;
    bit<7>  reserved7;
    bit<24> psn;
}

header reth_h {
    bit<64> va;
    bit<32> rkey;
    bit<32> dma_len;
}

header atomic_eth_h {
    bit<64> va;
    bit<32> rkey;
    bit<64> swap_add;
    bit<64> compare;
}

header aeth_h {
    bit<8>  syndrome;
    bit<24> msn;
}

header atomic_ack_eth_h {
    bit<64> orig_remote_data;
}

header icrc_h {
    bit<32> icrc;
}

#endif

/* ---------------- reporter-local: INT-style path shim ----------------
 * Between IPv4 and L4, signalled by IPv4 protocol 253 (RFC 3692 experimental). The first hop inserts it,
 * every hop writes its switch ID into slot hop_count, the last hop (sink) reports the path and strips it.
 * Not part of the DTA contract.
 */
@noWarn("unused") const bit<8> IP_PROTO_INT_SHIM = 253;
#define INT_SHIM_BYTES 24
header int_shim_h {
    bit<8>  next_proto;
    bit<8>  hop_count;
    bit<16> reserved;
    bit<32> sw_id1;
    bit<32> sw_id2;
    bit<32> sw_id3;
    bit<32> sw_id4;
    bit<32> sw_id5;
}
