//! Opening the translator's ports through dta-netio for run-to-completion workers, one queue of every port
//! per worker: AF_PACKET sockets in a PACKET_FANOUT group, or DPDK ports with one queue pair per worker
//! (EAL initialised once with the configured arguments, vdev devargs hot-plugged).

use anyhow::{Context, Result};

use super::dataplane::afpacket::SocketQueue;
use super::settings::IoSection;

/// AF_PACKET sockets for run-to-completion workers: per worker, one socket on every interface.
pub struct AfPacketQueues {
    /// Per worker, its socket on every interface, in port order.
    pub queues: Vec<Vec<SocketQueue>>,
    /// The interfaces.
    pub names: Vec<String>,
    /// Their MAC addresses.
    pub macs: Vec<[u8; 6]>,
}

/// Opens `workers` sockets on every configured interface; with several workers, each interface's sockets
/// form one PACKET_FANOUT group (hash), so that the kernel keeps a flow on one worker as RSS would.
pub fn open_af_packet_queues(io: &IoSection, workers: usize) -> Result<AfPacketQueues> {
    let mut queues: Vec<Vec<SocketQueue>> = (0..workers).map(|_| Vec::new()).collect();
    let mut macs = Vec::new();
    for (p, ifname) in io.ports.iter().enumerate() {
        // A group id of this process and port: groups are per network namespace, and another process's
        // sockets on the same interface must not join ours.
        let group = (workers > 1).then(|| {
            (std::process::id() as u16)
                .wrapping_mul(8)
                .wrapping_add(p as u16)
        });
        for (k, q) in queues.iter_mut().enumerate() {
            let sock = SocketQueue::open(ifname, p as u16, io.burst, group).with_context(|| {
                format!("opening AF_PACKET on {ifname} for worker {k} (needs root or CAP_NET_RAW)")
            })?;
            if k == 0 {
                macs.push(sock.mac());
            }
            q.push(sock);
        }
    }
    Ok(AfPacketQueues {
        queues,
        names: io.ports.clone(),
        macs,
    })
}

/// DPDK ports set up for run-to-completion workers: every port with one queue pair per worker.
#[cfg(feature = "dpdk")]
pub struct DpdkPorts {
    /// The started ports (kept until the queues are dropped), in configured order.
    pub ports: Vec<dta_netio::dpdk::Port>,
    /// Per worker, its queue of every port, in port order.
    pub queues: Vec<Vec<dta_netio::dpdk::DpdkQueue>>,
    /// Each port's name, as configured (the part of a vdev spec before the comma).
    pub names: Vec<String>,
    /// The EAL.
    pub eal: &'static dta_netio::dpdk::Eal,
}

/// Opens every configured DPDK port with `workers` queue pairs: RSS spreads flows over them where the device
/// hashes IP/UDP; a vdev that does not (`net_af_packet` with `qpairs=N`, `net_memif`) delivers on each queue
/// what it delivers.
#[cfg(feature = "dpdk")]
pub fn open_dpdk_queues(io: &IoSection, workers: usize) -> Result<DpdkPorts> {
    use dta_netio::dpdk::{eal_init, Port as DpdkPort, PortConfig};
    let eal = eal_init(io.eal_args.clone())
        .with_context(|| format!("DPDK EAL init with {:?}", io.eal_args))?;
    let nq = u16::try_from(workers).context("worker count")?;
    let cfg = PortConfig {
        queues: nq,
        max_burst: io.burst as u16,
        require_rss: false,
        mbufs: super::dataplane::pool_mbufs(workers),
        mtu: io.mtu,
        ..PortConfig::default()
    };
    let mut ports = Vec::new();
    let mut queues: Vec<Vec<_>> = (0..workers).map(|_| Vec::new()).collect();
    let mut names = Vec::new();
    for spec in &io.ports {
        let (port, qs) = DpdkPort::open_spec(eal, spec, &cfg).with_context(|| {
            format!(
                "opening DPDK port {spec} with {workers} queue pair(s), one per worker (a vdev \
                     needs as many: `qpairs={workers}` for net_af_packet, `queues` for net_null)"
            )
        })?;
        for (k, q) in qs.into_iter().enumerate() {
            queues[k].push(q);
        }
        names.push(
            spec.split_once(',')
                .map_or(spec.as_str(), |(n, _)| n)
                .to_string(),
        );
        ports.push(port);
    }
    Ok(DpdkPorts {
        ports,
        queues,
        names,
        eal,
    })
}
