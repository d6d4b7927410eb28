/* dta reporter: Append events. When a packet's enqueue depth crosses the port's threshold upwards (a rising
 * edge, so one event per congestion episode, not one per packet), the egress mirrors (E2E) an event whose
 * data is the enqueue depth (cells) to the port's list (list ids are per port, set by the control plane). */
control RepQueueEvent(inout rep_headers_t hdr, inout rep_eg_md_t eg_md,
                      in egress_intrinsic_metadata_t eg_intr_md,
                      inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    bit<8>  rising;
    bit<8>  event_collector;
    bit<32> event_list;
    MirrorId_t session_no_shim;
    MirrorId_t session_shim;

    /* matches when the port's queue depth is above its threshold (range [threshold+1, max]) */
    action over_threshold(bit<8> collector_idx, bit<32> list_id,
                          MirrorId_t session_no_shim_, MirrorId_t session_shim_) {
        eg_md.over = 1;
        event_collector = collector_idx;
        event_list = list_id;
        session_no_shim = session_no_shim_;
        session_shim = session_shim_;
    }
    table tbl_event_config {
        key = { eg_intr_md.egress_port: exact; eg_intr_md.enq_qdepth: range; }
        actions = { over_threshold; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    Register<bit<8>, PortId_t>(512, 0) reg_above;
    RegisterAction<bit<8>, PortId_t, bit<8>>(reg_above) edge = {
        void apply(inout bit<8> above, out bit<8> is_rising) {
            if (eg_md.over == 1 && above == 0) {
                above = 1;
                is_rising = 1;
            } else if (eg_md.over == 1) {
                is_rising = 0;
            } else {
                above = 0;
                is_rising = 0;
            }
        }
    };

    apply {
        event_collector = 0;
        event_list = 0;
        session_no_shim = 0;
        session_shim = 0;
        eg_md.over = 0;
        tbl_event_config.apply();
        rising = edge.execute(eg_intr_md.egress_port);
        if (rising == 1) {
            eg_dprsr_md.mirror_type = MIRROR_TYPE_E2E;
            eg_md.pkt_type = PKT_TYPE_MIRROR;
            eg_md.report_type = DTA_OP_APPEND;
            eg_md.collector_idx = event_collector;
            eg_md.key = event_list;
            eg_md.data = (bit<32>)eg_intr_md.enq_qdepth;
            eg_md.mirror_session = session_no_shim;
            if (hdr.int_shim.isValid()) {
                eg_md.mirror_session = session_shim;
            }
        }
    }
}
