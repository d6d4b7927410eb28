use std::path::Path;

use dta_protocol::int::mapping::EventLists;
use dta_protocol::layout::{AppendGeometry, Geometry, KeyWriteGeometry};
use dta_protocol::MacAddr;

use super::Config;

#[test]
fn example_config_parses() {
    let c = Config::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/collector.toml"
    )))
    .unwrap();
    assert_eq!(
        c.regions[0].geometry,
        Geometry::KeyWrite(KeyWriteGeometry::new(65536, 8, 4).unwrap())
    );
    assert!(c
        .regions
        .iter()
        .any(|r| r.id == 3
            && r.geometry == Geometry::Append(AppendGeometry::new(4096, 4, 16).unwrap())));
    assert_eq!(c.control.unwrap().bind.to_string(), "127.0.0.1:40050");
    assert_eq!(c.postcarding.universe().unwrap().len(), 64);
}

#[test]
fn refuses_bad_configs_with_reasons() {
    let cases = [
        ("[[region]]\nkind = \"key_write\"\nslots = 100\nentry_size = 8\nn_max = 4\n", "power of two"),
        ("[[region]]\nkind = \"sketch\"\nid = 300\nrows = 2\ncolumns = 4\n", "8-bit"),
        ("[[region]]\nkind = \"append\"\nid = 1\nentries = 16\nentry_size = 4\nbatch_size = 16\n[[region]]\nkind = \"append\"\nid = 1\nentries = 16\nentry_size = 4\nbatch_size = 16\n", "two append regions with id 1"),
        ("[[region]]\nkind = \"key_increment\"\nid = 2\nslots = 16\nn_max = 2\n", "only append and sketch"),
        ("[control]\ntoken = \"x\"\n", "bind"),
        ("[collector]\nmac = \"02:00\"\n", "bad MAC"),
        ("[faults]\ndrop = 2.0\n", "not in 0..=1"),
        ("[postcarding]\nranges = [[5, 1]]\n", "empty"),
        ("[collector]\npath_mtu = 1000\n", "path_mtu"),
        ("[collector]\nvlan = 4095\n", "vlan 4095 is not a VLAN id"),
        ("[collector]\nvlan = 0\n", "vlan 0 is not a VLAN id"),
        ("[[region]]\nkind = \"key_increment\"\nslots = 16\nn_max = 2\nredundancy = 3\n", "redundancy 3 is not within 1..=2"),
        ("[[region]]\nkind = \"key_increment\"\nslots = 16\nn_max = 2\nredundancy = 0\n", "redundancy 0 is not within 1..=2"),
        ("[[region]]\nkind = \"append\"\nid = 1\nentries = 16\nentry_size = 4\nbatch_size = 16\nredundancy = 1\n", "only key_write, key_increment and postcarding"),
    ];
    for (text, why) in cases {
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(e.contains(why), "{text:?}: {e}");
    }
    let c = Config::parse("[collector]\nmac = \"02:00:00:00:0a:ff\"\n").unwrap();
    assert_eq!(c.collector.mac, MacAddr([2, 0, 0, 0, 10, 255]));
}

/// Issue 26, item 9: `max_dest_rd_atomic = 4294967295` started and then aborted allocating 64 GiB at
/// the first hello; `redundncy = 2` in a `[[region]]` was silently ignored. Both are refused at load.
#[test]
fn config_traps_are_refused_at_load() {
    let limit = "(Soft-RoCE takes at most 128 atomics in flight per QP, ConnectX NICs 16)";
    for rd in [0u64, 129, 4294967295] {
        let e = Config::parse(&format!("[collector]\nmax_dest_rd_atomic = {rd}\n"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "configuration: [collector] max_dest_rd_atomic = {rd} is not within 1..=128 {limit}"
            )
        );
    }
    for rd in [1, 16, 128] {
        Config::parse(&format!("[collector]\nmax_dest_rd_atomic = {rd}\n")).unwrap();
    }
    let region = "[[region]]\nkind = \"key_write\"\nslots = 256\nentry_size = 8\nn_max = 2\n";
    let e = Config::parse(&format!("{region}redundncy = 2\n"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown field `redundncy`, expected one of `slots`, `entry_size`, `n_max`"),
        "{e}"
    );
    let e = Config::parse(&format!("{region}colour = \"blue\"\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `colour`"), "{e}");
    let c = Config::parse(&format!("{region}redundancy = 2\n")).unwrap();
    assert_eq!(c.regions[0].redundancy, Some(2));
    // Every other section already refused unknown keys; kept so.
    for (text, key) in [
        ("[collector]\nmax_dest_rd_atomc = 4\n", "max_dest_rd_atomc"),
        (
            "[control]\nbind = \"127.0.0.1:1\"\ntoken = \"t\"\ntokn = \"u\"\n",
            "tokn",
        ),
        ("[http]\nbind = \"127.0.0.1:1\"\nbnd = 1\n", "bnd"),
        ("[faults]\ndorp = 0.1\n", "dorp"),
        ("[postcarding]\nrange = []\n", "range"),
        ("[int]\ndrop_lst = 1\n", "drop_lst"),
        ("[colector]\n", "colector"),
    ] {
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(
            e.contains(&format!("unknown field `{key}`")),
            "{text:?}: {e}"
        );
    }
}

/// The example's `[int]` block, uncommented, with the key_write entries it asks for.
fn example_with_int() -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/collector.toml"
    ))
    .unwrap();
    let (before, rest) = text.split_once("# --- int ---\n").unwrap();
    let (block, after) = rest.split_once("# --- end int ---\n").unwrap();
    let block: String = block
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix('#').unwrap_or(l).trim_start()))
        .collect();
    format!("{before}{block}{after}").replacen("entry_size = 8", "entry_size = 16", 1)
}

#[test]
fn example_int_block_parses_once_uncommented() {
    let c = Config::parse(&example_with_int()).unwrap();
    let int = c.int.clone().unwrap();
    assert_eq!(
        (int.drop_list.clone(), int.queue_list.clone(), int.hops),
        (EventLists::one(4), EventLists::one(5), Some(5))
    );
    assert_eq!(int.node_universe().unwrap().unwrap().len(), 64);
    assert_eq!(c.int_hops(), Some(5));
    // As the example ships (block commented): no [int], hops from the postcarding region.
    let shipped = Config::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/collector.toml"
    )))
    .unwrap();
    assert!(shipped.int.is_none());
    assert_eq!(shipped.int_hops(), Some(5));
    // The block alone, without the larger entries, is refused for the key_write region.
    let e = Config::parse(&example_with_int().replacen("entry_size = 16", "entry_size = 8", 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("entries hold 4 data bytes, fewer than a 12-byte hop record"),
        "{e}"
    );
}

#[test]
fn refuses_bad_int_sections_with_reasons() {
    let list = |id: u32, size: u32| {
        format!("[[region]]\nkind = \"append\"\nid = {id}\nentries = 16\nentry_size = {size}\nbatch_size = 16\n")
    };
    let cases = [
        (
            format!("[int]\ndrop_list = 4\n{}", list(3, 16)),
            "[int] drop_list = 4: no append region with id 4",
        ),
        (
            format!("[int]\nqueue_list = 3\n{}", list(3, 4)),
            "[int] queue_list = 3: the list's entry_size is 4, INT events are 16 bytes",
        ),
        (
            format!("[int]\ndrop_list = 3\nqueue_list = 3\n{}", list(3, 16)),
            "list 3 is named twice",
        ),
        (
            format!("[int]\ndrop_list = [3, 6]\n{}", list(3, 16)),
            "[int] drop_list = 6: no append region with id 6",
        ),
        (
            format!(
                "[int]\ndrop_list = [3, 6]\nqueue_list = [7, 6]\n{}{}{}",
                list(3, 16),
                list(6, 16),
                list(7, 16)
            ),
            "list 6 is named twice",
        ),
        ("[int]\nhops = 0\n".to_string(), "hops = 0"),
        ("[int]\nhops = 300\n".to_string(), "hops"),
        (
            "[int]\nnodes = [[9, 2]]\n".to_string(),
            "[int] nodes: configuration: postcarding range [9, 2] is empty",
        ),
        ("[int]\nlists = 3\n".to_string(), "unknown field `lists`"),
        (
            "[int]\n[[region]]\nkind = \"postcarding\"\nchunks = 16\nhops = 4\nn_max = 1\n"
                .to_string(),
            "no node ids to decode paths with",
        ),
    ];
    for (text, why) in cases {
        let e = Config::parse(&text).unwrap_err().to_string();
        assert!(e.contains(why), "{text:?}: {e}");
    }
    // One list per translator worker.
    let c = Config::parse(&format!(
        "[int]\ndrop_list = [3, 6]\n{}{}",
        list(3, 16),
        list(6, 16)
    ))
    .unwrap();
    assert_eq!(c.int.unwrap().drop_list.ids(), [3, 6]);
    // A postcarding region with [int] nodes (and no [postcarding]) is fine.
    let c = Config::parse(
        "[int]\nnodes = [[1, 4]]\n[[region]]\nkind = \"postcarding\"\nchunks = 16\nhops = 4\nn_max = 1\n",
    )
    .unwrap();
    assert_eq!(
        c.int.unwrap().node_universe().unwrap(),
        Some(vec![1, 2, 3, 4])
    );
}
