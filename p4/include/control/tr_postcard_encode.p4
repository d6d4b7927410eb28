/* dta translator (egress): Postcarding cell encoding (DESIGN.md section 3). Cell i of the chunk of flow x
 * holding value v is hopsum_i(x) XOR g(v): hopsum_i is CRC-32 (reflected, init and xorout 0xFFFFFFFF) with
 * hop i's polynomial over key_le, g(v) is CRC-32C over v's 4 big-endian bytes. Cells are big-endian u32 (as
 * dta-protocol's PostcardGeometry::encode_chunk writes them and the reference collector reads them with
 * ntohl); cells after hop B stay zero (padding to the 32-byte stride). The cell is first replaced by g(v),
 * then XORed with hopsum_i straight from the hash unit. */
control TrPostcardEncode(inout tr_headers_t hdr, inout tr_eg_md_t eg_md) {
    CRCPolynomial<bit<32>>(CRC32C_POLY, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32c_poly;
#if POSTCARD_HOPS >= 1
    CRCPolynomial<bit<32>>(32w0x1e12a700, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop1_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop1_poly) hopsum1;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g1;
    action hop1_h() {
        bit<32> h = hopsum1.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], hdr.bridge.key[31:24]});
        hdr.pc_chunk.c0 = hdr.pc_chunk.c0 ^ h;
    }
    action hop1_g() {
        bit<32> gv = g1.get({hdr.pc_chunk.c0});
        hdr.pc_chunk.c0 = gv;
    }
#endif
#if POSTCARD_HOPS >= 2
    CRCPolynomial<bit<32>>(32w0x65b96595, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop2_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop2_poly) hopsum2;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g2;
    action hop2_h() {
        bit<32> h = hopsum2.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], hdr.bridge.key[31:24]});
        hdr.pc_chunk.c1 = hdr.pc_chunk.c1 ^ h;
    }
    action hop2_g() {
        bit<32> gv = g2.get({hdr.pc_chunk.c1});
        hdr.pc_chunk.c1 = gv;
    }
#endif
#if POSTCARD_HOPS >= 3
    CRCPolynomial<bit<32>>(32w0x49cf878b, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop3_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop3_poly) hopsum3;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g3;
    action hop3_h() {
        bit<32> h = hopsum3.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], hdr.bridge.key[31:24]});
        hdr.pc_chunk.c2 = hdr.pc_chunk.c2 ^ h;
    }
    action hop3_g() {
        bit<32> gv = g3.get({hdr.pc_chunk.c2});
        hdr.pc_chunk.c2 = gv;
    }
#endif
#if POSTCARD_HOPS >= 4
    CRCPolynomial<bit<32>>(32w0x36518f0d, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop4_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop4_poly) hopsum4;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g4;
    action hop4_h() {
        bit<32> h = hopsum4.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], hdr.bridge.key[31:24]});
        hdr.pc_chunk.c3 = hdr.pc_chunk.c3 ^ h;
    }
    action hop4_g() {
        bit<32> gv = g4.get({hdr.pc_chunk.c3});
        hdr.pc_chunk.c3 = gv;
    }
#endif
#if POSTCARD_HOPS >= 5
    CRCPolynomial<bit<32>>(32w0x7a40a908, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop5_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop5_poly) hopsum5;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g5;
    action hop5_h() {
        bit<32> h = hopsum5.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], hdr.bridge.key[31:24]});
        hdr.pc_chunk.c4 = hdr.pc_chunk.c4 ^ h;
    }
    action hop5_g() {
        bit<32> gv = g5.get({hdr.pc_chunk.c4});
        hdr.pc_chunk.c4 = gv;
    }
#endif
#if POSTCARD_HOPS >= 6
    CRCPolynomial<bit<32>>(32w0x1edc6f41, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop6_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop6_poly) hopsum6;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g6;
    action hop6_h() {
        bit<32> h = hopsum6.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], hdr.bridge.key[31:24]});
        hdr.pc_chunk.c5 = hdr.pc_chunk.c5 ^ h;
    }
    action hop6_g() {
        bit<32> gv = g6.get({hdr.pc_chunk.c5});
        hdr.pc_chunk.c5 = gv;
    }
#endif
#if POSTCARD_HOPS >= 7
    CRCPolynomial<bit<32>>(32w0x741b8cd7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop7_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop7_poly) hopsum7;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g7;
    action hop7_h() {
        bit<32> h = hopsum7.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], hdr.bridge.key[31:24]});
        hdr.pc_chunk.c6 = hdr.pc_chunk.c6 ^ h;
    }
    action hop7_g() {
        bit<32> gv = g7.get({hdr.pc_chunk.c6});
        hdr.pc_chunk.c6 = gv;
    }
#endif
#if POSTCARD_HOPS >= 8
    CRCPolynomial<bit<32>>(32w0x814141ab, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop8_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop8_poly) hopsum8;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c_poly) g8;
    action hop8_h() {
        bit<32> h = hopsum8.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], hdr.bridge.key[31:24]});
        hdr.pc_chunk.c7 = hdr.pc_chunk.c7 ^ h;
    }
    action hop8_g() {
        bit<32> gv = g8.get({hdr.pc_chunk.c7});
        hdr.pc_chunk.c7 = gv;
    }
#endif
    apply {
#if POSTCARD_HOPS >= 1
        hop1_g();
        hop1_h();
#endif
#if POSTCARD_HOPS >= 2
        hop2_g();
        hop2_h();
#endif
#if POSTCARD_HOPS >= 3
        hop3_g();
        hop3_h();
#endif
#if POSTCARD_HOPS >= 4
        hop4_g();
        hop4_h();
#endif
#if POSTCARD_HOPS >= 5
        hop5_g();
        hop5_h();
#endif
#if POSTCARD_HOPS >= 6
        hop6_g();
        hop6_h();
#endif
#if POSTCARD_HOPS >= 7
        hop7_g();
        hop7_h();
#endif
#if POSTCARD_HOPS >= 8
        hop8_g();
        hop8_h();
#endif
    }
}
