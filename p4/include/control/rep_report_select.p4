/* dta reporter: decide which report (if any) this packet triggers and mirror it (I2E) to the
 * collector's mirror session. Priority: Key-Increment (a flow's count reached its threshold; counts must not be
 * lost) > Key-Write (sampled INT path at the sink) > Postcarding (sampled postcard at every hop). */
control RepReportSelect(inout rep_headers_t hdr, inout rep_ig_md_t ig_md,
                        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    CRCPolynomial<bit<32>>(CRC32_POLY, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_poly) flow_hash;

    bit<1>  sample_kw;
    bit<1>  sample_pc;
    bit<16> count_index;
    bit<1>  count_reached;
    MirrorId_t session_with_shim;

    /* sampling: a 16-bit random number against ranges that the control plane computes from the
     * Key-Write and Postcarding probabilities (reporter_cp.sample_ranges) */
    action set_sample(bit<1> kw, bit<1> pc) {
        sample_kw = kw;
        sample_pc = pc;
    }
    table tbl_sample {
        key = { ig_md.rand_val: range; }
        actions = { set_sample; }
        default_action = set_sample(0, 0);
        size = 4;
    }

    /* the switch ID and the per-flow packet count per Key-Increment report */
    action set_thresholds(bit<32> switch_id, bit<16> ki_threshold_) {
        ig_md.switch_id = switch_id;
        ig_md.ki_limit = ki_threshold_ - 1;
        ig_md.ki_threshold = ki_threshold_;
    }
    table tbl_switch_config {
        actions = { set_thresholds; }
        default_action = set_thresholds(0, 0x7FFF);
        size = 1;
    }

    /* per-flow packet counter: emits one Key-Increment of ki_threshold every ki_threshold packets */
    /* 16-bit counts: the stateful ALU compares signed, so thresholds are 1..32767 */
    Register<bit<16>, bit<16>>(65536, 0) reg_flow_count;
    RegisterAction<bit<16>, bit<16>, bit<1>>(reg_flow_count) count_packet = {
        void apply(inout bit<16> count, out bit<1> reached) {
            if (count >= ig_md.ki_limit) {
                count = 0;
                reached = 1;
            } else {
                count = count + 1;
                reached = 0;
            }
        }
    };

    /* which collector (and mirror sessions) gets each report type */
    action set_collector(bit<8> collector_idx, MirrorId_t session_no_shim, MirrorId_t session_shim) {
        ig_md.collector_idx = collector_idx;
        ig_dprsr_md.mirror_type = MIRROR_TYPE_I2E;
        ig_md.pkt_type = PKT_TYPE_MIRROR;
        ig_md.mirror_session = session_no_shim;
        session_with_shim = session_shim;
    }
    action no_collector() {
        ig_md.report_type = REPORT_NONE;
    }
    table tbl_collector {
        key = { ig_md.report_type: exact; }
        actions = { set_collector; no_collector; }
        default_action = no_collector();
        size = 16;
    }

    apply {
        session_with_shim = 0;
        tbl_switch_config.apply();
        ig_md.report_type = REPORT_NONE;
        ig_md.data = 0;
        if (hdr.int_shim.isValid()) {
            ig_md.l4_proto = hdr.int_shim.next_proto;
        } else {
            ig_md.l4_proto = hdr.ipv4.protocol;
        }
        ig_md.flow_key = flow_hash.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr, ig_md.l4_proto,
                                        hdr.l4.src_port, hdr.l4.dst_port});
        count_index = ig_md.flow_key[15:0];
        tbl_sample.apply();
        if (hdr.l4.isValid()) {
            count_reached = count_packet.execute(count_index);
            if (count_reached == 1) {
                ig_md.report_type = DTA_OP_KEYINCREMENT;
                ig_md.data = (bit<32>)ig_md.ki_threshold;
            } else if (ig_md.is_sink == 1 && hdr.int_shim.isValid() && sample_kw == 1) {
                ig_md.report_type = DTA_OP_KEYWRITE;
            } else if (hdr.int_shim.isValid() && sample_pc == 1) {
                ig_md.report_type = DTA_OP_POSTCARD;
                ig_md.data = ig_md.switch_id;
            }
            if (tbl_collector.apply().hit) {
                /* copies with the shim are truncated after it (the sink's Key-Write reads the path from it) */
                if (hdr.int_shim.isValid()) {
                    ig_md.mirror_session = session_with_shim;
                }
            }
        }
    }
}
