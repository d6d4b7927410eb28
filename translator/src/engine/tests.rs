use super::*;
use crate::config::Config;
use crate::time::Instant;
use dta_protocol::control::Welcome;
use dta_protocol::control::{ResponderQp, CONTROL_VERSION};
use dta_protocol::layout::Region;
use dta_protocol::layout::{AppendGeometry, Geometry, SketchGeometry};

/// A collector whose regions are sketches with ids `sketches` and Append lists with ids `lists`.
fn welcome(last: u8, sketches: &[u32], lists: &[u32]) -> Welcome {
    let sketch = Geometry::Sketch(SketchGeometry::new(2, 8).unwrap());
    let list = Geometry::Append(AppendGeometry::new(64, 4, 16).unwrap());
    let kinds = sketches.iter().map(|&id| (id, sketch));
    Welcome {
        version: CONTROL_VERSION,
        mac: [2, 0, 0, 0, 0, last],
        ip: [198, 18, 0, last],
        qps: vec![ResponderQp {
            qpn: 0x11,
            peer_qpn: 0x100,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: kinds
            .chain(lists.iter().map(|&id| (id, list)))
            .enumerate()
            .map(|(k, (id, geometry))| Region {
                id,
                va: 0x10_0000 * (k as u64 + 1),
                rkey: 1,
                geometry,
            })
            .collect(),
        append_heads: Vec::new(),
    }
}

/// The routes worked out at setup are what `route_index` finds, after a collector is replaced too
/// (the first collector holding an id wins).
#[test]
fn routes_follow_the_collectors() {
    let check = |e: &Engine| {
        for id in 0..=u8::MAX {
            assert_eq!(
                e.sketch_routes[usize::from(id)],
                e.route_index(u32::from(id), false),
                "sketch {id}"
            );
        }
        for id in [0, 1, 2, 3, 5, 7, 9, 300, 70_000, u32::MAX] {
            assert_eq!(e.route_list(id), e.route_index(id, true), "list {id}");
        }
    };
    let mut e = Engine::new(
        Config::default(),
        &[
            welcome(2, &[1, 7, 300], &[5, 70_000]),
            welcome(3, &[7, 9, 255], &[3, 5, u32::MAX]),
        ],
        Instant(0),
    )
    .unwrap();
    check(&e);
    assert_eq!(e.sketch_routes[7], Some((0, 1)));
    assert_eq!(e.sketch_routes[255], Some((1, 2)));
    assert_eq!(e.route_list(5), Some((0, 0)));
    assert_eq!(e.route_list(u32::MAX), Some((1, 2)));
    e.replace_collector(0, &welcome(2, &[2, 9], &[3]), 0, Instant(0))
        .unwrap();
    check(&e);
    assert_eq!(e.sketch_routes[7], Some((1, 0)));
    assert_eq!(e.sketch_routes[9], Some((0, 1)));
    assert_eq!(e.sketch_routes[1], None);
    assert_eq!(e.route_list(5), Some((1, 1)));
    assert_eq!(e.route_list(3), Some((0, 0)));
    assert_eq!(e.route_list(70_000), None);
}
