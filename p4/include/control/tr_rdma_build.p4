/* dta translator (ingress): the region of a report and the RoCEv2 frame around its write (DESIGN.md
 * section 4). tbl_region maps (collector, region kind, Append list id) to the QP, the collector's QPN and
 * MAC, the region's R_Key and base VA, its slot mask and the iCRC prefix constant, and writes every header
 * field that is the same for all copies: Ethernet, IPv4 (the destination stays the collector's address the
 * report was sent to), UDP, BTH but its PSN and AckReq, RETH / AtomicETH but the slot's offset. The egress
 * adds the per-copy fields (TrRdmaCraft). A kind without a region is dropped and counted. */
control TrRdmaBuild(inout tr_headers_t hdr, inout tr_ig_md_t ig_md) {
    action common(bit<8> qp_idx, bit<24> dest_qp, bit<32> mask, bit<32> icrc_k_le, bit<16> udp_src_port,
                  bit<48> src_mac, bit<48> dst_mac, bit<32> src_ip, bit<16> ip_len, bit<8> bth_opcode) {
        hdr.bridge.qp_idx = qp_idx;
        hdr.bridge.mask = mask;
        hdr.bridge.icrc_k_le = icrc_k_le;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.ether_type = ETHERTYPE_IPV4;
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = 2;              /* ECT(0) */
        hdr.ipv4.total_len = ip_len;
        hdr.ipv4.identification = 0;   /* constant: part of the iCRC prefix constant */
        hdr.ipv4.flags = 0b010;        /* DF */
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.protocol = IP_PROTO_UDP;
        hdr.ipv4.src_addr = src_ip;
        hdr.udp.src_port = udp_src_port;
        hdr.udp.dst_port = ROCEV2_UDP_PORT;
        hdr.udp.length = ip_len - 20;
        hdr.udp.checksum = 0;
        hdr.bth.setValid();
        hdr.bth.opcode = bth_opcode;
        hdr.bth.solicited = 0;
        hdr.bth.mig_req = 1;
        hdr.bth.pad_count = 0;         /* every payload is a multiple of 4 bytes */
        hdr.bth.tver = 0;
        hdr.bth.pkey = BTH_PKEY_DEFAULT;
        hdr.bth.fecn = 0;
        hdr.bth.becn = 0;
        hdr.bth.reserved6 = 0;
        hdr.bth.dest_qp = dest_qp;
        hdr.bth.ack_req = 0;
        hdr.bth.reserved7 = 0;
        hdr.bth.psn = 0;
        hdr.icrc.setValid();
        hdr.icrc.icrc = 0;
        ig_md.csum_update = 1;
    }
    action write_only(bit<64> va, bit<32> rkey, bit<32> dma_len) {
        hdr.reth.setValid();
        hdr.reth.va = va;
        hdr.reth.rkey = rkey;
        hdr.reth.dma_len = dma_len;
    }
    /* IPv4 length = 20 + UDP 8 + BTH 12 + RETH 16 + payload + iCRC 4 */
    action region_keywrite(bit<8> qp_idx, bit<24> dest_qp, bit<32> mask, bit<32> icrc_k_le,
                           bit<16> udp_src_port, bit<48> src_mac, bit<48> dst_mac, bit<32> src_ip,
                           bit<64> va, bit<32> rkey) {
        common(qp_idx, dest_qp, mask, icrc_k_le, udp_src_port, src_mac, dst_mac, src_ip,
               16w60 + 4 + KW_DATA_BYTES, BTH_OP_RC_WRITE_ONLY);
        write_only(va, rkey, 32w4 + KW_DATA_BYTES);
    }
#ifdef TR_POSTCARDING
    action region_postcard(bit<8> qp_idx, bit<24> dest_qp, bit<32> mask, bit<32> icrc_k_le,
                           bit<16> udp_src_port, bit<48> src_mac, bit<48> dst_mac, bit<32> src_ip,
                           bit<64> va, bit<32> rkey) {
        common(qp_idx, dest_qp, mask, icrc_k_le, udp_src_port, src_mac, dst_mac, src_ip,
               16w60 + POSTCARD_CHUNK_BYTES, BTH_OP_RC_WRITE_ONLY);
        write_only(va, rkey, 32w0 + POSTCARD_CHUNK_BYTES);
    }
#endif
#ifdef TR_APPEND
    /* va = the list's region (its 64-byte header); the egress adds the batch's offset to copy 0 */
    action region_append(bit<8> qp_idx, bit<24> dest_qp, bit<32> icrc_k_le,
                         bit<16> udp_src_port, bit<48> src_mac, bit<48> dst_mac, bit<32> src_ip,
                         bit<64> va, bit<32> rkey, bit<16> list_idx, bit<32> last_head) {
        common(qp_idx, dest_qp, 32w0, icrc_k_le, udp_src_port, src_mac, dst_mac, src_ip,
               16w60 + 4 * APPEND_BATCH, BTH_OP_RC_WRITE_ONLY);
        write_only(va, rkey, 32w4 * APPEND_BATCH);
        ig_md.list_idx = list_idx;
        ig_md.last_head = last_head;
    }
#endif
#ifdef TR_SKETCH
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) column_offset;
    /* Sketch-Merge (list id = sketch id): one RDMA WRITE of a merged column (SKETCH_ROWS big-endian u32) at
     * va + column * 4 * SKETCH_ROWS; the column's register index (the reporter's order-check slot comes from
     * TrSketchReporter) */
    action region_sketch(bit<8> qp_idx, bit<24> dest_qp, bit<32> icrc_k_le,
                         bit<16> udp_src_port, bit<48> src_mac, bit<48> dst_mac, bit<32> src_ip,
                         bit<64> va, bit<32> rkey, bit<16> col_base, bit<16> last_col,
                         bit<16> reporters_m1) {
        common(qp_idx, dest_qp, 32w0, icrc_k_le, udp_src_port, src_mac, dst_mac, src_ip,
               16w60 + 4 * SKETCH_ROWS, BTH_OP_RC_WRITE_ONLY);
        write_only(va, rkey, 32w4 * SKETCH_ROWS);
        ig_md.sk_col_idx = col_base + hdr.dta_sketch.column;
        ig_md.sk_last_col = last_col;
        ig_md.sk_reporters_m1 = reporters_m1;
        /* column * 4 * SKETCH_ROWS through the hash unit (identity over the bits of the shifted value): an
         * ALU shift from the 16-bit column into the 32-bit offset leaves bf-p4c no PHV slicing */
        hdr.bridge.offset = column_offset.get({(bit<(16 - SKETCH_COLUMN_SHIFT)>)0, hdr.dta_sketch.column,
                                               (bit<SKETCH_COLUMN_SHIFT>)0});
    }
#endif
    /* IPv4 length = 20 + 8 + 12 + AtomicETH 28 + 4 */
    action region_keyinc(bit<8> qp_idx, bit<24> dest_qp, bit<32> mask, bit<32> icrc_k_le,
                         bit<16> udp_src_port, bit<48> src_mac, bit<48> dst_mac, bit<32> src_ip,
                         bit<64> va, bit<32> rkey) {
        common(qp_idx, dest_qp, mask, icrc_k_le, udp_src_port, src_mac, dst_mac, src_ip,
               16w72, BTH_OP_RC_FETCH_ADD);
        hdr.atomic_eth.setValid();
        hdr.atomic_eth.va = va;
        hdr.atomic_eth.rkey = rkey;
        hdr.atomic_eth.compare = 0;
    }
    action no_region() {
        ig_md.handled = 1;
        ig_md.drop = 1;
        ig_md.count_reason = CNT_NO_REGION;
    }
    table tbl_region {
        key = {
            ig_md.collector_idx: exact;
            ig_md.kind: exact;
            ig_md.list_id: exact;
        }
        actions = {
            region_keywrite; region_keyinc; no_region;
#ifdef TR_POSTCARDING
            region_postcard;
#endif
#ifdef TR_APPEND
            region_append;
#endif
#ifdef TR_SKETCH
            region_sketch;
#endif
        }
        default_action = no_region();
        size = MAX_LISTS + 64;
    }
    apply {
        tbl_region.apply();
    }
}
