/* dta translator: Sketch-Merge (DESIGN.md section 3; the earlier DTA paper's section 3.1), ingress; built with
 * -DTR_SKETCH (the Sketch-Merge profile, see p4/README.md). Every reporter sends its sketch column by column
 * in order; column c of all `reporters` reporters is merged (sum, saturating at 2^32 - 1, or max) and written
 * to the collector's sketch region as one RDMA WRITE of SKETCH_ROWS big-endian u32 at va + 4 * rows * c, the
 * layout and byte order of the Rust translator (translator/src/primitives/sketch.rs), so the same collector
 * queries (count-min, HyperLogLog) read it.
 *   reg_expected, reg_expected_copy  per (sketch, reporter): the next column this reporter must send (0 after
 *              the last column). Two copies with the same update in the same stage: the first answers
 *              "in order?" (its predicate), the second the old value (duplicate or gap, and the NACK's last
 *              in-order column), so nothing waits a stage for the other.
 *   reg_contrib per column: reports merged so far in this round; reset when the last reporter's arrives.
 *   reg_row_r  per column, one register (one stateful ALU) per row r: the merged counter, reset to 0 when
 *              the completed column is read out.
 * A report in order is merged; the one that completes the column carries the merged column to the egress
 * (no batching of contiguous columns: every column is its own WRITE, same memory contents). A column the
 * reporter already sent is dropped; one after a gap is answered with a DTA NACK (base header with the
 * reporter's opcode, then the low byte of its last column merged in order), as the Rust translator does.
 * Not checked in the data plane (see p4/README.md): one op per sketch. No idle-timeout flush is needed (a
 * column is written the moment it completes). */

/* reg_expected's predicate: bit (2 * cmphi + cmplo), cmplo = column is the expected one */
const bit<8> SK_GAP_OR_DUP    = 1;   /* not the expected column */
const bit<8> SK_IN_ORDER      = 2;   /* the expected column, not the sketch's last */
const bit<8> SK_GAP_OR_DUP_HI = 4;   /* not the expected column (expected is the last) */
const bit<8> SK_IN_ORDER_LAST = 8;   /* the expected column, the sketch's last (expected wraps to 0) */
const bit<8> SK_OP_SUM = 0;
const bit<8> SK_OP_MAX = 1;

/* before the region lookup (in parallel with it): the (sketch, reporter) slot of the order check. Only the
 * reporters 0..reporters-1 of a sketch have an entry, so a report from any other reporter id is dropped and
 * counted (CNT_SKETCH_BAD_REPORTER), as the Rust translator drops it (BadSketch). */
control TrSketchReporter(inout tr_headers_t hdr, inout tr_ig_md_t ig_md) {
    action reporter_slot(bit<16> slot) {
        ig_md.sk_rep_idx = slot;
        ig_md.sk_rep_ok = 1;
    }
    table tbl_sk_reporter {
        key = {
            ig_md.collector_idx: exact;
            hdr.dta_sketch.sketch_id: exact;
            hdr.dta_sketch.reporter_id: exact;
        }
        actions = { reporter_slot; NoAction; }
        default_action = NoAction();
        size = SKETCH_REPORTER_SLOTS;
    }
    apply {
        tbl_sk_reporter.apply();
    }
}

control TrSketchMerge(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<16>, bit<16>>(SKETCH_REPORTER_SLOTS, 0) reg_expected;
    RegisterAction<bit<16>, bit<16>, bit<8>>(reg_expected) check_order = {
        void apply(inout bit<16> e, out bit<8> order) {
            order = this.predicate(e == hdr.dta_sketch.column, e >= ig_md.sk_last_col);
            if (e == hdr.dta_sketch.column) {
                if (e >= ig_md.sk_last_col) {
                    e = 0;
                } else {
                    e = e + 1;
                }
            }
        }
    };
    Register<bit<16>, bit<16>>(SKETCH_REPORTER_SLOTS, 0) reg_expected_copy;
    RegisterAction<bit<16>, bit<16>, bit<16>>(reg_expected_copy) read_order = {
        void apply(inout bit<16> e, out bit<16> last) {
            last = e - 1;   /* the last column merged in order (0xFFFF before the first) */
            if (e == hdr.dta_sketch.column) {
                if (e >= ig_md.sk_last_col) {
                    e = 0;
                } else {
                    e = e + 1;
                }
            }
        }
    };

    Register<bit<16>, bit<16>>(SKETCH_COLUMNS, 0) reg_contrib;
    RegisterAction<bit<16>, bit<16>, bit<16>>(reg_contrib) contribute = {
        void apply(inout bit<16> n, out bit<16> left) {
            if (n >= ig_md.sk_reporters_m1) {
                n = 0;
            } else {
                n = n + 1;
            }
            left = n;   /* 0: this report completes the column */
        }
    };
    action merge_in_order() {
        ig_md.sk_left = contribute.execute(ig_md.sk_col_idx);
    }
    action classify() {
        ig_md.sk_behind = hdr.dta_sketch.column - ig_md.sk_last;   /* column - expected + 1 */
        ig_md.sk_nack_seq = ig_md.sk_last[7:0];   /* its own 8-bit field: the NACK header is written from one
                                                     PHV source at the header's offset plus constants */
    }
    table tbl_sk_contrib {
        key = { ig_md.sk_order: exact; }
        actions = { merge_in_order; classify; }
        const entries = {
            SK_IN_ORDER: merge_in_order();
            SK_IN_ORDER_LAST: merge_in_order();
            SK_GAP_OR_DUP: classify();
            SK_GAP_OR_DUP_HI: classify();
        }
        default_action = classify();
        size = 4;
    }

    /* one register per row; the table's key is (in order?, op, column complete?) */
#define SK_ROW(R, C) \
    Register<bit<32>, bit<16>>(SKETCH_COLUMNS, 0) reg_row_##R; \
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_row_##R) sum_##R = { \
        void apply(inout bit<32> v) { v = v |+| hdr.sk_column.C; } \
    }; \
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_row_##R) sum_take_##R = { \
        void apply(inout bit<32> v, out bit<32> merged) { merged = v |+| hdr.sk_column.C; v = 0; } \
    }; \
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_row_##R) max_##R = { \
        void apply(inout bit<32> v) { v = max(v, hdr.sk_column.C); } \
    }; \
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_row_##R) max_take_##R = { \
        void apply(inout bit<32> v, out bit<32> merged) { merged = max(v, hdr.sk_column.C); v = 0; } \
    }; \
    action row_sum_##R() { sum_##R.execute(ig_md.sk_col_idx); } \
    action row_sum_take_##R() { hdr.sk_column.C = sum_take_##R.execute(ig_md.sk_col_idx); } \
    action row_max_##R() { max_##R.execute(ig_md.sk_col_idx); } \
    action row_max_take_##R() { hdr.sk_column.C = max_take_##R.execute(ig_md.sk_col_idx); } \
    table tbl_sk_row_##R { \
        key = { ig_md.sk_order: exact; hdr.dta_sketch.op: exact; ig_md.sk_left: ternary; } \
        actions = { row_sum_##R; row_sum_take_##R; row_max_##R; row_max_take_##R; NoAction; } \
        const entries = { \
            (SK_IN_ORDER, SK_OP_SUM, 0): row_sum_take_##R(); \
            (SK_IN_ORDER, SK_OP_SUM, _): row_sum_##R(); \
            (SK_IN_ORDER, SK_OP_MAX, 0): row_max_take_##R(); \
            (SK_IN_ORDER, SK_OP_MAX, _): row_max_##R(); \
            (SK_IN_ORDER_LAST, SK_OP_SUM, 0): row_sum_take_##R(); \
            (SK_IN_ORDER_LAST, SK_OP_SUM, _): row_sum_##R(); \
            (SK_IN_ORDER_LAST, SK_OP_MAX, 0): row_max_take_##R(); \
            (SK_IN_ORDER_LAST, SK_OP_MAX, _): row_max_##R(); \
        } \
        default_action = NoAction(); \
        size = 8; \
    }
    SK_ROW(0, c0)
#if SKETCH_ROWS >= 2
    SK_ROW(1, c1)
#endif
#if SKETCH_ROWS >= 4
    SK_ROW(2, c2)
    SK_ROW(3, c3)
#endif
#if SKETCH_ROWS >= 8
    SK_ROW(4, c4)
    SK_ROW(5, c5)
    SK_ROW(6, c6)
    SK_ROW(7, c7)
#endif
#undef SK_ROW

    /* the outcome: write the completed column, consume a merged report, drop a duplicate, NACK a gap */
    action send_column() {
        hdr.bridge.kind = KIND_SKETCH;
        hdr.dta_base.setInvalid();
        hdr.dta_sketch.setInvalid();
        ig_tm_md.ucast_egress_port = ig_md.collector_port;
    }
    action merged() {
        ig_md.drop = 1;
        ig_md.count_reason = CNT_SKETCH_MERGED;
    }
    action duplicate() {
        ig_md.drop = 1;
        ig_md.count_reason = CNT_SKETCH_DUPLICATE;
    }
    action gap_nack() {
        bit<48> mac = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = mac;
        bit<32> ip = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = ip;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.total_len = 28 + DTA_BASE_BYTES + 2;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = 0;
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = 0;
        hdr.ipv4.protocol = IP_PROTO_UDP;
        hdr.udp.src_port = DTA_UDP_PORT;
        hdr.udp.dst_port = DTA_NACK_UDP_PORT;
        hdr.udp.length = 8 + DTA_BASE_BYTES + 2;
        hdr.udp.checksum = 0;
        /* a header instance of its own: sharing TrSeqNack's dta_nack, whose seqnum both actions write from
         * different metadata, leaves bf-p4c no PHV packing ("too many sources" for craft_nack) */
        hdr.dta_nack_sk.setValid();
        hdr.dta_nack_sk.seqnum = ig_md.sk_nack_seq;
        hdr.dta_nack_sk.nack = 1;
        hdr.dta_nack_sk.reserved = 0;
        /* the RoCE headers tbl_region put in place are not sent */
        hdr.bth.setInvalid();
        hdr.reth.setInvalid();
        hdr.icrc.setInvalid();
        hdr.dta_sketch.setInvalid();
        hdr.sk_column.setInvalid();
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
        ig_md.count_reason = CNT_SKETCH_GAP_NACKED;
    }
    table tbl_sk_outcome {
        key = { ig_md.sk_order: exact; ig_md.sk_left: ternary; ig_md.sk_behind: ternary; }
        actions = { send_column; merged; duplicate; gap_nack; }
        const entries = {
            (SK_IN_ORDER, 0, _): send_column();
            (SK_IN_ORDER, _, _): merged();
            (SK_IN_ORDER_LAST, 0, _): send_column();
            (SK_IN_ORDER_LAST, _, _): merged();
            /* column < expected, i.e. column - (expected - 1) <= 0 as a signed 16-bit value: a duplicate */
            (SK_GAP_OR_DUP, _, 0): duplicate();
            (SK_GAP_OR_DUP, _, 0x8000 &&& 0x8000): duplicate();
            (SK_GAP_OR_DUP, _, _): gap_nack();
            (SK_GAP_OR_DUP_HI, _, 0): duplicate();
            (SK_GAP_OR_DUP_HI, _, 0x8000 &&& 0x8000): duplicate();
            (SK_GAP_OR_DUP_HI, _, _): gap_nack();
        }
        default_action = duplicate();
        size = 12;
    }

    apply {
        ig_md.handled = 1;
        ig_md.sk_order = check_order.execute(ig_md.sk_rep_idx);
        ig_md.sk_last = read_order.execute(ig_md.sk_rep_idx);
        tbl_sk_contrib.apply();
        tbl_sk_row_0.apply();
#if SKETCH_ROWS >= 2
        tbl_sk_row_1.apply();
#endif
#if SKETCH_ROWS >= 4
        tbl_sk_row_2.apply();
        tbl_sk_row_3.apply();
#endif
#if SKETCH_ROWS >= 8
        tbl_sk_row_4.apply();
        tbl_sk_row_5.apply();
        tbl_sk_row_6.apply();
        tbl_sk_row_7.apply();
#endif
        tbl_sk_outcome.apply();
    }
}
