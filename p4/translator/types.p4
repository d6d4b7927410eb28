/* dta translator: header struct, bridge header and metadata (program-local). */
#ifndef _DTA_TRANSLATOR_TYPES_P4_
#define _DTA_TRANSLATOR_TYPES_P4_

/* what the egress does with a packet (bridge kind) and which region a write goes to (region kind) */
const bit<8> KIND_FORWARD    = 0;
const bit<8> KIND_KEYWRITE   = 1;
const bit<8> KIND_APPEND     = 2;
const bit<8> KIND_KEYINC     = 3;
const bit<8> KIND_POSTCARD   = 4;
const bit<8> KIND_RESYNC     = 8;
const bit<8> KIND_APPEND_HDR = 9;   /* region kind only: the Append list's header (total_entries_written) */

/* drop / event counter indices */
const bit<8> CNT_BAD_REDUNDANCY = 1;
const bit<8> CNT_UNKNOWN_LIST   = 2;
const bit<8> CNT_UNSUPPORTED_OP = 3;
const bit<8> CNT_SEQ_DUPLICATE  = 4;
const bit<8> CNT_SEQ_GAP_NACKED = 5;
const bit<8> CNT_ROCE_ACK       = 6;
const bit<8> CNT_ROCE_NAK_SEQ   = 7;
const bit<8> CNT_ROCE_NAK_OTHER = 8;
const bit<8> CNT_ROCE_RNR       = 9;
const bit<8> CNT_ROCE_ATOMIC_ACK = 10;
const bit<8> CNT_ROCE_CNP       = 11;
const bit<8> CNT_APPEND_BUFFERED = 12;
const bit<8> CNT_POSTCARD_CACHED = 13;
const bit<8> CNT_NO_REGION      = 14;

header tr_bridge_h {
    bit<8>  kind;
    bit<8>  collector_idx;
    bit<16> list_idx;
    bit<16> qp_idx;
    bit<32> key;      /* Key-Write / Key-Increment key, or the postcard chunk's flow key */
    bit<32> slot;     /* Append: head (entry index) of this batch */
    bit<32> batches;  /* Append: batches written to the list so far, this one included */
}

/* Key-Write entry prefix: crc32(key_le) as 4 little-endian bytes */
header kw_checksum_h {
    bit<32> checksum;
}

/* Append: one RDMA WRITE carries APPEND_BATCH entries */
header append_batch_h {
    bit<32> e0;
#if APPEND_BATCH >= 2
    bit<32> e1;
#endif
#if APPEND_BATCH >= 4
    bit<32> e2;
    bit<32> e3;
#endif
#if APPEND_BATCH >= 8
    bit<32> e4;
    bit<32> e5;
    bit<32> e6;
    bit<32> e7;
#endif
#if APPEND_BATCH >= 16
    bit<32> e8;
    bit<32> e9;
    bit<32> e10;
    bit<32> e11;
    bit<32> e12;
    bit<32> e13;
    bit<32> e14;
    bit<32> e15;
#endif
}

/* Append list header: total_entries_written, u64 little-endian */
header append_total_h {
    bit<64> total_le;
}

/* Postcarding chunk: 8 cells of 4 bytes (raw values from the ingress cache, encoded by the egress) */
header pc_chunk_h {
    bit<32> c0;
    bit<32> c1;
    bit<32> c2;
    bit<32> c3;
    bit<32> c4;
    bit<32> c5;
    bit<32> c6;
    bit<32> c7;
}

struct tr_headers_t {
    tr_bridge_h            bridge;
    ethernet_h             ethernet;
    ipv4_h                 ipv4;
    udp_h                  udp;
    bth_h                  bth;
    reth_h                 reth;
    atomic_eth_h           atomic_eth;
    aeth_h                 aeth;
    DTA_BASE_T             dta_base;
    dta_nack_h             dta_nack;
    dta_keywrite_h         dta_keywrite;
    kw_checksum_h          kw_checksum;
    dta_keywrite_data_h    dta_keywrite_data;
    dta_keyincrement_h     dta_keyincrement;
    dta_append_h           dta_append;
    dta_append_data_h      dta_append_data;
    append_batch_h         append_batch;
    append_total_h         append_total;
    dta_postcard_h         dta_postcard;
    dta_postcard_pathlen_h dta_postcard_pathlen;
    pc_chunk_h             pc_chunk;
    icrc_h                 icrc;
}

struct nak_digest_t {
    bit<24> dest_qp;
    bit<8>  syndrome;
    bit<24> psn;
}

struct tr_ig_md_t {
    bit<8>     collector_idx;
    PortId_t   collector_port;
    bit<16>    mcast_append_hdr;
    bit<16>    mcast_postcard;
    bit<8>     redundancy;
    bit<8>     seq_last;
    bit<8>     seq_behind;
    bit<1>     csum_update;
    bit<1>     send_digest;
    bit<1>     handled;
    bit<1>     drop;
    bit<8>     count_reason;
    /* append */
    bit<16>    list_idx;
    bit<32>    last_head;
    bit<32>    append_count;
    bit<32>    append_data;
    /* postcard */
    bit<32>    pc_key;
    bit<8>     pc_hop;
    bit<32>    pc_value;
    bit<8>     pc_target_m1;
    bit<32>    pc_old_key;
    bit<8>     pc_flag;
    bit<2>     pc_mode;
}

struct tr_eg_md_t {
    bit<8>  region_kind;
    bit<1>  csum_update;
    bit<16> qp_idx;
    bit<32> slot;
    bit<32> slot_mask;
    bit<64> base;
    bit<64> offset;
    bit<32> icrc_k;
    bit<32> icrc_raw;
    bit<32> psn;
    bit<32> pc_h0;
    bit<32> pc_h1;
    bit<32> pc_h2;
    bit<32> pc_h3;
    bit<32> pc_h4;
    bit<32> pc_h5;
    bit<32> pc_h6;
    bit<32> pc_h7;
}

#endif
