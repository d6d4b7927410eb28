/* dta translator: per-reporter sequence tracking and DTA NACKs (seq header form only).
 * State per (reporter, opcode): the last in-order seqnum. A retransmittable report (retransmit = 1) that is
 * the next in order is accepted; one already seen (behind) is dropped silently; one after a gap is turned
 * into a NACK (UDP 40044, IP and MAC addresses swapped, base header with the reporter's opcode, then the last
 * in-order seqnum) sent back out of its ingress port, and the report itself is not written. */
control TrSeqNack(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
#ifndef DTA_COMPACT
    bit<16> seq_index;   /* reporter index ++ opcode[2:0] */
    action set_reporter(bit<13> idx) {
        seq_index = idx ++ hdr.dta_base.opcode[2:0];
    }
    table tbl_reporter {
        key = { hdr.ipv4.src_addr: exact; }
        actions = { set_reporter; }
        default_action = set_reporter(0);   /* unknown reporters share slot 0 */
        size = MAX_REPORTERS;
    }

    Register<bit<8>, bit<16>>(MAX_REPORTERS * 8, 0) reg_last_seq;
    RegisterAction<bit<8>, bit<16>, bit<8>>(reg_last_seq) track = {
        void apply(inout bit<8> last, out bit<8> result) {
            if (hdr.dta_base.seqnum == last + 1) {
                last = hdr.dta_base.seqnum;
            }
            result = last;
        }
    };

    action craft_nack() {
        bit<48> mac = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = mac;
        bit<32> ip = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = ip;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.total_len = 28 + DTA_BASE_BYTES + 2;
        hdr.udp.src_port = DTA_UDP_PORT;
        hdr.udp.dst_port = DTA_NACK_UDP_PORT;
        hdr.udp.length = 8 + DTA_BASE_BYTES + 2;
        hdr.udp.checksum = 0;
        hdr.dta_nack.setValid();
        hdr.dta_nack.seqnum = ig_md.seq_last;
        hdr.dta_nack.nack = 1;
        hdr.dta_nack.reserved = 0;
        hdr.dta_keywrite.setInvalid();
        hdr.dta_keywrite_data.setInvalid();
        hdr.dta_keyincrement.setInvalid();
        hdr.dta_append.setInvalid();
        hdr.dta_append_data.setInvalid();
        hdr.dta_postcard.setInvalid();
        hdr.dta_postcard_pathlen.setInvalid();
#ifdef TR_SKETCH
        hdr.dta_sketch.setInvalid();
        hdr.sk_column.setInvalid();
#endif
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
        ig_md.csum_update = 1;
        ig_md.handled = 1;
        ig_md.count_reason = CNT_SEQ_GAP_NACKED;
    }
    action seq_in_order() { }
    action seq_duplicate() {
        ig_md.handled = 1;
        ig_md.count_reason = CNT_SEQ_DUPLICATE;
        ig_md.drop = 1;
    }
    /* behind = last - seqnum (mod 256): 0 in order; 1..127 already written; otherwise a gap. A table, not an
     * if: bf-p4c would fold the subtraction into the condition, which a gateway cannot evaluate. */
    table tbl_seq_class {
        key = { ig_md.seq_behind: ternary; }
        actions = { seq_in_order; seq_duplicate; craft_nack; }
        const entries = {
            0 : seq_in_order();
            0x00 &&& 0x80 : seq_duplicate();
        }
        default_action = craft_nack();
        size = 2;
    }
#endif

    apply {
#ifndef DTA_COMPACT
        if (hdr.dta_base.retransmit == 1) {
            tbl_reporter.apply();
            ig_md.seq_last = track.execute(seq_index);
            ig_md.seq_behind = ig_md.seq_last - hdr.dta_base.seqnum;
            tbl_seq_class.apply();
        }
#endif
    }
}
