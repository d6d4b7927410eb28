/* dta translator (ingress): Key-Write and Key-Increment fan-out. A report with redundancy N goes to the
 * multicast group the control plane made for (collector, N): N nodes on the collector's port with RIDs
 * 0..N-1, so every copy knows its index n from egress_rid (no shared counter, so reports of different N can
 * interleave). Redundancy 0 or above N_MAX has no entry: dropped and counted. The payload is the same for all
 * copies and is built here: crc32(key_le) as 4 little-endian bytes ++ the data (Key-Write), or the counter
 * as the FETCH_ADD operand (Key-Increment). */
control TrKvCopies(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    CRCPolynomial<bit<32>>(CRC32_POLY, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_poly) checksum_hash;

    action copies(MulticastGroupId_t grp) {
        ig_tm_md.mcast_grp_a = grp;
    }
    action bad_redundancy() {
        ig_md.handled = 1;
        ig_md.count_reason = CNT_BAD_REDUNDANCY;
        ig_md.drop = 1;
    }
    table tbl_copies {
        key = { ig_md.collector_idx: exact; ig_md.redundancy: exact; }
        actions = { copies; bad_redundancy; }
        default_action = bad_redundancy();
        size = 2048;
    }
    action keywrite() {
        ig_md.redundancy = hdr.dta_keywrite.redundancy;
        hdr.bridge.kind = KIND_KEYWRITE;
        hdr.bridge.key = hdr.dta_keywrite.key;
        bit<32> c = checksum_hash.get({hdr.dta_keywrite.key[7:0], hdr.dta_keywrite.key[15:8],
                                       hdr.dta_keywrite.key[23:16], hdr.dta_keywrite.key[31:24]});
        hdr.kw_checksum.setValid();
        hdr.kw_checksum.checksum = c[7:0] ++ c[15:8] ++ c[23:16] ++ c[31:24];
        hdr.dta_keywrite.setInvalid();
    }
    action keyincrement() {
        ig_md.redundancy = hdr.dta_keyincrement.redundancy;
        hdr.bridge.kind = KIND_KEYINC;
        hdr.bridge.key = hdr.dta_keyincrement.key;
        hdr.atomic_eth.swap_add = hdr.dta_keyincrement.counter;
        hdr.dta_keyincrement.setInvalid();
    }
    apply {
        if (hdr.dta_keywrite.isValid()) {
            keywrite();
        } else if (hdr.dta_keyincrement.isValid()) {
            keyincrement();
        }
        hdr.dta_base.setInvalid();
        ig_md.handled = 1;
        tbl_copies.apply();
    }
}
