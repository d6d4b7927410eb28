/* dta translator: responses from the collector's RDMA NIC (UDP 4791 towards one of our QPs).
 *   ACK (AETH 000xxxxx) and ATOMIC ACKNOWLEDGE: consumed (counted).
 *   NAK PSN sequence error (0x60): sent to the collector port's egress, where the QP's PSN register lives,
 *     which resynchronises the next PSN to the NAK's PSN (the PSN the responder expects) at once: the
 *     responder dropped everything after the gap, so sending on from there loses no more reports; no
 *     drop period as in the reference.
 *   RNR NAK: consumed (counted); nothing is retransmitted, so there is nothing to wait for.
 *   Other NAKs (invalid request, remote access or operational error; the QP is in error): digest to the
 *     control plane, which re-establishes the QP over the control channel.
 *   CNP: consumed (counted); no rate adaptation in the P4 translator (see p4/README.md).
 * Responses for QPs that are not ours are forwarded. */
control TrRoceResponse(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                       inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action our_qp(bit<8> qp_idx, PortId_t collector_port) {
        hdr.bridge.qp_idx = qp_idx;
        ig_md.collector_port = collector_port;
    }
    table tbl_qpn {
        key = { hdr.bth.dest_qp: exact; }
        actions = { our_qp; NoAction; }
        default_action = NoAction();
        size = MAX_QPS;
    }
    apply {
        if (tbl_qpn.apply().hit) {
            ig_md.handled = 1;
            ig_md.drop = 1;
            if (hdr.bth.opcode == BTH_OP_RC_ATOMIC_ACK) {
                ig_md.count_reason = CNT_ROCE_ATOMIC_ACK;
            } else if (hdr.bth.opcode == BTH_OP_CNP) {
                ig_md.count_reason = CNT_ROCE_CNP;
            } else if (hdr.aeth.isValid()) {
                if (hdr.aeth.syndrome == AETH_NAK_PSN_SEQ) {
                    ig_md.count_reason = CNT_ROCE_NAK_SEQ;
                    ig_md.drop = 0;
                    hdr.bridge.kind = KIND_RESYNC;
                    ig_tm_md.ucast_egress_port = ig_md.collector_port;
                } else if (hdr.aeth.syndrome[7:5] == 0) {
                    ig_md.count_reason = CNT_ROCE_ACK;
                } else if (hdr.aeth.syndrome[7:5] == 1) {
                    ig_md.count_reason = CNT_ROCE_RNR;
                } else {
                    ig_md.count_reason = CNT_ROCE_NAK_OTHER;
                    ig_md.send_digest = 1;
                }
            }
        }
    }
}
