/* dta translator (egress): Postcarding cell encoding (DESIGN.md section 3). Cell i of the chunk of flow x
 * holding value v is hopsum_i(x) XOR g(v): hopsum_i is CRC-32 (reflected, init and xorout 0xFFFFFFFF) with
 * hop i's polynomial over key_le, g(v) is CRC-32C over v's 4 big-endian bytes. Cells are big-endian u32 (as
 * dta-protocol's PostcardGeometry::encode_chunk writes them and the reference collector reads them with
 * ntohl); cells after hop B stay zero (padding to the 32-byte stride). The ingress cache already holds g(v)
 * (g(blank) for a missing hop), so each cell is only XORed with hopsum_i(key) straight from the hash unit:
 * B hashes per copy, independent of each other and of the placement hash, so they share its stages. */
control TrPostcardEncode(inout tr_headers_t hdr, inout tr_eg_md_t eg_md) {
#define PC_HOPSUM(I, POLY, C) \
    CRCPolynomial<bit<32>>(POLY, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) hop##I##_poly; \
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, hop##I##_poly) hopsum##I; \
    action hop##I() { \
        bit<32> h = hopsum##I.get({hdr.bridge.key[7:0], hdr.bridge.key[15:8], hdr.bridge.key[23:16], \
                                   hdr.bridge.key[31:24]}); \
        hdr.pc_chunk.C = hdr.pc_chunk.C ^ h; \
    }
    PC_HOPSUM(1, 32w0x1e12a700, c0)
#if POSTCARD_HOPS >= 2
    PC_HOPSUM(2, 32w0x65b96595, c1)
#endif
#if POSTCARD_HOPS >= 3
    PC_HOPSUM(3, 32w0x49cf878b, c2)
#endif
#if POSTCARD_HOPS >= 4
    PC_HOPSUM(4, 32w0x36518f0d, c3)
#endif
#if POSTCARD_HOPS >= 5
    PC_HOPSUM(5, 32w0x7a40a908, c4)
#endif
#if POSTCARD_HOPS >= 6
    PC_HOPSUM(6, 32w0x1edc6f41, c5)
#endif
#if POSTCARD_HOPS >= 7
    PC_HOPSUM(7, 32w0x741b8cd7, c6)
#endif
#if POSTCARD_HOPS >= 8
    PC_HOPSUM(8, 32w0x814141ab, c7)
#endif
#undef PC_HOPSUM
    apply {
        hop1();
#if POSTCARD_HOPS >= 2
        hop2();
#endif
#if POSTCARD_HOPS >= 3
        hop3();
#endif
#if POSTCARD_HOPS >= 4
        hop4();
#endif
#if POSTCARD_HOPS >= 5
        hop5();
#endif
#if POSTCARD_HOPS >= 6
        hop6();
#endif
#if POSTCARD_HOPS >= 7
        hop7();
#endif
#if POSTCARD_HOPS >= 8
        hop8();
#endif
    }
}
