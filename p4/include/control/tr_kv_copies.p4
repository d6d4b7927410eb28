/* dta translator: Key-Write and Key-Increment fan-out. A report with redundancy N goes to the multicast group
 * the control plane made for (collector, N): N nodes on the collector's port with RIDs 0..N-1, so every copy
 * knows its index n from egress_rid (no shared counter, so reports of different N can interleave).
 * Redundancy 0 or above N_MAX has no entry: dropped and counted. */
control TrKvCopies(inout tr_headers_t hdr, inout tr_ig_md_t ig_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action copies(MulticastGroupId_t grp) {
        ig_tm_md.mcast_grp_a = grp;
        ig_md.handled = 1;
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
    apply {
        if (hdr.dta_keywrite.isValid()) {
            ig_md.redundancy = hdr.dta_keywrite.redundancy;
            hdr.bridge.kind = KIND_KEYWRITE;
            hdr.bridge.key = hdr.dta_keywrite.key;
            hdr.dta_keywrite.setInvalid();
        } else {
            ig_md.redundancy = hdr.dta_keyincrement.redundancy;
            hdr.bridge.kind = KIND_KEYINC;
            hdr.bridge.key = hdr.dta_keyincrement.key;
        }
        hdr.dta_base.setInvalid();
        tbl_copies.apply();
    }
}
