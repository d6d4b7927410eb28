/*
 * dta translator for Tofino-1 (TNA, P4_16).
 *
 * Turns DTA reports (DESIGN.md section 2) into RoCEv2 RC frames (section 4) that fill the collector memory of
 * section 3, the same memory the Rust translator fills:
 *   Key-Write      N copies via a multicast group per N (RIDs 0..N-1), slot crc32(key_le ++ n) & (S-1),
 *                  entry = crc32(key_le) LE ++ data, one RDMA WRITE per copy.
 *   Key-Increment  N copies, RDMA FETCH_ADD on the Key-Increment region's u64 at base + 8*slot.
 *   Append         per-list batches of APPEND_BATCH entries, head with a correct wrap, list header
 *                  (total_entries_written) every 2^APPEND_HDR_EVERY_LOG2 batches.
 *   Postcarding    cache per flow, chunk written on path completion (B hops or path_len) and on eviction to
 *                  the evicted flow's chunks, cells hopsum_i(key) XOR g(v).
 *   (Sketch-Merge: not in this program, see p4/README.md.)
 * Sequence tracking per reporter with DTA NACKs (seq form), PSN per QP in registers, AckReq cadence,
 * resync on a PSN-sequence NAK, iCRC over the whole frame. Other traffic is forwarded.
 *
 * Compile: tofino-compile [-DDTA_COMPACT] [-DKW_DATA_BYTES=4|12|28] [-DAPPEND_BATCH=1..16]
 *          [-DPOSTCARD_HOPS=1..8] dta_translator.p4
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
#include "../include/control/tr_kv_copies.p4"
#include "../include/control/tr_append_batch.p4"
#include "../include/control/tr_postcard_cache.p4"
#include "../include/control/tr_roce_response.p4"
#include "../include/control/tr_rdma_craft.p4"
#include "../include/control/tr_postcard_encode.p4"
#include "../include/control/tr_icrc.p4"

control TrIngress(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    TrForward() forward;
    TrSeqNack() seq_nack;
    TrKvCopies() kv_copies;
    TrAppendBatch() append_batch;
    TrPostcardCache() postcard_cache;
    TrRoceResponse() roce_response;
    Counter<bit<32>, bit<8>>(32, CounterType_t.PACKETS) events;

    /* reports to a collector we serve; the others are forwarded */
    action collector(bit<8> collector_idx, PortId_t port, MulticastGroupId_t mcast_append_hdr,
                     MulticastGroupId_t mcast_postcard) {
        ig_md.collector_idx = collector_idx;
        ig_md.collector_port = port;
        ig_md.mcast_append_hdr = mcast_append_hdr;
        ig_md.mcast_postcard = mcast_postcard;
        hdr.bridge.collector_idx = collector_idx;
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
        hdr.bridge.collector_idx = 0;
        hdr.bridge.list_idx = 0;
        hdr.bridge.qp_idx = 0;
        hdr.bridge.key = 0;
        hdr.bridge.slot = 0;
        hdr.bridge.batches = 0;

        if (hdr.dta_base.isValid()) {
            if (tbl_collector.apply().hit) {
                seq_nack.apply(hdr, ig_md, ig_intr_md, ig_tm_md);
                if (ig_md.handled == 0) {
                    if (hdr.dta_keywrite.isValid() || hdr.dta_keyincrement.isValid()) {
                        kv_copies.apply(hdr, ig_md, ig_tm_md);
                    } else if (hdr.dta_append.isValid()) {
                        append_batch.apply(hdr, ig_md, ig_tm_md);
                    } else if (hdr.dta_postcard.isValid() || hdr.dta_postcard_pathlen.isValid()) {
                        postcard_cache.apply(hdr, ig_md, ig_tm_md);
                    } else {
                        ig_md.handled = 1;
                        ig_md.drop = 1;
                        ig_md.count_reason = CNT_UNSUPPORTED_OP;
                    }
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

control TrEgress(inout tr_headers_t hdr, inout tr_eg_md_t eg_md,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    TrRdmaCraft() craft;
    TrPostcardEncode() postcard_encode;
    TrIcrc() icrc;
    apply {
        if (hdr.bridge.kind != KIND_FORWARD) {
            craft.apply(hdr, eg_md, eg_intr_md, eg_dprsr_md);
            if (hdr.bridge.kind != KIND_RESYNC) {
#ifndef TR_NO_POSTCARD_ENCODE
                if (hdr.pc_chunk.isValid()) {
                    postcard_encode.apply(hdr, eg_md);
                }
#endif
                icrc.apply(hdr, eg_md);
            }
        }
    }
}

Pipeline(TrIngressParser(), TrIngress(), TrIngressDeparser(),
         TrEgressParser(), TrEgress(), TrEgressDeparser()) pipe;
Switch(pipe) main;
