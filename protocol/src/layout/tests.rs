use super::*;
use crate::hash::{hop_checksum, postcard_g, POSTCARD_BLANK};

#[test]
fn key_write_design_vectors() {
    let g = KeyWriteGeometry::new(256, 8, 4).unwrap();
    // Key 1: checksum 0x99f8b879 (DESIGN.md section 3), slots 173, 100, 212, 95 (see hash.rs).
    let offsets: Vec<u64> = (0..4).map(|n| g.offset(1, n)).collect();
    assert_eq!(offsets, [173 * 8, 100 * 8, 212 * 8, 95 * 8]);
    let mut e = [0u8; 8];
    g.encode_entry(1, &[0xAA, 0xBB, 0xCC, 0xDD], &mut e)
        .unwrap();
    assert_eq!(e, [0x79, 0xb8, 0xf8, 0x99, 0xAA, 0xBB, 0xCC, 0xDD]);
    assert_eq!(
        g.decode_entry(&e),
        Some((0x99f8_b879, &[0xAA, 0xBB, 0xCC, 0xDD][..]))
    );
    assert!(g.encode_entry(1, &[0; 5], &mut e).is_none());
    assert_eq!(g.len(), 2048);
}

#[test]
fn rejects_bad_geometries() {
    assert!(KeyWriteGeometry::new(100, 8, 2).is_err());
    assert!(KeyWriteGeometry::new(256, 12, 2).is_err());
    assert!(KeyWriteGeometry::new(256, 8, 0).is_err());
    assert!(KeyWriteGeometry::new(256, 8, 9).is_err());
    assert!(AppendGeometry::new(100, 4, 16).is_err());
    assert!(AppendGeometry::new(64, 4, 3).is_err());
    assert!(PostcardGeometry::new(64, 9, 2).is_err());
    assert!(SketchGeometry::new(0, 4).is_err());
    let bad: Result<Geometry, _> =
        serde_json::from_str(r#"{"kind":"key_write","slots":100,"entry_size":8,"n_max":2}"#);
    assert!(bad.unwrap_err().to_string().contains("power of two"));
}

#[test]
fn geometry_serde_round_trip() {
    let g = Geometry::Append(AppendGeometry::new(1024, 4, 16).unwrap());
    let s = serde_json::to_string(&g).unwrap();
    assert_eq!(
        s,
        r#"{"kind":"append","entries":1024,"entry_size":4,"batch_size":16}"#
    );
    assert_eq!(serde_json::from_str::<Geometry>(&s).unwrap(), g);
}

#[test]
fn key_increment_is_aligned() {
    let g = KeyIncrementGeometry::new(1 << 16, 2).unwrap();
    for key in 0..1000 {
        for n in 0..2 {
            let o = g.offset(key, n);
            assert_eq!(o % 8, 0);
            assert!(o < g.len());
        }
    }
}

#[test]
fn postcard_chunk_cells() {
    let g = PostcardGeometry::new(1024, 5, 2).unwrap();
    let chunk = g.encode_chunk(0xdeadbeef, &[7, 8, 9]);
    for hop in 1..=5u8 {
        let at = usize::from(hop - 1) * 4;
        let cell = u32::from_be_bytes(chunk[at..at + 4].try_into().unwrap());
        let v = [7, 8, 9, POSTCARD_BLANK, POSTCARD_BLANK][usize::from(hop - 1)];
        assert_eq!(cell ^ hop_checksum(hop, 0xdeadbeef).unwrap(), postcard_g(v));
    }
    assert_eq!(&chunk[20..], &[0u8; 12]);
    // zlib.crc32(bytes(5)) & 1023 = 797; copy 1 of 0xdeadbeef: 0xfc8a4ffc & 1023 = 1020 (hash.rs).
    assert_eq!(g.offset(0, 0), 797 * 32);
    assert_eq!(g.offset(0xdeadbeef, 1), 1020 * 32);
}

/// The encoder before [`POSTCARD_TABLES`]: one cell at a time through the per-hop tables.
fn encode_chunk_per_cell(g: &PostcardGeometry, key: u32, values: &[u32]) -> [u8; CHUNK_STRIDE] {
    let mut chunk = [0u8; CHUNK_STRIDE];
    for hop in 1..=g.hops() {
        let v = values
            .get(usize::from(hop - 1))
            .copied()
            .unwrap_or(POSTCARD_BLANK);
        let cell = crate::roce::crc_table::postcard_cell(key, hop, v).unwrap();
        let at = usize::from(hop - 1) * CELL_LEN;
        chunk[at..at + CELL_LEN].copy_from_slice(&cell.to_be_bytes());
    }
    chunk
}

/// The lane encoder writes the bytes the per-cell one did: every B, keys and values at random,
/// value lists shorter than, as long as and longer than B.
#[test]
fn chunk_encoders_agree() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for hops in 1..=MAX_HOPS {
        let g = PostcardGeometry::new(64, hops, 2).unwrap();
        for _ in 0..2000 {
            let key = rand() as u32;
            let n = (rand() % 10) as usize;
            let values: Vec<u32> = (0..n)
                .map(|_| match rand() % 4 {
                    0 => POSTCARD_BLANK,
                    1 => rand() as u32 % 8,
                    _ => rand() as u32,
                })
                .collect();
            assert_eq!(
                g.encode_chunk(key, &values),
                encode_chunk_per_cell(&g, key, &values),
                "B {hops}, key {key:#x}, values {values:?}"
            );
            let row: [u32; MAX_HOPS as usize] = std::array::from_fn(|_| rand() as u32);
            assert_eq!(
                g.encode_chunk_of(key, &row),
                encode_chunk_per_cell(&g, key, &row),
                "B {hops}, key {key:#x}, row {row:?}"
            );
        }
    }
}

#[test]
fn append_wraps_at_capacity() {
    let g = AppendGeometry::new(32, 4, 16).unwrap();
    assert_eq!(g.entry_offset(0), 64);
    assert_eq!(g.entry_offset(31), 64 + 31 * 4);
    assert_eq!(g.entry_offset(32), 64);
    assert_eq!(g.entry_offset(48), 64 + 16 * 4);
    assert_eq!(g.len(), 64 + 128);
    assert_eq!(
        AppendGeometry::decode_head(&AppendGeometry::encode_head(0x0102)),
        Some(0x0102)
    );
    assert_eq!(AppendGeometry::encode_head(1), [1, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn sketch_columns() {
    let g = SketchGeometry::new(4, 1024).unwrap();
    assert_eq!(g.column_offset(0), 0);
    assert_eq!(g.column_offset(3), 48);
    assert_eq!(g.len(), 16 * 1024);
}

#[test]
fn region_bounds() {
    let r = Region {
        id: 0,
        va: 0x1000,
        rkey: 1,
        geometry: Geometry::Sketch(SketchGeometry::new(1, 4).unwrap()),
    };
    assert!(r.contains(0x1000, 16));
    assert!(!r.contains(0x1000, 17));
    assert!(!r.contains(0xFFF, 1));
    assert!(!r.contains(u64::MAX, 2));
}
