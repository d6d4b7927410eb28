use super::reports::fabric_with_expected;
use super::topology::{hosts, route, translator_sections};

/// The routes are what the fabric's wiring says: three switches between leaves with the TTLs
/// fabric-tna mirrors, one on a leaf.
#[test]
fn routes_follow_the_wiring() {
    let h = hosts();
    let r = route(&h[0], &h[12], 22);
    let got: Vec<_> = r
        .iter()
        .map(|s| (s.switch, s.ig_port, s.eg_port, s.ttl))
        .collect();
    assert_eq!(got, [(1, 1, 140, 64), (22, 1, 4, 64), (4, 2, 260, 63)]);
    // Host 5 (leaf 2, port 2) sends with TTL 32; bridged to host 4 on its subnet, routed to host 6.
    assert_eq!(route(&h[5], &h[4], 21)[0].ttl, 32);
    assert_eq!(route(&h[5], &h[6], 21)[0].ttl, 31);
    assert_eq!(route(&h[5], &h[6], 21).len(), 1);
}

#[test]
fn the_workload_has_every_shape() {
    let (w, x) = fabric_with_expected(2).unwrap();
    assert_eq!(x.packets, w.reports.len() as u64);
    assert_eq!(x.whole + x.partial, 480);
    assert_eq!(x.one_leaf, 96);
    assert_eq!(x.no_hop, 8);
    assert!(x.partial >= 3 && x.late > 0 && x.repeated > 0, "{x:?}");
}

#[test]
fn the_fabric_configuration_lists_every_switch() {
    let s = translator_sections();
    assert_eq!(s.matches("[[int.switches]]").count(), 6);
    assert!(s.contains(
        "node = 3\nrole = \"leaf\"\nhost_ports = [260, 261, 262, 263, 264, 265, 266, 267]"
    ));
}
