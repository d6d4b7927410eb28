"""Models of the Postcarding (-DTR_POSTCARDING) and Sketch-Merge (-DTR_SKETCH) data paths, transcribed from the P4
(stateful ALU programs, the const entries of the tables keyed on their outputs) and run against the DESIGN.md /
Rust-translator semantics; plus the constants the P4 relies on. No switch needed.

The stateful ALU predicate is modelled as bf-p4c/Tofino define it: a one-hot 4-bit value, bit (2 * cmphi + cmplo).
"""
import os
import re
import struct

import pytest

from crc_ref import crc32_reflected

HERE = os.path.dirname(os.path.abspath(__file__))
P4 = os.path.join(HERE, "..")
CRC32, CRC32C = 0x04C11DB7, 0x1EDC6F41
# DESIGN.md section 3 / dta-protocol HOP_POLYNOMIALS (written out, not read from the code under test)
HOP_POLYNOMIALS = [0x1E12A700, 0x65B96595, 0x49CF878B, 0x36518F0D, 0x7A40A908, 0x1EDC6F41, 0x741B8CD7, 0x814141AB]
BLANK = 0xFFFFFFFF


def read(path):
    with open(os.path.join(P4, path)) as f:
        return f.read()


def hopsum(hop, key):
    return crc32_reflected(struct.pack("<I", key), HOP_POLYNOMIALS[hop - 1])


def g(v):
    return crc32_reflected(struct.pack(">I", v), CRC32C)


def encode_chunk(key, values, hops):
    """dta-protocol PostcardGeometry::encode_chunk: cells 1..B big-endian hopsum ^ g(v) (blank if missing), zero pad."""
    cells = [hopsum(h, key) ^ g(values[h - 1] if h - 1 < len(values) else BLANK) for h in range(1, hops + 1)]
    return b"".join(struct.pack(">I", c) for c in cells) + bytes(32 - 4 * hops)


def predicate(cmplo, cmphi):
    return 1 << (2 * int(cmphi) + int(cmplo))


# ------------------------------------------------------------------------------------------------ constants
def test_hop_polynomials_in_the_egress_are_the_contracts():
    enc = read("include/control/tr_postcard_encode.p4")
    found = re.findall(r"PC_HOPSUM\((\d), 32w0x([0-9a-fA-F]{8}), c(\d)\)", enc)
    assert [(int(i), int(q, 16), int(c)) for i, q, c in found] == [
        (i + 1, q, i) for i, q in enumerate(HOP_POLYNOMIALS)]


def test_g_of_blank_is_all_ones():
    # the cache is initialised and cleared to PC_G_BLANK and the egress XORs only hopsum_i
    assert g(BLANK) == 0xFFFFFFFF
    assert "const bit<32> PC_G_BLANK = 0xFFFFFFFF;" in read("include/control/tr_postcard_cache.p4")


def test_flushed_slot_key_never_maps_to_the_same_slot():
    # a flush leaves ~key in the tag; crc32(~k) ^ crc32(k) is a constant with bit 0 set, so ~k sits in another
    # slot for every cache size >= 2 and no flow can hit a flushed slot
    d = {crc32_reflected(struct.pack("<I", k ^ 0xFFFFFFFF), CRC32) ^ crc32_reflected(struct.pack("<I", k), CRC32)
         for k in (0, 1, 0x12345678, 0xFFFFFFFF, 0xDEADBEEF)}
    assert len(d) == 1 and d.pop() & 1


def test_sketch_column_shift():
    define = read("include/define.p4")
    for rows, shift in ((1, 2), (2, 3), (4, 4), (8, 5)):
        assert f"#if SKETCH_ROWS == {rows}\n#define SKETCH_COLUMN_SHIFT {shift}" in define \
            or f"#elif SKETCH_ROWS == {rows}\n#define SKETCH_COLUMN_SHIFT {shift}" in define
        assert 4 * rows == 1 << shift


# ------------------------------------------------------------------------------------------------ Postcarding
PC_EVICT, PC_STORE, PC_EVICT_HI, PC_FLUSH = 1, 2, 4, 8


def test_postcard_modes_are_the_predicate_values():
    cache = read("include/control/tr_postcard_cache.p4")
    for name, val in (("PC_EVICT", 1), ("PC_STORE", 2), ("PC_EVICT_HI", 4), ("PC_FLUSH", 8)):
        assert re.search(rf"const bit<8> {name} *= {val};", cache)
    assert predicate(False, False) == PC_EVICT and predicate(True, False) == PC_STORE
    assert predicate(False, True) == PC_EVICT_HI and predicate(True, True) == PC_FLUSH


class P4PostcardCache:
    """TrPostcardPrep + TrPostcardCache + TrPostcardEncode, register by register."""

    def __init__(self, size, hops):
        self.size, self.hops = size, hops
        self.reg_key = [0] * size
        self.reg_tag = [(0, 0)] * size
        self.cells = [[BLANK] * size for _ in range(hops)]

    def postcard(self, key, hop, value, path_len=None):
        """Returns None (consumed) or (chunk key, 32-byte chunk as the egress writes it to every copy)."""
        path_len = self.hops if path_len is None else path_len
        if not 1 <= hop <= path_len <= self.hops:       # tbl_pc_valid
            return "bad_hop"
        target_m1, gv = path_len - 1, g(value)
        idx = crc32_reflected(struct.pack("<I", key), CRC32) & (self.size - 1)
        old_key, self.reg_key[idx] = self.reg_key[idx], key                  # swap_key
        tkey, count = self.reg_tag[idx]                                       # tag
        cmplo, cmphi = tkey == key, count >= target_m1
        mode = predicate(cmplo, cmphi)
        if cmplo and cmphi:
            tkey = key ^ 0xFFFFFFFF
        elif cmplo:
            count += 1
        else:
            tkey, count = key, 1
        self.reg_tag[idx] = (tkey, count)
        chunk = [None] * self.hops
        for i in range(1, self.hops + 1):                                     # tbl_cell_i
            reg, mine = self.cells[i - 1], hop == i
            if mode == PC_STORE:
                if mine:
                    reg[idx] = gv
            elif mode == PC_FLUSH:
                if mine:
                    reg[idx], chunk[i - 1] = BLANK, gv
                else:
                    chunk[i - 1], reg[idx] = reg[idx], BLANK
            else:                                                             # PC_EVICT, PC_EVICT_HI
                chunk[i - 1], reg[idx] = reg[idx], (gv if mine else BLANK)
        if mode == PC_STORE:                                                  # tbl_pc_send
            return None
        if mode == PC_FLUSH:
            out_key = key
        elif all(c == BLANK for c in chunk):
            return None
        else:
            out_key = old_key
        cells = [c ^ hopsum(i + 1, out_key) for i, c in enumerate(chunk)]   # TrPostcardEncode
        return out_key, b"".join(struct.pack(">I", c) for c in cells) + bytes(32 - 4 * self.hops)


def colliding_keys(size, n, start=1):
    slot = crc32_reflected(struct.pack("<I", start), CRC32) & (size - 1)
    keys, k = [start], start + 1
    while len(keys) < n:
        if crc32_reflected(struct.pack("<I", k), CRC32) & (size - 1) == slot:
            keys.append(k)
        k += 1
    return keys


@pytest.mark.parametrize("order", [[1, 2, 3, 4, 5], [5, 3, 1, 4, 2]])
def test_complete_path_is_flushed_once_with_the_rust_encoding(order):
    c = P4PostcardCache(64, 5)
    key, vals = 0xC0FFEE, [11, 22, 33, 44, 55]
    outs = [c.postcard(key, h, vals[h - 1]) for h in order]
    assert outs[:-1] == [None] * 4
    assert outs[-1] == (key, encode_chunk(key, vals, 5))
    # the same flow again (its next packet): a new round, flushed after B postcards again
    outs = [c.postcard(key, h, vals[h - 1] + 1) for h in range(1, 6)]
    assert outs[:-1] == [None] * 4 and outs[-1] == (key, encode_chunk(key, [v + 1 for v in vals], 5))


def test_eviction_writes_the_evicted_flows_chunk():
    c = P4PostcardCache(16, 5)
    a, b = colliding_keys(16, 2)
    assert c.postcard(a, 1, 7) is None and c.postcard(a, 2, 8) is None
    out = c.postcard(b, 3, 9)                     # b evicts a: a's chunk, hops 3..5 blank
    assert out == (a, encode_chunk(a, [7, 8], 5))
    outs = [c.postcard(b, h, 100 + h) for h in (1, 2, 4, 5)]
    assert outs[-1] == (b, encode_chunk(b, [101, 102, 9, 104, 105], 5))


def test_path_length_flush_and_evict_hi():
    c = P4PostcardCache(16, 5)
    a, b = colliding_keys(16, 2, start=5)
    # opcode 0x06 with path_len 3: flushed after 3 hops, cells 4 and 5 blank
    assert [c.postcard(a, h, h, path_len=3) for h in (1, 2)] == [None, None]
    assert c.postcard(a, 3, 3, path_len=3) == (a, encode_chunk(a, [1, 2, 3], 5))
    # a flow with 4 of 5 postcards is evicted by a path of length 2 (count 4 >= 1: the EVICT_HI mode)
    assert [c.postcard(a, h, h) for h in (1, 2, 3, 4)] == [None] * 4
    assert c.postcard(b, 2, 20, path_len=2) == (a, encode_chunk(a, [1, 2, 3, 4], 5))
    assert c.postcard(b, 1, 10, path_len=2) == (b, encode_chunk(b, [10, 20], 5))


def test_bad_hops_are_dropped():
    c = P4PostcardCache(16, 5)
    assert c.postcard(1, 0, 1) == "bad_hop" and c.postcard(1, 6, 1) == "bad_hop"
    assert c.postcard(1, 3, 1, path_len=2) == "bad_hop" and c.postcard(1, 1, 1, path_len=6) == "bad_hop"


def test_tbl_pc_valid_entries_cover_exactly_the_valid_pairs():
    cache = read("include/control/tr_postcard_cache.p4")
    pairs = set()
    for block in re.finditer(r"#if POSTCARD_HOPS >= (\d)\n((?:            \(\d, \d\): valid\(\d\);\n)+)#endif", cache):
        for h, pl, m1 in re.findall(r"\((\d), (\d)\): valid\((\d)\);", block.group(2)):
            assert int(pl) == int(block.group(1)) and int(m1) == int(pl) - 1
            pairs.add((int(h), int(pl)))
    assert pairs == {(h, pl) for pl in range(1, 9) for h in range(1, pl + 1)}


# ------------------------------------------------------------------------------------------------ Sketch-Merge
SK_GAP, SK_IN_ORDER, SK_GAP_HI, SK_IN_ORDER_LAST = 1, 2, 4, 8


def test_sketch_order_values_are_the_predicate_values():
    sk = read("include/control/tr_sketch_merge.p4")
    for name, val in (("SK_GAP_OR_DUP", 1), ("SK_IN_ORDER", 2), ("SK_GAP_OR_DUP_HI", 4), ("SK_IN_ORDER_LAST", 8)):
        assert re.search(rf"const bit<8> {name} *= {val};", sk)


class P4SketchMerge:
    """TrSketchMerge for one sketch: returns ("write", column, counters), "merged", "duplicate" or ("nack", seq)."""

    def __init__(self, columns, rows, reporters):
        self.columns, self.rows, self.reporters = columns, rows, reporters
        self.expected = [0] * reporters          # reg_expected and reg_expected_copy (same updates)
        self.contrib = [0] * columns
        self.acc = [[0] * columns for _ in range(rows)]

    def report(self, reporter, column, op, counters):
        last_col, e = self.columns - 1, self.expected[reporter]
        cmplo, cmphi = e == column, e >= last_col
        order = predicate(cmplo, cmphi)
        last = (e - 1) & 0xFFFF                    # read_order's output
        if cmplo:
            self.expected[reporter] = 0 if cmphi else e + 1
        if order in (SK_IN_ORDER, SK_IN_ORDER_LAST):
            n = self.contrib[column]                 # contribute
            n = 0 if n >= self.reporters - 1 else n + 1
            self.contrib[column] = n
            out = []
            for r in range(self.rows):               # tbl_sk_row_r
                v, c = self.acc[r][column], counters[r]
                merged = min(v + c, 0xFFFFFFFF) if op == 0 else max(v, c)
                self.acc[r][column] = 0 if n == 0 else merged
                out.append(merged)
            return ("write", column, out) if n == 0 else "merged"
        behind = (column - last) & 0xFFFF            # classify; tbl_sk_outcome
        if behind == 0 or behind & 0x8000:
            return "duplicate"
        return ("nack", last & 0xFF)


def rust_merge(reports, columns, rows, reporters):
    """translator/src/primitives/sketch.rs, one column per WRITE (the P4 does not batch contiguous columns)."""
    acc = [[0] * rows for _ in range(columns)]
    contrib, expected, out = [0] * columns, [0] * reporters, []
    for rep, col, op, counters in reports:
        exp = expected[rep]
        if col != exp:
            out.append("duplicate" if col < exp else ("nack", (exp - 1) & 0xFF))
            continue
        acc[col] = [min(a + c, 0xFFFFFFFF) if op == 0 else max(a, c) for a, c in zip(acc[col], counters)]
        contrib[col] += 1
        expected[rep] = (col + 1) % columns
        if contrib[col] >= reporters:
            out.append(("write", col, acc[col]))
            acc[col], contrib[col] = [0] * rows, 0
        else:
            out.append("merged")
    return out


@pytest.mark.parametrize("op", [0, 1])
def test_sketch_merge_matches_the_rust_translator(op):
    import random
    rng = random.Random(op)
    columns, rows, reporters = 6, 4, 3
    reports = []
    pos = [0] * reporters
    for _ in range(200):
        rep = rng.randrange(reporters)
        col = pos[rep]
        r = rng.random()
        if r < 0.1:
            col = (col + 2) % columns                   # a gap
        elif r < 0.2 and col > 0:
            col -= 1                                    # a duplicate
        else:
            pos[rep] = (col + 1) % columns
        counters = [rng.choice([0, 1, 5, 0xFFFFFFF0, rng.getrandbits(32)]) for _ in range(rows)]
        reports.append((rep, col, op, counters))
    p4 = P4SketchMerge(columns, rows, reporters)
    assert [p4.report(*r) for r in reports] == rust_merge(reports, columns, rows, reporters)


def test_sketch_column_written_when_the_last_reporter_sends_it():
    p4 = P4SketchMerge(4, 2, 2)
    assert p4.report(0, 0, 0, [1, 2]) == "merged"
    assert p4.report(1, 0, 0, [10, 0xFFFFFFFF]) == ("write", 0, [11, 0xFFFFFFFF])   # saturating sum
    assert p4.report(0, 2, 0, [1, 1]) == ("nack", 0)       # skipped column 1: last in order is 0
    assert p4.report(0, 0, 0, [1, 1]) == "duplicate"
    assert p4.report(1, 1, 0, [3, 4]) == "merged"
