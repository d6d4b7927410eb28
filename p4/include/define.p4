/*
 * dta: constants and compile-time configuration shared by the reporter and the translator.
 * Wire constants follow ../../shared/DESIGN.md sections 2 and 4 (the Rust crate dta-protocol holds the same).
 */
#ifndef _DTA_DEFINE_P4_
#define _DTA_DEFINE_P4_

/* ---- wire constants (compared with dta-protocol by p4/tests) ---- */
@noWarn("unused") const bit<16> ETHERTYPE_IPV4      = 0x0800;
@noWarn("unused") const bit<8>  IP_PROTO_TCP        = 6;
@noWarn("unused") const bit<8>  IP_PROTO_UDP        = 17;
@noWarn("unused") const bit<16> DTA_UDP_PORT        = 40040;
@noWarn("unused") const bit<16> DTA_NACK_UDP_PORT   = 40044;
@noWarn("unused") const bit<16> ROCEV2_UDP_PORT     = 4791;

@noWarn("unused") const bit<8> DTA_OP_KEYWRITE         = 0x01;
@noWarn("unused") const bit<8> DTA_OP_APPEND           = 0x02;
@noWarn("unused") const bit<8> DTA_OP_KEYINCREMENT     = 0x03;
@noWarn("unused") const bit<8> DTA_OP_POSTCARD         = 0x04;
@noWarn("unused") const bit<8> DTA_OP_SKETCH           = 0x05;
@noWarn("unused") const bit<8> DTA_OP_POSTCARD_PATHLEN = 0x06;

/* redundancy is 1..=N_MAX; anything else is dropped and counted */
@noWarn("unused") const bit<8> DTA_N_MAX = 8;

/* RoCEv2 (InfiniBand RC) */
@noWarn("unused") const bit<8>  BTH_OP_RC_WRITE_ONLY = 0x0A;
@noWarn("unused") const bit<8>  BTH_OP_RC_FETCH_ADD  = 0x14;
@noWarn("unused") const bit<8>  BTH_OP_RC_ACK        = 0x11;
@noWarn("unused") const bit<8>  BTH_OP_RC_ATOMIC_ACK = 0x12;
@noWarn("unused") const bit<8>  BTH_OP_CNP           = 0x81;
@noWarn("unused") const bit<16> BTH_PKEY_DEFAULT     = 0xFFFF;
@noWarn("unused") const bit<8>  AETH_NAK_PSN_SEQ     = 0x60;   /* 011_00000: PSN sequence error */

/* ---- compile-time configuration (-D on the compiler command line) ---- */

/* Key-Write data size in bytes after the key: 4, 12 or 28 (entry = 4 + this) */
#ifndef KW_DATA_BYTES
#define KW_DATA_BYTES 4
#endif
#if KW_DATA_BYTES == 4
#define KW_ENTRY_SHIFT 3
#elif KW_DATA_BYTES == 12
#define KW_ENTRY_SHIFT 4
#elif KW_DATA_BYTES == 28
#define KW_ENTRY_SHIFT 5
#else
#error "KW_DATA_BYTES must be 4, 12 or 28"
#endif
#define KW_DATA_BITS (KW_DATA_BYTES * 8)

/* Append: entry size is fixed at 4 bytes; entries per RDMA WRITE (batch) is 1, 2, 4, 8 or 16 */
#ifndef APPEND_BATCH
#define APPEND_BATCH 4
#endif
#if APPEND_BATCH == 1
#define APPEND_BATCH_LOG2 0
#elif APPEND_BATCH == 2
#define APPEND_BATCH_LOG2 1
#elif APPEND_BATCH == 4
#define APPEND_BATCH_LOG2 2
#elif APPEND_BATCH == 8
#define APPEND_BATCH_LOG2 3
#elif APPEND_BATCH == 16
#define APPEND_BATCH_LOG2 4
#else
#error "APPEND_BATCH must be 1, 2, 4, 8 or 16"
#endif
#define APPEND_ENTRY_BYTES 4
#define APPEND_HEADER_BYTES 64
/* header write (total_entries_written) every 2^APPEND_HDR_EVERY_LOG2 batches (contract: at least every 32) */
#ifndef APPEND_HDR_EVERY_LOG2
#define APPEND_HDR_EVERY_LOG2 5
#endif

/* Postcarding: path length B (hops) and chunk stride 32 bytes (8 cells) */
#ifndef POSTCARD_HOPS
#define POSTCARD_HOPS 5
#endif
#if POSTCARD_HOPS < 1 || POSTCARD_HOPS > 8
#error "POSTCARD_HOPS must be 1..8"
#endif
#define POSTCARD_CHUNK_BYTES 32
#ifndef POSTCARD_CACHE_SIZE
#define POSTCARD_CACHE_SIZE 16384
#endif
@noWarn("unused") const bit<32> POSTCARD_BLANK = 0xFFFFFFFF;

/* Translator build profiles. The default build serves Key-Write, Key-Increment and Append; -DTR_POSTCARDING
 * adds Postcarding, -DTR_SKETCH adds Sketch-Merge. Both together take 13 ingress and 13 egress stages (more
 * than Tofino-1's 12, p4/README.md), so they are separate profiles. -DTR_NO_APPEND leaves Append out (its
 * reports are then dropped and counted, CNT_UNSUPPORTED_OP), which frees stages, e.g. for POSTCARD_HOPS 8. */
#if defined(TR_POSTCARDING) && defined(TR_SKETCH)
#error "TR_POSTCARDING and TR_SKETCH together need 13 stages: build one profile per translator"
#endif
#ifndef TR_NO_APPEND
#define TR_APPEND
#endif

/* Sketch-Merge profile (-DTR_SKETCH): counters per column (the report's rows must equal this; one stateful ALU
 * per row), counters per row register (all sketches' columns), (sketch, reporter) slots of the order check */
#ifndef SKETCH_ROWS
#define SKETCH_ROWS 4
#endif
#if SKETCH_ROWS == 1
#define SKETCH_COLUMN_SHIFT 2
#elif SKETCH_ROWS == 2
#define SKETCH_COLUMN_SHIFT 3
#elif SKETCH_ROWS == 4
#define SKETCH_COLUMN_SHIFT 4
#elif SKETCH_ROWS == 8
#define SKETCH_COLUMN_SHIFT 5
#else
#error "SKETCH_ROWS must be 1, 2, 4 or 8"
#endif
#ifndef SKETCH_COLUMNS
#define SKETCH_COLUMNS 32768
#endif
#ifndef SKETCH_REPORTER_SLOTS
#define SKETCH_REPORTER_SLOTS 4096
#endif

/* AckReq on every 2^ACK_EVERY_LOG2-th packet of a QP (contract default ack_every = 16) */
#ifndef ACK_EVERY_LOG2
#define ACK_EVERY_LOG2 4
#endif

/* sizes of the state tables */
#ifndef MAX_QPS
#define MAX_QPS 256
#endif
#ifndef MAX_LISTS
#define MAX_LISTS 1024
#endif
#ifndef MAX_REPORTERS
#define MAX_REPORTERS 4096
#endif

/* ---- base header form: seq (default) or compact (-DDTA_COMPACT) ---- */
#ifdef DTA_COMPACT
#define DTA_BASE_T dta_base_compact_h
#define DTA_BASE_BYTES 2
#else
#define DTA_BASE_T dta_base_seq_h
#define DTA_BASE_BYTES 3
#endif

/* hash polynomials (DESIGN.md sections 3 and 9) */
#define CRC32_POLY  32w0x04C11DB7
#define CRC32C_POLY 32w0x1EDC6F41

/* copies per Key-Write / Key-Increment / Postcarding report the translator supports (4 or 8) */
#ifndef TR_N_MAX
#define TR_N_MAX 8
#endif
#if TR_N_MAX != 4 && TR_N_MAX != 8
#error "TR_N_MAX must be 4 or 8"
#endif

/* placement of copy n (Key-Write slot, Key-Increment counter, Postcarding chunk): CRC-32 with its own
 * polynomial Q_n (reflected, init and xorout 0xFFFFFFFF) over key_le ++ n:8, dta-protocol's
 * PLACEMENT_POLYNOMIALS (protocol/src/hash.rs). Copy 0 is zlib's CRC-32. One polynomial per copy: CRC is
 * linear, so with a shared one a key's copies sit at key-independent XOR offsets and are overwritten together. */
#define PLACEMENT_POLY_0 32w0x04C11DB7
#define PLACEMENT_POLY_1 32w0xA833982B
#define PLACEMENT_POLY_2 32w0xD419CC15
#define PLACEMENT_POLY_3 32w0xBA0DC66B
#define PLACEMENT_POLY_4 32w0xB39E201D
#define PLACEMENT_POLY_5 32w0x725243AB
#define PLACEMENT_POLY_6 32w0xD8046B21
#define PLACEMENT_POLY_7 32w0x63A4CD11

#endif
