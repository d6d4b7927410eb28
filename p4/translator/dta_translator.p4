/*
 * dta translator for Tofino-1 (TNA, P4_16).
 *
 * Turns DTA reports (DESIGN.md section 2) into RoCEv2 RC frames (section 4) that fill the collector memory of
 * section 3, the same memory the Rust translator fills:
 *   Key-Write      N copies (N <= TR_N_MAX = 8) via a multicast group per N (RIDs 0..N-1), slot
 *                  placement_hash(key, n) & (S-1) with copy n's own CRC polynomial (define.p4),
 *                  entry = crc32(key_le) LE ++ data, one RDMA WRITE per copy.
 *   Key-Increment  N copies, RDMA FETCH_ADD on the Key-Increment region's u64 at base + 8*slot.
 *   Append         per-list batches of APPEND_BATCH entries, head with a correct wrap, list header
 *                  (total_entries_written) every 2^APPEND_HDR_EVERY_LOG2 batches.
 *                  (default build only: the profiles below leave Append out to fit 12 stages, p4/README.md)
 *   Postcarding    profile -DTR_POSTCARDING: cache per flow slot, chunk written on path completion (B hops or
 *                  path_len) and on eviction to the evicted flow's chunks, cells hopsum_i(key) XOR g(v) as
 *                  big-endian u32, N chunk copies at the per-copy placement.
 *   Sketch-Merge   profile -DTR_SKETCH: per-reporter ordered column merge (sum or max) in registers, each
 *                  completed column one RDMA WRITE of SKETCH_ROWS big-endian u32; gaps NACKed.
 * Sequence tracking per reporter with DTA NACKs (seq form), PSN per QP in registers, AckReq cadence,
 * resync on a PSN-sequence NAK, iCRC over the whole frame. Other traffic is forwarded.
 *
 * The ingress builds the whole frame; the egress fills in the per-copy slot address, PSN, AckReq and iCRC.
 * Compile: tofino-compile [-DDTA_COMPACT] [-DKW_DATA_BYTES=4|12|28] [-DAPPEND_BATCH=1..16]
 *          [-DTR_POSTCARDING [-DPOSTCARD_HOPS=1..8] | -DTR_SKETCH [-DSKETCH_ROWS=1|2|4|8]] dta_translator.p4
 */
#include <core.p4>
#include <tna.p4>

#include "../include/define.p4"
#include "../include/header.p4"
#include "../include/parser.p4"
#include "types.p4"
#include "parser.p4"
#include "../include/control/tr_forward.p4"
#include "../include/control/tr_seq_nack.p4"
#include "../include/control/tr_rdma_build.p4"
#include "../include/control/tr_kv_copies.p4"
#ifdef TR_APPEND
#include "../include/control/tr_append_batch.p4"
#endif
#ifdef TR_POSTCARDING
#include "../include/control/tr_postcard_cache.p4"
#endif
#ifdef TR_SKETCH
#include "../include/control/tr_sketch_merge.p4"
#endif
#include "../include/control/tr_roce_response.p4"
#include "../include/control/tr_rdma_craft.p4"
#ifdef TR_POSTCARDING
#include "../include/control/tr_postcard_encode.p4"
#endif
#include "../include/control/tr_icrc.p4"

control TrIngress(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    TrForward() forward;
    TrSeqNack() seq_nack;
    TrRdmaBuild() rdma_build;
    TrKvCopies() kv_copies;
#ifdef TR_APPEND
    TrAppendBatch() append_batch;
#endif
#ifdef TR_POSTCARDING
    TrPostcardPrep() postcard_prep;
    TrPostcardCache() postcard_cache;
#endif
#ifdef TR_SKETCH
    TrSketchReporter() sketch_reporter;
    TrSketchMerge() sketch_merge;
#endif
    TrRoceResponse() roce_response;
    Counter<bit<32>, bit<8>>(32, CounterType_t.PACKETS) events;

    /* reports to a collector we serve; the others are forwarded */
    action collector(bit<8> collector_idx, PortId_t port, MulticastGroupId_t mcast_append_hdr,
                     MulticastGroupId_t mcast_postcard) {
        ig_md.collector_idx = collector_idx;
        ig_md.collector_port = port;
        ig_md.mcast_append_hdr = mcast_append_hdr;
        ig_md.mcast_postcard = mcast_postcard;
    }
    table tbl_collector {
        key = { hdr.ipv4.dst_addr: exact; }
        actions = { collector; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        hdr.bridge.setValid();
        hdr.bridge.kind = KIND_FORWARD;
        hdr.bridge.qp_idx = 0;
        hdr.bridge.key = 0;
        hdr.bridge.mask = 0;
        hdr.bridge.offset = 0;
        hdr.bridge.total = 0;
        hdr.bridge.total_hi = 0;
        hdr.bridge.icrc_k_le = 0;

#ifdef TR_POSTCARDING
        postcard_prep.apply(hdr, ig_md);
#endif
        if (hdr.dta_base.isValid()) {
            if (tbl_collector.apply().hit) {
#ifdef TR_SKETCH
                if (hdr.dta_sketch.isValid()) {
                    sketch_reporter.apply(hdr, ig_md);
                }
#endif
                seq_nack.apply(hdr, ig_md, ig_intr_md, ig_tm_md);
                if (ig_md.handled == 0) {
                    if (ig_md.kind == KIND_FORWARD) {
                        /* Sketch-Merge (not in this program) or an unknown opcode */
                        ig_md.handled = 1;
                        ig_md.drop = 1;
                        ig_md.count_reason = CNT_UNSUPPORTED_OP;
                    } else {
                        rdma_build.apply(hdr, ig_md);
                    }
                }
                if (ig_md.handled == 0) {
                    if (ig_md.kind == KIND_KEYWRITE || ig_md.kind == KIND_KEYINC) {
                        kv_copies.apply(hdr, ig_md, ig_tm_md);
                    }
#ifdef TR_APPEND
                    else if (ig_md.kind == KIND_APPEND) {
                        append_batch.apply(hdr, ig_md, ig_tm_md);
                    }
#endif
#ifdef TR_POSTCARDING
                    else if (ig_md.kind == KIND_POSTCARD) {
                        if (ig_md.pc_ok == 1) {
                            postcard_cache.apply(hdr, ig_md, ig_tm_md);
                        } else {
                            ig_md.handled = 1;
                            ig_md.drop = 1;
                            ig_md.count_reason = CNT_BAD_HOP;
                        }
                    }
#endif
#ifdef TR_SKETCH
                    else if (ig_md.kind == KIND_SKETCH) {
                        if (ig_md.sk_rep_ok == 1) {
                            sketch_merge.apply(hdr, ig_md, ig_intr_md, ig_tm_md);
                        } else {
                            ig_md.handled = 1;
                            ig_md.drop = 1;
                            ig_md.count_reason = CNT_SKETCH_BAD_REPORTER;
                        }
                    }
#endif
                }
            }
        } else if (hdr.bth.isValid()) {
            roce_response.apply(hdr, ig_md, ig_tm_md);
        }
        if (ig_md.handled == 0) {
            forward.apply(ig_intr_md, ig_dprsr_md, ig_tm_md);
        }
        if (ig_md.drop == 1) {
            ig_dprsr_md.drop_ctl = 1;
        }
        events.count(ig_md.count_reason);
    }
}

#ifdef TR_POSTCARDING
/* The postcard cells are XORed with a hash output in place: that needs each cell whole in one 32-bit
 * container (in 8/16-bit pieces the hash bits do not line up with the cell's). */
@pa_container_size("egress", "hdr.pc_chunk.c0", 32)
@pa_container_size("egress", "hdr.pc_chunk.c1", 32)
@pa_container_size("egress", "hdr.pc_chunk.c2", 32)
@pa_container_size("egress", "hdr.pc_chunk.c3", 32)
@pa_container_size("egress", "hdr.pc_chunk.c4", 32)
@pa_container_size("egress", "hdr.pc_chunk.c5", 32)
@pa_container_size("egress", "hdr.pc_chunk.c6", 32)
@pa_container_size("egress", "hdr.pc_chunk.c7", 32)
#endif
control TrEgress(inout tr_headers_t hdr, inout tr_eg_md_t eg_md,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    TrRdmaCraft() craft;
#ifdef TR_POSTCARDING
    TrPostcardEncode() postcard_encode;
#endif
    TrIcrc() icrc;
    apply {
        if (hdr.bridge.kind != KIND_FORWARD) {
            craft.apply(hdr, eg_md, eg_intr_md, eg_dprsr_md);
#ifdef TR_POSTCARDING
            if (hdr.bridge.kind == KIND_POSTCARD) {
                postcard_encode.apply(hdr, eg_md);
            }
#endif
            if (hdr.bridge.kind != KIND_RESYNC) {
                icrc.apply(hdr, eg_md);
            }
        }
    }
}

Pipeline(TrIngressParser(), TrIngress(), TrIngressDeparser(),
         TrEgressParser(), TrEgress(), TrEgressDeparser()) pipe;
Switch(pipe) main;
