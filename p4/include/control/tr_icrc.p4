/* dta translator (egress): the RoCEv2 iCRC (DESIGN.md section 4) with the CRC hash engine.
 * The iCRC is an affine function of the frame's bits, so
 *     icrc(frame) = K xor crc0(tail)
 * where tail = the frame from BTH byte 8 (AckReq, PSN) to the end of the payload, crc0 is CRC-32 (reflected)
 * with init 0 and xorout 0, and K = icrc(the same frame with the tail all zero) (leading zeros do not change
 * crc0, so crc0 over the tail alone equals its contribution to the whole). Everything before the tail
 * (IPv4 and UDP headers with the iCRC masks, BTH opcode, flags, P_Key, dest QP, and the frame length) is
 * constant per (QP, region kind), so the control plane computes K per tbl_region entry
 * (controlplane/translator_cp.icrc_prefix_constant) and the ingress bridges it, byte-swapped. The hash
 * covers the whole tail: every byte of every frame is covered. The wire carries the CRC's little-endian
 * bytes: the hash output is byte-swapped on its way out of the hash unit and XORed with the swapped K. */
control TrIcrc(inout tr_headers_t hdr, inout tr_eg_md_t eg_md) {
    CRCPolynomial<bit<32>>(CRC32_POLY, true, false, false, 32w0, 32w0) crc0_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc0_poly) tail_kw;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc0_poly) tail_ki;
#ifdef TR_APPEND
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc0_poly) tail_append;
#endif
#ifdef TR_POSTCARDING
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc0_poly) tail_postcard;
#endif
#ifdef TR_SKETCH
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc0_poly) tail_sketch;
#endif
    bit<32> c;
    /* the wire carries the CRC's bytes in little-endian order; swapping them in the action that reads the
     * hash unit places the hash output's bytes directly (one stage, instead of four byte moves into one
     * container in four dependent stages) */
    action swap_out() {
        hdr.icrc.icrc = c[7:0] ++ c[15:8] ++ c[23:16] ++ c[31:24];
    }
    apply {
        if (hdr.bridge.kind == KIND_KEYWRITE) {
            c = tail_kw.get({hdr.bth.ack_req, hdr.bth.reserved7, hdr.bth.psn,
                hdr.reth.va, hdr.reth.rkey, hdr.reth.dma_len, hdr.kw_checksum.checksum, hdr.dta_keywrite_data.data});
            swap_out();
        } else if (hdr.bridge.kind == KIND_KEYINC) {
            c = tail_ki.get({hdr.bth.ack_req, hdr.bth.reserved7, hdr.bth.psn,
                hdr.atomic_eth.va, hdr.atomic_eth.rkey, hdr.atomic_eth.swap_add, hdr.atomic_eth.compare});
            swap_out();
        }
#ifdef TR_POSTCARDING
        else if (hdr.bridge.kind == KIND_POSTCARD) {
            c = tail_postcard.get({hdr.bth.ack_req, hdr.bth.reserved7, hdr.bth.psn,
                hdr.reth.va, hdr.reth.rkey, hdr.reth.dma_len,
                hdr.pc_chunk.c0, hdr.pc_chunk.c1, hdr.pc_chunk.c2, hdr.pc_chunk.c3,
                hdr.pc_chunk.c4, hdr.pc_chunk.c5, hdr.pc_chunk.c6, hdr.pc_chunk.c7});
            swap_out();
        }
#endif
#ifdef TR_SKETCH
        else if (hdr.bridge.kind == KIND_SKETCH) {
            c = tail_sketch.get({hdr.bth.ack_req, hdr.bth.reserved7, hdr.bth.psn,
                hdr.reth.va, hdr.reth.rkey, hdr.reth.dma_len,
                hdr.sk_column.c0
#if SKETCH_ROWS >= 2
                , hdr.sk_column.c1
#endif
#if SKETCH_ROWS >= 4
                , hdr.sk_column.c2, hdr.sk_column.c3
#endif
#if SKETCH_ROWS >= 8
                , hdr.sk_column.c4, hdr.sk_column.c5, hdr.sk_column.c6, hdr.sk_column.c7
#endif
                });
            swap_out();
        }
#endif
#ifdef TR_APPEND
        else {
            c = tail_append.get({hdr.bth.ack_req, hdr.bth.reserved7, hdr.bth.psn,
                hdr.reth.va, hdr.reth.rkey, hdr.reth.dma_len,
                hdr.append_batch.e0
#if APPEND_BATCH >= 2
                , hdr.append_batch.e1
#endif
#if APPEND_BATCH >= 4
                , hdr.append_batch.e2, hdr.append_batch.e3
#endif
#if APPEND_BATCH >= 8
                , hdr.append_batch.e4, hdr.append_batch.e5, hdr.append_batch.e6, hdr.append_batch.e7
#endif
#if APPEND_BATCH >= 16
                , hdr.append_batch.e8, hdr.append_batch.e9, hdr.append_batch.e10, hdr.append_batch.e11
                , hdr.append_batch.e12, hdr.append_batch.e13, hdr.append_batch.e14, hdr.append_batch.e15
#endif
                });
            swap_out();
        }

#endif

        hdr.icrc.icrc = hdr.icrc.icrc ^ hdr.bridge.icrc_k_le;
    }
}
