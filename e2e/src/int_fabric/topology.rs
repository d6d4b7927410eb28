//! The fabric: its switches, hosts and wiring, a flow's route through it, and the translator's sections
//! that describe it.

/// The leaves' node ids.
pub const LEAVES: [u32; 4] = [1, 2, 3, 4];
/// The spines' node ids.
pub const SPINES: [u32; 2] = [21, 22];
/// A switch that reports but is not in the fabric's configuration.
pub const OUTSIDE: u32 = 40;
/// Hop records are read with this redundancy (the INT run's `int.redundancy`).
pub(super) const INT_N: u8 = crate::int_workload::INT_N;

/// A leaf's host-facing ports.
fn host_ports(leaf: u32) -> std::ops::RangeInclusive<u16> {
    if leaf <= 2 {
        1..=8
    } else {
        260..=267
    }
}

/// A leaf's port toward `spine`.
pub(super) fn uplink(leaf: u32, spine: u32) -> u16 {
    let i = u16::from(spine == SPINES[1]);
    if leaf <= 2 {
        132 + 8 * i
    } else {
        1 + i
    }
}

/// A spine's port toward `leaf`.
fn downlink(leaf: u32) -> u16 {
    leaf as u16
}

/// The translator lines that describe the fabric (they continue the INT run's `[int]` table).
pub fn translator_sections() -> String {
    let mut s = String::from("hop_mode = \"topology\"\n");
    for leaf in LEAVES {
        let ports: Vec<String> = host_ports(leaf).map(|p| p.to_string()).collect();
        s += &format!(
            "\n[[int.switches]]\nnode = {leaf}\nrole = \"leaf\"\nhost_ports = [{}]\n",
            ports.join(", ")
        );
    }
    for spine in SPINES {
        s += &format!("\n[[int.switches]]\nnode = {spine}\nrole = \"spine\"\n");
    }
    s
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Host {
    pub(super) leaf: u32,
    pub(super) port: u16,
    pub(super) ip: [u8; 4],
    /// Subnet on its leaf.
    pub(super) subnet: u8,
    /// The TTL its packets have when they enter the fabric.
    pub(super) ttl: u8,
}

pub(super) fn hosts() -> Vec<Host> {
    let mut out = Vec::new();
    for leaf in LEAVES {
        for i in 0..4u8 {
            let n = out.len();
            out.push(Host {
                leaf,
                port: host_ports(leaf).start() + u16::from(i),
                ip: [10, leaf as u8, i / 2, 10 + i],
                subnet: i / 2,
                ttl: match n {
                    5 => 32,
                    10 => 128,
                    15 => 58,
                    _ => 64,
                },
            });
        }
    }
    out
}

/// One switch's view of a packet: where it came in and left, and the inner TTL it mirrors.
#[derive(Debug, Clone, Copy)]
pub(super) struct Step {
    pub(super) switch: u32,
    pub(super) ig_port: u16,
    pub(super) eg_port: u16,
    pub(super) ttl: u8,
}

/// The switches a packet from `src` to `dst` crosses, in path order (spine `spine` between leaves).
pub(super) fn route(src: &Host, dst: &Host, spine: u32) -> Vec<Step> {
    let step = |switch, ig_port, eg_port, ttl| Step {
        switch,
        ig_port,
        eg_port,
        ttl,
    };
    if src.leaf == dst.leaf {
        // Bridged within a subnet (TTL untouched), routed between subnets (decremented once).
        let ttl = src.ttl - u8::from(src.subnet != dst.subnet);
        return vec![step(src.leaf, src.port, dst.port, ttl)];
    }
    vec![
        step(src.leaf, src.port, uplink(src.leaf, spine), src.ttl),
        step(spine, downlink(src.leaf), downlink(dst.leaf), src.ttl),
        step(dst.leaf, uplink(dst.leaf, spine), dst.port, src.ttl - 1),
    ]
}
