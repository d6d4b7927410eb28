/* dta translator (egress): the per-copy fields of a RoCEv2 frame the ingress built (TrRdmaBuild).
 *   address  Key-Write / Key-Increment slot and Postcarding chunk of copy n = egress_rid:
 *            placement_hash(key, n) & (S - 1), times the entry size (8 << k, 8, 32 bytes), added to the base VA,
 *            where placement_hash(key, n) = CRC-32 with copy n's own polynomial Q_n (define.p4
 *            PLACEMENT_POLY_n, dta-protocol's PLACEMENT_POLYNOMIALS) over key_le ++ n:8; copies 0..TR_N_MAX-1;
 *            Append: copy 0 adds the batch's offset, copy 1 (every 2^APPEND_HDR_EVERY_LOG2-th batch) stays at
 *            the list's header and carries total_entries_written (u64 little-endian) instead of the entries.
 *   PSN      next PSN of the QP from its register (the egress sees the copies in wire order, so PSNs are
 *            sent in order); a PSN-sequence NAK (KIND_RESYNC) sets it to the NAK's PSN.
 *   AckReq   on every 2^ACK_EVERY_LOG2-th PSN. */
control TrRdmaCraft(inout tr_headers_t hdr, inout tr_eg_md_t eg_md,
                    in egress_intrinsic_metadata_t eg_intr_md,
                    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
#ifdef TR_APPEND
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) total_le;
#endif

    Register<bit<32>, bit<8>>(MAX_QPS, 0) reg_psn;
    RegisterAction<bit<32>, bit<8>, bit<32>>(reg_psn) next_psn = {
        void apply(inout bit<32> psn, out bit<32> cur) {
            cur = psn;
            psn = psn + 1;   /* only the low 24 bits go on the wire, so it wraps at 2^24 */
        }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(reg_psn) resync_psn = {
        void apply(inout bit<32> psn) {
            psn = (bit<32>)hdr.bth.psn;
        }
    };

    /* one Hash per copy's polynomial (define.p4 PLACEMENT_POLY_n); each action masks its result to the slot
     * count. Reflected in and out, init and xorout 0xFFFFFFFF, as dta-protocol's placement_hash. */
#define PLACEMENT_HASH(i) \
    CRCPolynomial<bit<32>>(PLACEMENT_POLY_##i, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) q##i; \
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, q##i) placement_hash_##i; \
    action placement_##i() { \
        eg_md.off32 = placement_hash_##i.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], \
                                              hdr.bridge.key[23:16], hdr.bridge.key[31:24], \
                                              eg_intr_md.egress_rid[7:0]}) & hdr.bridge.mask; \
    }
    PLACEMENT_HASH(0)
    PLACEMENT_HASH(1)
    PLACEMENT_HASH(2)
    PLACEMENT_HASH(3)
#if TR_N_MAX > 4
    PLACEMENT_HASH(4)
    PLACEMENT_HASH(5)
    PLACEMENT_HASH(6)
    PLACEMENT_HASH(7)
#endif
#undef PLACEMENT_HASH


#ifdef TR_APPEND
    action append_header() {
        hdr.append_batch.e0 = total_le.get({hdr.bridge.total[7:0], hdr.bridge.total[15:8],
                                            hdr.bridge.total[23:16], hdr.bridge.total[31:24]});
#if APPEND_BATCH >= 2
        hdr.append_batch.e1 = hdr.bridge.total_hi ++ 24w0;
#endif
#if APPEND_BATCH >= 4
        hdr.append_batch.e2 = 0;
        hdr.append_batch.e3 = 0;
#endif
#if APPEND_BATCH >= 8
        hdr.append_batch.e4 = 0;
        hdr.append_batch.e5 = 0;
        hdr.append_batch.e6 = 0;
        hdr.append_batch.e7 = 0;
#endif
#if APPEND_BATCH >= 16
        hdr.append_batch.e8 = 0;
        hdr.append_batch.e9 = 0;
        hdr.append_batch.e10 = 0;
        hdr.append_batch.e11 = 0;
        hdr.append_batch.e12 = 0;
        hdr.append_batch.e13 = 0;
        hdr.append_batch.e14 = 0;
        hdr.append_batch.e15 = 0;
#endif
    }

#endif

    apply {
        if (hdr.bridge.kind == KIND_RESYNC) {
            resync_psn.execute(hdr.bridge.qp_idx);
            eg_dprsr_md.drop_ctl = 1;
        } else {
            eg_md.psn = next_psn.execute(hdr.bridge.qp_idx);
#ifdef TR_APPEND
            if (hdr.bridge.kind == KIND_APPEND) {
                eg_md.off32 = hdr.bridge.offset;
            } else
#endif
#ifdef TR_SKETCH
            if (hdr.bridge.kind == KIND_SKETCH) {
                eg_md.off32 = hdr.bridge.offset;   /* the column's byte offset, from the ingress */
            } else
#endif
            {
                /* copy n = egress_rid hashes with Q_n. Every branch writes the same off32, so one 32-bit result
                 * sits in the PHV. (One table whose actions call the different hashes does not compile: bf-p4c
                 * does not overlay the actions' hash outputs on the table's 32-bit immediate pathway, 8 x 32
                 * bits.) bf-p4c places the eight branches in the first egress stages, at most three 32-bit
                 * hash results per stage. egress_rid is 0..N-1 < TR_N_MAX (the multicast groups of TrKvCopies). */
                if (eg_intr_md.egress_rid == 0) {
                    placement_0();
                } else if (eg_intr_md.egress_rid == 1) {
                    placement_1();
                } else if (eg_intr_md.egress_rid == 2) {
                    placement_2();
#if TR_N_MAX > 4
                } else if (eg_intr_md.egress_rid == 3) {
                    placement_3();
                } else if (eg_intr_md.egress_rid == 4) {
                    placement_4();
                } else if (eg_intr_md.egress_rid == 5) {
                    placement_5();
                } else if (eg_intr_md.egress_rid == 6) {
                    placement_6();
                } else {
                    placement_7();
                }
#else
                } else {
                    placement_3();
                }
#endif
            }
            if (hdr.bridge.kind == KIND_KEYWRITE) {
                eg_md.offset = (bit<64>)(eg_md.off32 << KW_ENTRY_SHIFT);
            } else if (hdr.bridge.kind == KIND_KEYINC) {
                eg_md.offset = (bit<64>)(eg_md.off32 << 3);
            }
#ifdef TR_SKETCH
            else if (hdr.bridge.kind == KIND_SKETCH) {
                eg_md.offset = (bit<64>)eg_md.off32;   /* the column's byte offset */
            }
#endif
#ifdef TR_APPEND
            else if (hdr.bridge.kind == KIND_POSTCARD) {
                eg_md.offset = (bit<64>)(eg_md.off32 << 5);
            } else {
                /* Append: the entries follow the list's 64-byte header */
                eg_md.offset = (bit<64>)(eg_md.off32 + APPEND_HEADER_BYTES);
            }
#else
            else {
                /* Postcarding chunk (32 bytes) */
                eg_md.offset = (bit<64>)(eg_md.off32 << 5);
            }
#endif
            hdr.bth.psn = eg_md.psn[23:0];
            if (eg_md.psn[ACK_EVERY_LOG2 - 1:0] == (1 << ACK_EVERY_LOG2) - 1) {
                hdr.bth.ack_req = 1;
            }
            if (hdr.bridge.kind == KIND_KEYINC) {
                hdr.atomic_eth.va = hdr.atomic_eth.va + eg_md.offset;
            }
#ifdef TR_APPEND
            else if (hdr.bridge.kind == KIND_APPEND && eg_intr_md.egress_rid == 1) {
                append_header();
            }
#endif
            else {
                hdr.reth.va = hdr.reth.va + eg_md.offset;
            }
        }
    }
}
