/* dta translator: turn one copy into a RoCEv2 RC frame (DESIGN.md section 4).
 * The region table gives, per (collector, region kind, list), the QP and frame constants and the region's
 * base VA, R_Key and slot mask; the copy's slot comes from the CRC-32 hash of key_le ++ n (n = egress_rid);
 * the PSN comes from the QP's register (a sequence NAK resynchronises it); AckReq is set on every
 * 2^ACK_EVERY_LOG2-th PSN. */
control TrRdmaCraft(inout tr_headers_t hdr, inout tr_eg_md_t eg_md,
                    in egress_intrinsic_metadata_t eg_intr_md,
                    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    CRCPolynomial<bit<32>>(CRC32_POLY, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_poly) slot_hash;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_poly) checksum_hash;

    Register<bit<32>, bit<16>>(MAX_QPS, 0) reg_psn;
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_psn) next_psn = {
        void apply(inout bit<32> psn, out bit<32> cur) {
            cur = psn;
            psn = psn + 1;   /* only the low 24 bits go on the wire, so it wraps at 2^24 */
        }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(reg_psn) resync_psn = {
        void apply(inout bit<32> psn) {
            psn = (bit<32>)hdr.bth.psn;
        }
    };

    action set_region(bit<16> qp_idx, bit<24> dest_qp, bit<32> rkey, bit<64> base, bit<32> slot_mask,
                      bit<32> icrc_k, bit<16> udp_src_port, bit<48> src_mac, bit<48> dst_mac,
                      bit<32> src_ip, bit<32> dst_ip) {
        eg_md.qp_idx = qp_idx;
        eg_md.base = base;
        eg_md.slot_mask = slot_mask;
        eg_md.icrc_k = icrc_k;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.src_addr = src_ip;
        hdr.ipv4.dst_addr = dst_ip;
        hdr.udp.src_port = udp_src_port;
        hdr.bth.setValid();
        hdr.bth.dest_qp = dest_qp;
        hdr.reth.rkey = rkey;
        hdr.atomic_eth.rkey = rkey;
    }
    action no_region() {
        eg_dprsr_md.drop_ctl = 1;
    }
    table tbl_region {
        key = {
            hdr.bridge.collector_idx: exact;
            eg_md.region_kind: exact;
            hdr.bridge.list_idx: exact;
        }
        actions = { set_region; no_region; }
        default_action = no_region();
        size = MAX_LISTS + 64;
    }

    action frame(bit<16> ip_len, bit<8> bth_opcode) {
        hdr.ethernet.ether_type = ETHERTYPE_IPV4;
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = 2;              /* ECT(0) */
        hdr.ipv4.total_len = ip_len;
        hdr.ipv4.identification = 0;   /* constant: part of the per-QP iCRC prefix */
        hdr.ipv4.flags = 0b010;        /* DF */
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.protocol = IP_PROTO_UDP;
        hdr.udp.dst_port = ROCEV2_UDP_PORT;
        hdr.udp.length = ip_len - 20;
        hdr.udp.checksum = 0;
        hdr.bth.opcode = bth_opcode;
        hdr.bth.solicited = 0;
        hdr.bth.mig_req = 1;
        hdr.bth.pad_count = 0;         /* every payload is a multiple of 4 bytes */
        hdr.bth.tver = 0;
        hdr.bth.pkey = BTH_PKEY_DEFAULT;
        hdr.bth.fecn = 0;
        hdr.bth.becn = 0;
        hdr.bth.reserved6 = 0;
        hdr.bth.ack_req = 0;
        hdr.bth.reserved7 = 0;
        hdr.icrc.setValid();
        eg_md.csum_update = 1;
    }

    apply {
        if (hdr.bridge.kind == KIND_RESYNC) {
            resync_psn.execute(hdr.bridge.qp_idx);
            eg_dprsr_md.drop_ctl = 1;
            return;
        }
        eg_md.region_kind = hdr.bridge.kind;
        if (hdr.bridge.kind == KIND_APPEND && eg_intr_md.egress_rid == 1) {
            eg_md.region_kind = KIND_APPEND_HDR;
        }
        tbl_region.apply();

        /* slot of copy n: crc32(key_le ++ n) & (S - 1) */
        eg_md.slot = slot_hash.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16],
                                    hdr.bridge.key[31:24], eg_intr_md.egress_rid[7:0]});
        eg_md.slot = eg_md.slot & eg_md.slot_mask;

        if (eg_md.region_kind == KIND_KEYWRITE) {
            frame(60 + 4 + KW_DATA_BYTES, BTH_OP_RC_WRITE_ONLY);
            bit<32> c = checksum_hash.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16],
                                           hdr.bridge.key[31:24]});
            hdr.kw_checksum.setValid();
            hdr.kw_checksum.checksum = c[7:0] ++ c[15:8] ++ c[23:16] ++ c[31:24];
            hdr.reth.setValid();
            hdr.reth.dma_len = 4 + KW_DATA_BYTES;
            eg_md.offset = ((bit<64>)eg_md.slot) << KW_ENTRY_SHIFT;
        } else if (eg_md.region_kind == KIND_KEYINC) {
            frame(72, BTH_OP_RC_FETCH_ADD);
            hdr.atomic_eth.setValid();
            hdr.atomic_eth.swap_add = hdr.dta_keyincrement.counter;
            hdr.atomic_eth.compare = 0;
            eg_md.offset = ((bit<64>)eg_md.slot) << 3;
        } else if (eg_md.region_kind == KIND_APPEND) {
            frame(60 + 4 * APPEND_BATCH, BTH_OP_RC_WRITE_ONLY);
            hdr.reth.setValid();
            hdr.reth.dma_len = 4 * APPEND_BATCH;
            eg_md.offset = ((bit<64>)hdr.bridge.slot) << 2;
        } else if (eg_md.region_kind == KIND_APPEND_HDR) {
            frame(60 + 8, BTH_OP_RC_WRITE_ONLY);
            hdr.reth.setValid();
            hdr.reth.dma_len = 8;
            hdr.append_batch.setInvalid();
            hdr.append_total.setValid();
            /* total_entries_written = batches * APPEND_BATCH, as a little-endian u64 */
            bit<64> total = ((bit<64>)hdr.bridge.batches) << APPEND_BATCH_LOG2;
            hdr.append_total.total_le = total[7:0] ++ total[15:8] ++ total[23:16] ++ total[31:24] ++
                                        total[39:32] ++ total[47:40] ++ total[55:48] ++ total[63:56];
            eg_md.offset = 0;
        } else {
            /* KIND_POSTCARD: chunk stride 32 bytes */
            frame(60 + POSTCARD_CHUNK_BYTES, BTH_OP_RC_WRITE_ONLY);
            hdr.reth.setValid();
            hdr.reth.dma_len = POSTCARD_CHUNK_BYTES;
            eg_md.offset = ((bit<64>)eg_md.slot) << 5;
        }
        hdr.reth.va = eg_md.base + eg_md.offset;
        hdr.atomic_eth.va = eg_md.base + eg_md.offset;

        eg_md.psn = next_psn.execute(eg_md.qp_idx);
        hdr.bth.psn = eg_md.psn[23:0];
        if (eg_md.psn[ACK_EVERY_LOG2 - 1:0] == (1 << ACK_EVERY_LOG2) - 1) {
            hdr.bth.ack_req = 1;
        }
    }
}
