/* dta translator: Postcarding cache (DESIGN.md section 3). Per cache slot: the flow key, a count of hops
 * received, and one raw value per hop (0xFFFFFFFF, the blank value, when empty). Per postcard:
 *   - same flow, path now complete (B hops, or path_len for opcode 0x06): FLUSH the flow's chunk and reset;
 *   - another flow held the slot: EVICT that flow's chunk (written to the evicted flow's chunks, keyed by the
 *     evicted key) and start the newcomer with this postcard;
 *   - otherwise STORE the value and consume the report.
 * A flushed or evicted chunk goes to the collector's postcard multicast group (N copies, RID = chunk copy j);
 * the egress encodes the cells (hopsum_i(key) XOR g(v)) and writes 32 bytes per copy.
 * Not done here: the idle-timeout flush (needs a timer sweep, e.g. the packet generator; see p4/README.md). */

const bit<2> PC_STORE = 0;
const bit<2> PC_EVICT = 1;
const bit<2> PC_FLUSH = 2;

control TrPostcardCell(inout tr_ig_md_t ig_md, inout bit<32> cell, in bit<14> idx)(bit<8> my_hop) {
    Register<bit<32>, bit<14>>(POSTCARD_CACHE_SIZE, 0xFFFFFFFF) reg_cell;
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_cell) write = {
        void apply(inout bit<32> v) { v = ig_md.pc_value; }
    };
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_cell) swap_in = {
        void apply(inout bit<32> v, out bit<32> old) { old = v; v = ig_md.pc_value; }
    };
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_cell) swap_blank = {
        void apply(inout bit<32> v, out bit<32> old) { old = v; v = 0xFFFFFFFF; }
    };
    apply {
        if (ig_md.pc_mode == PC_STORE) {
            if (ig_md.pc_hop == my_hop) {
                write.execute(idx);
            }
        } else if (ig_md.pc_mode == PC_EVICT) {
            if (ig_md.pc_hop == my_hop) {
                cell = swap_in.execute(idx);
            } else {
                cell = swap_blank.execute(idx);
            }
        } else {
            cell = swap_blank.execute(idx);
            if (ig_md.pc_hop == my_hop) {
                cell = ig_md.pc_value;
            }
        }
    }
}

control TrPostcardCache(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    CRCPolynomial<bit<32>>(CRC32_POLY, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_poly;
    Hash<bit<14>>(HashAlgorithm_t.CUSTOM, crc32_poly) cache_hash;
    bit<14> idx;

    Register<bit<32>, bit<14>>(POSTCARD_CACHE_SIZE, 0) reg_key;
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_key) swap_key = {
        void apply(inout bit<32> k, out bit<32> old) { old = k; k = ig_md.pc_key; }
    };
    Register<bit<8>, bit<14>>(POSTCARD_CACHE_SIZE, 0) reg_count;
    /* same flow: output 1 (and reset) when this postcard completes the path */
    RegisterAction<bit<8>, bit<14>, bit<8>>(reg_count) count_hit = {
        void apply(inout bit<8> c, out bit<8> complete) {
            if (c >= ig_md.pc_target_m1) {
                c = 0;
                complete = 1;
            } else {
                c = c + 1;
                complete = 0;
            }
        }
    };
    /* another flow: output 1 when the slot held postcards (an eviction) */
    RegisterAction<bit<8>, bit<14>, bit<8>>(reg_count) count_miss = {
        void apply(inout bit<8> c, out bit<8> evict) {
            if (c != 0) {
                evict = 1;
            } else {
                evict = 0;
            }
            c = 1;
        }
    };

    TrPostcardCell(1) cell1;
#if POSTCARD_HOPS >= 2
    TrPostcardCell(2) cell2;
#endif
#if POSTCARD_HOPS >= 3
    TrPostcardCell(3) cell3;
#endif
#if POSTCARD_HOPS >= 4
    TrPostcardCell(4) cell4;
#endif
#if POSTCARD_HOPS >= 5
    TrPostcardCell(5) cell5;
#endif
#if POSTCARD_HOPS >= 6
    TrPostcardCell(6) cell6;
#endif
#if POSTCARD_HOPS >= 7
    TrPostcardCell(7) cell7;
#endif
#if POSTCARD_HOPS >= 8
    TrPostcardCell(8) cell8;
#endif

    action from_postcard() {
        ig_md.pc_key = hdr.dta_postcard.key;
        ig_md.pc_hop = hdr.dta_postcard.hop;
        ig_md.pc_value = hdr.dta_postcard.data;
        ig_md.pc_target_m1 = POSTCARD_HOPS - 1;
    }
    action from_postcard_pathlen() {
        ig_md.pc_key = hdr.dta_postcard_pathlen.key;
        ig_md.pc_hop = hdr.dta_postcard_pathlen.hop;
        ig_md.pc_value = hdr.dta_postcard_pathlen.data;
        ig_md.pc_target_m1 = hdr.dta_postcard_pathlen.path_len - 1;
    }

    apply {
        if (hdr.dta_postcard.isValid()) {
            from_postcard();
        } else if (hdr.dta_postcard_pathlen.isValid()) {
            from_postcard_pathlen();
        }
        idx = cache_hash.get({ig_md.pc_key[7:0], ig_md.pc_key[15:8], ig_md.pc_key[23:16], ig_md.pc_key[31:24]});
        ig_md.pc_old_key = swap_key.execute(idx);
        if (ig_md.pc_old_key == ig_md.pc_key) {
            ig_md.pc_flag = count_hit.execute(idx);
            if (ig_md.pc_flag == 1) {
                ig_md.pc_mode = PC_FLUSH;
            }
        } else {
            ig_md.pc_flag = count_miss.execute(idx);
            if (ig_md.pc_flag == 1) {
                ig_md.pc_mode = PC_EVICT;
            }
        }
        hdr.pc_chunk.setValid();
        hdr.pc_chunk.c0 = 0;
        hdr.pc_chunk.c1 = 0;
        hdr.pc_chunk.c2 = 0;
        hdr.pc_chunk.c3 = 0;
        hdr.pc_chunk.c4 = 0;
        hdr.pc_chunk.c5 = 0;
        hdr.pc_chunk.c6 = 0;
        hdr.pc_chunk.c7 = 0;
        cell1.apply(ig_md, hdr.pc_chunk.c0, idx);
#if POSTCARD_HOPS >= 2
        cell2.apply(ig_md, hdr.pc_chunk.c1, idx);
#endif
#if POSTCARD_HOPS >= 3
        cell3.apply(ig_md, hdr.pc_chunk.c2, idx);
#endif
#if POSTCARD_HOPS >= 4
        cell4.apply(ig_md, hdr.pc_chunk.c3, idx);
#endif
#if POSTCARD_HOPS >= 5
        cell5.apply(ig_md, hdr.pc_chunk.c4, idx);
#endif
#if POSTCARD_HOPS >= 6
        cell6.apply(ig_md, hdr.pc_chunk.c5, idx);
#endif
#if POSTCARD_HOPS >= 7
        cell7.apply(ig_md, hdr.pc_chunk.c6, idx);
#endif
#if POSTCARD_HOPS >= 8
        cell8.apply(ig_md, hdr.pc_chunk.c7, idx);
#endif
        hdr.dta_base.setInvalid();
        hdr.dta_postcard.setInvalid();
        hdr.dta_postcard_pathlen.setInvalid();
        ig_md.handled = 1;
        if (ig_md.pc_mode == PC_STORE) {
            hdr.pc_chunk.setInvalid();
            ig_md.drop = 1;
            ig_md.count_reason = CNT_POSTCARD_CACHED;
        } else {
            hdr.bridge.kind = KIND_POSTCARD;
            ig_tm_md.mcast_grp_a = ig_md.mcast_postcard;
            if (ig_md.pc_mode == PC_EVICT) {
                hdr.bridge.key = ig_md.pc_old_key;
            } else {
                hdr.bridge.key = ig_md.pc_key;
            }
        }
    }
}
