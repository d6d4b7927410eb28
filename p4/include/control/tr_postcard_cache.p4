/* dta translator: Postcarding cache (DESIGN.md section 3), ingress; built with -DTR_POSTCARDING (the
 * Postcarding profile, see p4/README.md). Per cache slot idx = crc32(key_le) & (POSTCARD_CACHE_SIZE - 1):
 *   reg_key    the flow key (swapped in by every postcard; the old key is the evicted flow's key)
 *   reg_tag    a pair {key copy, count of postcards received}, whose stateful ALU decides the mode in the
 *              same stage as reg_key (it keeps its own copy of the key, so no stage waits for reg_key) and
 *              outputs it as its predicate:
 *                same flow, path now complete (count + 1 >= B, or path_len with opcode 0x06): FLUSH, key := ~key
 *                same flow, path not complete: STORE, count + 1
 *                another flow (or an empty or flushed slot): EVICT, key := this flow, count 1
 *   reg_cell_i one per hop i = 1..B: g(v) of hop i's value (CRC-32C over v big-endian, computed when the
 *              postcard arrives), or g(blank) = crc32c(FF FF FF FF) = 0xFFFFFFFF when hop i is missing.
 *              Keeping g(v) instead of v halves the egress hashing (it only XORs hopsum_i(key)).
 * Per postcard, one stateful ALU per cell register in one stage (a table per cell keyed on (mode, hop)):
 *   STORE  hop i's cell := g(v); the report is consumed.
 *   FLUSH  every cell is read out and reset to blank; hop i's cell in the chunk is g(v) itself.
 *   EVICT  every cell is read out (the evicted flow's chunk) and reset to blank, hop i's cell := g(v) (the
 *          newcomer's first postcard). An empty slot reads out all blanks: nothing was evicted, so the
 *          report is consumed (tbl_pc_send) instead of writing a blank chunk.
 * A flushed or evicted chunk goes to the collector's postcard multicast group (N copies, RID = chunk copy
 * j), keyed by the flushed flow or by the evicted flow's key; the egress XORs hopsum_i(key) into cell i and
 * writes 32 bytes per copy.
 * Not done here: the idle-timeout flush (needs a timer sweep, e.g. the packet generator); duplicates of a
 * hop are counted twice (the Rust translator counts distinct hops); a path of length 1 that starts in an
 * empty slot waits for the next postcard of the slot (see p4/README.md). */

/* g(blank): CRC-32C of FF FF FF FF (init and xorout 0xFFFFFFFF) is 0xFFFFFFFF (p4/tests check it) */
const bit<32> PC_G_BLANK = 0xFFFFFFFF;

/* modes = reg_tag's predicate output, one-hot: bit (2 * cmphi + cmplo) set, cmplo = same flow, cmphi = count >=
 * path length - 1 (bf-asm's predicate encoding: !cmphi & !cmplo = bit 0, cmplo = 0b1010, cmphi = 0b1100;
 * p4/README.md: to be confirmed on the Tofino model) */
const bit<8> PC_EVICT    = 1;   /* another flow, its count below this path length - 1 */
const bit<8> PC_STORE    = 2;   /* same flow, path not complete */
const bit<8> PC_EVICT_HI = 4;   /* another flow, its count at or above this path length - 1 */
const bit<8> PC_FLUSH    = 8;   /* same flow, path complete */

/* before the region lookup: the postcard's fields, the path length and g(v) (independent of any state,
 * so these sit in the first stages) */
control TrPostcardPrep(inout tr_headers_t hdr, inout tr_ig_md_t ig_md) {
    CRCPolynomial<bit<32>>(CRC32C_POLY, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32c_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g_hash;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g_hash_pathlen;
    CRCPolynomial<bit<32>>(CRC32_POLY, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_poly;
    Hash<bit<14>>(HashAlgorithm_t.CUSTOM, crc32_poly) cache_hash;
    action slot() {
        ig_md.pc_idx = cache_hash.get({ig_md.pc_key[7:0], ig_md.pc_key[15:8], ig_md.pc_key[23:16],
                                       ig_md.pc_key[31:24]});
    }
    /* pc_key, pc_hop and pc_path_len come from the parser (path length B for opcode 0x04) */
    action from_postcard() {
        ig_md.pc_gv = g_hash.get({hdr.dta_postcard.data});
    }
    action from_postcard_pathlen() {
        ig_md.pc_gv = g_hash_pathlen.get({hdr.dta_postcard_pathlen.data});
    }
    /* 1 <= hop <= path length <= B, as the Rust translator checks (else dropped and counted, CNT_BAD_HOP) */
    action valid(bit<8> target_m1) {
        ig_md.pc_ok = 1;
        ig_md.pc_target_m1 = target_m1;
    }
    table tbl_pc_valid {
        key = { ig_md.pc_hop: exact; ig_md.pc_path_len: exact; }
        actions = { valid; NoAction; }
        const entries = {
#if POSTCARD_HOPS >= 1
            (1, 1): valid(0);
#endif
#if POSTCARD_HOPS >= 2
            (1, 2): valid(1);
            (2, 2): valid(1);
#endif
#if POSTCARD_HOPS >= 3
            (1, 3): valid(2);
            (2, 3): valid(2);
            (3, 3): valid(2);
#endif
#if POSTCARD_HOPS >= 4
            (1, 4): valid(3);
            (2, 4): valid(3);
            (3, 4): valid(3);
            (4, 4): valid(3);
#endif
#if POSTCARD_HOPS >= 5
            (1, 5): valid(4);
            (2, 5): valid(4);
            (3, 5): valid(4);
            (4, 5): valid(4);
            (5, 5): valid(4);
#endif
#if POSTCARD_HOPS >= 6
            (1, 6): valid(5);
            (2, 6): valid(5);
            (3, 6): valid(5);
            (4, 6): valid(5);
            (5, 6): valid(5);
            (6, 6): valid(5);
#endif
#if POSTCARD_HOPS >= 7
            (1, 7): valid(6);
            (2, 7): valid(6);
            (3, 7): valid(6);
            (4, 7): valid(6);
            (5, 7): valid(6);
            (6, 7): valid(6);
            (7, 7): valid(6);
#endif
#if POSTCARD_HOPS >= 8
            (1, 8): valid(7);
            (2, 8): valid(7);
            (3, 8): valid(7);
            (4, 8): valid(7);
            (5, 8): valid(7);
            (6, 8): valid(7);
            (7, 8): valid(7);
            (8, 8): valid(7);
#endif
        }
        default_action = NoAction();
        size = 64;
    }
    apply {
        if (hdr.dta_postcard.isValid()) {
            from_postcard();
        } else if (hdr.dta_postcard_pathlen.isValid()) {
            from_postcard_pathlen();
        }
        slot();
        tbl_pc_valid.apply();
    }
}

struct pc_tag_t {
    bit<32> key;
    bit<32> count;
}

control TrPostcardCache(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<14>>(POSTCARD_CACHE_SIZE, 0) reg_key;
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_key) swap_key = {
        void apply(inout bit<32> k, out bit<32> old) { old = k; k = ig_md.pc_key; }
    };

    Register<pc_tag_t, bit<14>>(POSTCARD_CACHE_SIZE, {0, 0}) reg_tag;
    /* the mode is the stateful ALU's 4-bit predicate (a RegisterAction cannot output constants on Tofino-1):
     * one-hot of {cmphi, cmplo} with cmplo = same flow, cmphi = count >= path length - 1 (define PC_* below) */
    RegisterAction<pc_tag_t, bit<14>, bit<8>>(reg_tag) tag = {
        void apply(inout pc_tag_t t, out bit<8> mode) {
            mode = this.predicate(t.key == ig_md.pc_key, t.count >= (bit<32>)ig_md.pc_target_m1);
            if (t.key == ig_md.pc_key) {
                if (t.count >= (bit<32>)ig_md.pc_target_m1) {
                    /* flushed: the slot now holds ~key, which no flow of this slot has (crc32(~k) and
                     * crc32(k) differ by a constant whose low bits are not 0), so the next postcard starts over */
                    t.key = ~ig_md.pc_key;
                } else {
                    t.count = t.count + 1;
                }
            } else {
                t.key = ig_md.pc_key;
                t.count = 1;
            }
        }
    };

    /* one cell register per hop, one table per cell: key (mode, hop), one stateful ALU call per action */
#define PC_CELL(I, C) \
    Register<bit<32>, bit<14>>(POSTCARD_CACHE_SIZE, PC_G_BLANK) reg_cell_##I; \
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_cell_##I) cell_put_##I = { \
        void apply(inout bit<32> v) { v = ig_md.pc_gv; } \
    }; \
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_cell_##I) cell_clear_##I = { \
        void apply(inout bit<32> v) { v = PC_G_BLANK; } \
    }; \
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_cell_##I) cell_take_##I = { \
        void apply(inout bit<32> v, out bit<32> old) { old = v; v = PC_G_BLANK; } \
    }; \
    RegisterAction<bit<32>, bit<14>, bit<32>>(reg_cell_##I) cell_swap_##I = { \
        void apply(inout bit<32> v, out bit<32> old) { old = v; v = ig_md.pc_gv; } \
    }; \
    action store_##I() { cell_put_##I.execute(ig_md.pc_idx); } \
    action flush_mine_##I() { cell_clear_##I.execute(ig_md.pc_idx); hdr.pc_chunk.C = ig_md.pc_gv; } \
    action take_##I() { hdr.pc_chunk.C = cell_take_##I.execute(ig_md.pc_idx); } \
    action swap_##I() { hdr.pc_chunk.C = cell_swap_##I.execute(ig_md.pc_idx); } \
    table tbl_cell_##I { \
        key = { ig_md.pc_mode: exact; ig_md.pc_hop: ternary; } \
        actions = { store_##I; flush_mine_##I; take_##I; swap_##I; NoAction; } \
        const entries = { \
            (PC_STORE, I): store_##I(); \
            (PC_FLUSH, I): flush_mine_##I(); \
            (PC_FLUSH, _): take_##I(); \
            (PC_EVICT, I): swap_##I(); \
            (PC_EVICT, _): take_##I(); \
            (PC_EVICT_HI, I): swap_##I(); \
            (PC_EVICT_HI, _): take_##I(); \
        } \
        default_action = NoAction(); \
        size = 16; \
    }
    PC_CELL(1, c0)
#if POSTCARD_HOPS >= 2
    PC_CELL(2, c1)
#endif
#if POSTCARD_HOPS >= 3
    PC_CELL(3, c2)
#endif
#if POSTCARD_HOPS >= 4
    PC_CELL(4, c3)
#endif
#if POSTCARD_HOPS >= 5
    PC_CELL(5, c4)
#endif
#if POSTCARD_HOPS >= 6
    PC_CELL(6, c5)
#endif
#if POSTCARD_HOPS >= 7
    PC_CELL(7, c6)
#endif
#if POSTCARD_HOPS >= 8
    PC_CELL(8, c7)
#endif
#undef PC_CELL

    action start() {
        hdr.pc_chunk.setValid();   /* cells 1..B come from the cell tables, the padding after them is 0 */
#if POSTCARD_HOPS < 2
        hdr.pc_chunk.c1 = 0;
#endif
#if POSTCARD_HOPS < 3
        hdr.pc_chunk.c2 = 0;
#endif
#if POSTCARD_HOPS < 4
        hdr.pc_chunk.c3 = 0;
#endif
#if POSTCARD_HOPS < 5
        hdr.pc_chunk.c4 = 0;
#endif
#if POSTCARD_HOPS < 6
        hdr.pc_chunk.c5 = 0;
#endif
#if POSTCARD_HOPS < 7
        hdr.pc_chunk.c6 = 0;
#endif
#if POSTCARD_HOPS < 8
        hdr.pc_chunk.c7 = 0;
#endif
        hdr.dta_base.setInvalid();
        hdr.dta_postcard.setInvalid();
        hdr.dta_postcard_pathlen.setInvalid();
        ig_md.handled = 1;
    }
    action consume() {
        hdr.pc_chunk.setInvalid();
        ig_md.drop = 1;
        ig_md.count_reason = CNT_POSTCARD_CACHED;
    }
    action send_flushed() {
        hdr.bridge.kind = KIND_POSTCARD;
        hdr.bridge.key = ig_md.pc_key;
        ig_tm_md.mcast_grp_a = ig_md.mcast_postcard;
    }
    action send_evicted() {
        hdr.bridge.kind = KIND_POSTCARD;
        hdr.bridge.key = ig_md.pc_old_key;
        ig_tm_md.mcast_grp_a = ig_md.mcast_postcard;
    }
    /* after the cells: an eviction that read out only blanks found the slot empty (or flushed), so nothing
     * was evicted and the report is consumed like a STORE. Ternary entries match in order. PC_CELL_KEYS are
     * the cells 1..B, PC_CELLS(x) is x once per cell. */
#if POSTCARD_HOPS == 1
#define PC_CELL_KEYS hdr.pc_chunk.c0: ternary;
#define PC_CELLS(x) x
#elif POSTCARD_HOPS == 2
#define PC_CELL_KEYS hdr.pc_chunk.c0: ternary; hdr.pc_chunk.c1: ternary;
#define PC_CELLS(x) x, x
#elif POSTCARD_HOPS == 3
#define PC_CELL_KEYS hdr.pc_chunk.c0: ternary; hdr.pc_chunk.c1: ternary; hdr.pc_chunk.c2: ternary;
#define PC_CELLS(x) x, x, x
#elif POSTCARD_HOPS == 4
#define PC_CELL_KEYS hdr.pc_chunk.c0: ternary; hdr.pc_chunk.c1: ternary; hdr.pc_chunk.c2: ternary; hdr.pc_chunk.c3: ternary;
#define PC_CELLS(x) x, x, x, x
#elif POSTCARD_HOPS == 5
#define PC_CELL_KEYS hdr.pc_chunk.c0: ternary; hdr.pc_chunk.c1: ternary; hdr.pc_chunk.c2: ternary; hdr.pc_chunk.c3: ternary; hdr.pc_chunk.c4: ternary;
#define PC_CELLS(x) x, x, x, x, x
#elif POSTCARD_HOPS == 6
#define PC_CELL_KEYS hdr.pc_chunk.c0: ternary; hdr.pc_chunk.c1: ternary; hdr.pc_chunk.c2: ternary; hdr.pc_chunk.c3: ternary; hdr.pc_chunk.c4: ternary; hdr.pc_chunk.c5: ternary;
#define PC_CELLS(x) x, x, x, x, x, x
#elif POSTCARD_HOPS == 7
#define PC_CELL_KEYS hdr.pc_chunk.c0: ternary; hdr.pc_chunk.c1: ternary; hdr.pc_chunk.c2: ternary; hdr.pc_chunk.c3: ternary; hdr.pc_chunk.c4: ternary; hdr.pc_chunk.c5: ternary; hdr.pc_chunk.c6: ternary;
#define PC_CELLS(x) x, x, x, x, x, x, x
#elif POSTCARD_HOPS == 8
#define PC_CELL_KEYS hdr.pc_chunk.c0: ternary; hdr.pc_chunk.c1: ternary; hdr.pc_chunk.c2: ternary; hdr.pc_chunk.c3: ternary; hdr.pc_chunk.c4: ternary; hdr.pc_chunk.c5: ternary; hdr.pc_chunk.c6: ternary; hdr.pc_chunk.c7: ternary;
#define PC_CELLS(x) x, x, x, x, x, x, x, x
#endif
    table tbl_pc_send {
        key = {
            ig_md.pc_mode: exact;
            PC_CELL_KEYS
        }
        actions = { consume; send_flushed; send_evicted; }
        const entries = {
            (PC_FLUSH, PC_CELLS(_)): send_flushed();
            (PC_EVICT, PC_CELLS(PC_G_BLANK)): consume();
            (PC_EVICT, PC_CELLS(_)): send_evicted();
            (PC_EVICT_HI, PC_CELLS(PC_G_BLANK)): consume();
            (PC_EVICT_HI, PC_CELLS(_)): send_evicted();
        }
        default_action = consume();
        size = 8;
    }

    apply {
        start();
        ig_md.pc_old_key = swap_key.execute(ig_md.pc_idx);
        ig_md.pc_mode = tag.execute(ig_md.pc_idx);
        tbl_cell_1.apply();
#if POSTCARD_HOPS >= 2
        tbl_cell_2.apply();
#endif
#if POSTCARD_HOPS >= 3
        tbl_cell_3.apply();
#endif
#if POSTCARD_HOPS >= 4
        tbl_cell_4.apply();
#endif
#if POSTCARD_HOPS >= 5
        tbl_cell_5.apply();
#endif
#if POSTCARD_HOPS >= 6
        tbl_cell_6.apply();
#endif
#if POSTCARD_HOPS >= 7
        tbl_cell_7.apply();
#endif
#if POSTCARD_HOPS >= 8
        tbl_cell_8.apply();
#endif
        tbl_pc_send.apply();
    }
}
#undef PC_CELL_KEYS
#undef PC_CELLS
