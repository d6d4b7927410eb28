//! Hops from the fabric's shape (`int.hop_mode = "topology"`), for fabrics where the inner TTL does not
//! count hops.
//!
//! Why: fabric-tna (SD-Fabric) decrements only the MPLS TTL while a packet carries a label between
//! leaves, nothing when it bridges, and mirrors the packet with the label stripped, so a leaf, spine,
//! leaf path reports inner TTLs 64, 64, 63; hosts with another initial TTL, or flows that crossed routers
//! before the fabric, shift every hop. What the fabric's controller knows does not move: each switch's
//! role and which of a leaf's ports face hosts. A v0.5 report names its ingress and egress ports (v2.0:
//! the level 1 interface ids), and in a two-tier leaf-spine fabric that places every report:
//!
//! | reporting switch | ingress faces | egress faces | hop | path |
//! |------------------|---------------|--------------|-----|------|
//! | leaf             | a host        | a host       | 1   | 1 hop (both hosts on this leaf, routed or bridged) |
//! | leaf             | a host        | a spine      | 1   | 3 hops |
//! | spine            | a leaf        | a leaf       | 2   | 3 hops |
//! | leaf             | a spine       | a host       | 3   | 3 hops |
//!
//! Every placement knows its path's length, so postcards carry it: a path whose last hop never reported
//! reads as no path, never as a shorter one. A leaf report between two fabric ports (a pair link between
//! leaves, or a topology this does not model), a report without ports, and a switch not in the fabric
//! are not placed (`no_hop`).

use std::collections::HashMap;

use crate::config::{FabricSwitch, SwitchRole};

/// Where a report puts its switch on its flow's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// 1-based hop.
    pub hop: u8,
    /// The path's length.
    pub path_len: u8,
}

#[derive(Debug, Clone)]
struct Switch {
    role: SwitchRole,
    /// Sorted.
    host_ports: Vec<u16>,
}

/// The fabric's switches by node id.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    switches: HashMap<u32, Switch>,
}

impl Topology {
    /// The fabric `switches` describe (checked by the configuration: each node once).
    pub fn new(switches: &[FabricSwitch]) -> Self {
        let switches = switches
            .iter()
            .map(|s| {
                let mut host_ports = s.host_ports.clone();
                host_ports.sort_unstable();
                (
                    s.node,
                    Switch {
                        role: s.role,
                        host_ports,
                    },
                )
            })
            .collect();
        Topology { switches }
    }

    /// The placement of a report by `node` of a packet that came in on `ingress` and left on `egress`.
    pub fn place(&self, node: u32, ports: Option<(u16, u16)>) -> Option<Placement> {
        let s = self.switches.get(&node)?;
        let (ingress, egress) = ports?;
        let host = |p: u16| s.host_ports.binary_search(&p).is_ok();
        let (hop, path_len) = match (s.role, host(ingress), host(egress)) {
            (SwitchRole::Spine, ..) => (2, 3),
            (SwitchRole::Leaf, true, true) => (1, 1),
            (SwitchRole::Leaf, true, false) => (1, 3),
            (SwitchRole::Leaf, false, true) => (3, 3),
            (SwitchRole::Leaf, false, false) => return None,
        };
        Some(Placement { hop, path_len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fabric() -> Topology {
        let leaf = |node, host_ports: &[u16]| FabricSwitch {
            node,
            role: SwitchRole::Leaf,
            host_ports: host_ports.to_vec(),
        };
        Topology::new(&[
            leaf(1, &[12, 10, 11]),
            leaf(2, &[10]),
            FabricSwitch {
                node: 9,
                role: SwitchRole::Spine,
                host_ports: vec![],
            },
        ])
    }

    #[test]
    fn leaf_spine_leaf_and_one_leaf() {
        let t = fabric();
        let at = |hop, path_len| Some(Placement { hop, path_len });
        assert_eq!(t.place(1, Some((11, 1))), at(1, 3));
        assert_eq!(t.place(9, Some((3, 4))), at(2, 3));
        assert_eq!(t.place(2, Some((1, 10))), at(3, 3));
        assert_eq!(t.place(1, Some((10, 12))), at(1, 1));
        // Between two fabric ports on a leaf, no ports, a switch outside the fabric: not placed.
        assert_eq!(t.place(1, Some((1, 2))), None);
        assert_eq!(t.place(1, None), None);
        assert_eq!(t.place(5, Some((10, 1))), None);
    }
}
