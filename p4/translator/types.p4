/* dta translator: header struct, bridge header and metadata (program-local). */
#ifndef _DTA_TRANSLATOR_TYPES_P4_
#define _DTA_TRANSLATOR_TYPES_P4_

/* what the egress does with a packet (bridge kind) and which region a write goes to (region kind) */
const bit<8> KIND_FORWARD    = 0;
const bit<8> KIND_KEYWRITE   = 1;
const bit<8> KIND_APPEND     = 2;
const bit<8> KIND_KEYINC     = 3;
const bit<8> KIND_POSTCARD   = 4;
@noWarn("unused") const bit<8> KIND_SKETCH = 5;   /* region kind of a sketch (list id = sketch id) and bridge kind of a column write */
const bit<8> KIND_RESYNC     = 8;

/* drop / event counter indices */
const bit<8> CNT_BAD_REDUNDANCY = 1;
const bit<8> CNT_NO_REGION      = 2;   /* no region for (collector, kind, list): e.g. an unknown Append list */
const bit<8> CNT_UNSUPPORTED_OP = 3;
@noWarn("unused") const bit<8> CNT_SEQ_DUPLICATE  = 4;   /* seq form only */
@noWarn("unused") const bit<8> CNT_SEQ_GAP_NACKED = 5;   /* seq form only */
const bit<8> CNT_ROCE_ACK       = 6;
const bit<8> CNT_ROCE_NAK_SEQ   = 7;
const bit<8> CNT_ROCE_NAK_OTHER = 8;
const bit<8> CNT_ROCE_RNR       = 9;
const bit<8> CNT_ROCE_ATOMIC_ACK = 10;
const bit<8> CNT_ROCE_CNP       = 11;
@noWarn("unused") const bit<8> CNT_APPEND_BUFFERED = 12;   /* with Append (the default build) */
@noWarn("unused") const bit<8> CNT_POSTCARD_CACHED = 13;   /* with -DTR_POSTCARDING only */
@noWarn("unused") const bit<8> CNT_SKETCH_MERGED   = 14;   /* with -DTR_SKETCH only: merged, column not complete */
@noWarn("unused") const bit<8> CNT_SKETCH_DUPLICATE = 15;  /* a column this reporter already sent */
@noWarn("unused") const bit<8> CNT_SKETCH_GAP_NACKED = 16; /* a reporter skipped columns: NACKed */
@noWarn("unused") const bit<8> CNT_SKETCH_BAD_REPORTER = 18; /* with -DTR_SKETCH: reporter id without a slot */
@noWarn("unused") const bit<8> CNT_BAD_HOP = 17;           /* with -DTR_POSTCARDING: hop or path length out of range */

/* ingress -> egress, in front of every packet. The ingress builds the whole RoCE frame (every header valid
 * in the egress comes from the egress parser); the egress adds only what differs per copy (egress_rid): the
 * slot or chunk address, the PSN, AckReq, the postcard cells' encoding and the iCRC. */
header tr_bridge_h {
    bit<8>  kind;
    bit<8>  qp_idx;      /* QP index of the frame (PSN register); for KIND_RESYNC the QP to resync */
    bit<32> key;         /* slot hash input: Key-Write / Key-Increment key, or the chunk's flow key */
    bit<32> mask;        /* slot mask S - 1 (Append: unused) */
    bit<32> offset;      /* Append: byte offset of this batch in the list's entries (head * 4) */
    bit<32> total;       /* Append: total_entries_written after this batch, bits 31..0 */
    bit<8>  total_hi;    /* and bits 39..32 (the batch counter is 32 bits, so the total stays below 2^36) */
    bit<32> icrc_k_le;   /* iCRC prefix constant K of (QP, region kind), byte-swapped */
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

/* Postcarding chunk: 8 cells of 4 bytes (raw values from the ingress cache; the egress encodes cell i as
 * hopsum_i(key) XOR g(v), a big-endian u32, as dta-protocol's PostcardGeometry::encode_chunk) */
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

/* Sketch-Merge: one column of SKETCH_ROWS counters (big-endian u32): the report's counters, replaced by the
 * merged column when the report completes it (-DTR_SKETCH) */
header sk_column_h {
    bit<32> c0;
#if SKETCH_ROWS >= 2
    bit<32> c1;
#endif
#if SKETCH_ROWS >= 4
    bit<32> c2;
    bit<32> c3;
#endif
#if SKETCH_ROWS >= 8
    bit<32> c4;
    bit<32> c5;
    bit<32> c6;
    bit<32> c7;
#endif
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
    dta_postcard_h         dta_postcard;
    dta_postcard_pathlen_h dta_postcard_pathlen;
    pc_chunk_h             pc_chunk;
#ifdef TR_SKETCH
    dta_nack_h             dta_nack_sk;   /* the Sketch-Merge gap NACK (its own instance: see TrSketchMerge) */
    dta_sketch_h           dta_sketch;
    sk_column_h            sk_column;
#endif
    icrc_h                 icrc;
}

struct nak_digest_t {
    bit<24> dest_qp;
    bit<8>  syndrome;
    bit<24> psn;
}

struct tr_ig_md_t {
    bit<8>     kind;          /* set by the parser from the report's opcode */
    bit<32>    list_id;       /* Append list id (0 for the other kinds), set by the parser */
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
    bit<32>    batches;
    /* postcard */
    bit<32>    pc_key;
    bit<8>     pc_hop;
    bit<32>    pc_gv;          /* g(v) of the postcard's value */
    bit<8>     pc_target_m1;   /* path length - 1 */
    bit<14>    pc_idx;         /* cache slot */
    bit<32>    pc_old_key;
    bit<8>     pc_mode;
    bit<8>     pc_path_len;    /* from the report (0x06) or B (0x04) */
    bit<1>     pc_ok;          /* 1 <= hop <= path length <= B */
    /* sketch (-DTR_SKETCH) */
    bit<16>    sk_col_idx;      /* column's index in the row registers: base of the sketch + column */
    bit<16>    sk_rep_idx;      /* (sketch, reporter) slot of the order check */
    bit<1>     sk_rep_ok;       /* the reporter has a slot (TrSketchReporter hit) */
    bit<16>    sk_last_col;     /* columns - 1 */
    bit<16>    sk_reporters_m1; /* reporters - 1 */
    bit<8>     sk_order;        /* order check predicate (TrSketchMerge) */
    bit<16>    sk_last;         /* the reporter's last column merged in order, before this report */
    bit<16>    sk_behind;       /* column - sk_last */
    bit<8>     sk_nack_seq;     /* low byte of sk_last, for the NACK */
    bit<16>    sk_left;         /* contributions still missing for the column after this one (0: complete) */
}

struct tr_eg_md_t {
    bit<32> psn;
    bit<32> off32;
    bit<64> offset;
    bit<32> icrc;
}

#endif
