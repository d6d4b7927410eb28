//! Ethernet port setup: configure, one mempool, queue pairs (RSS when more than one), start; stop on drop.

use std::ffi::CString;
use std::sync::Arc;

use super::error::check;
use super::ffi;
use super::queue::DpdkQueue;
use super::shared::PortShared;
use super::{Eal, Mempool};
use crate::NetioError;

/// How a port is set up.
#[derive(Clone, Debug)]
pub struct PortConfig {
    /// Queue pairs (one RX and one TX queue each), one per worker thread. More than one turns RSS on.
    pub queues: u16,
    /// RX descriptors per queue (the driver may round it).
    pub rx_desc: u16,
    /// TX descriptors per queue (the driver may round it).
    pub tx_desc: u16,
    /// Mbufs in the port's pool: enough for every RX ring, every TX ring and the bursts in flight.
    pub mbufs: u32,
    /// Per-lcore mempool cache.
    pub mbuf_cache: u32,
    /// Mbuf buffer size, headroom included.
    pub data_room: u16,
    /// Accept frames for any destination MAC (a bump in the wire forwards traffic not addressed to it).
    pub promiscuous: bool,
    /// Most mbufs moved by one `rte_eth_rx_burst`/`rte_eth_tx_burst` call.
    pub max_burst: u16,
    /// With several queues, refuse a device that cannot spread flows over them by RSS. Off, such a device
    /// (a vdev: `net_af_packet` with `qpairs`, `net_memif`, `net_pcap`) is set up without RSS and each
    /// queue gets what the device itself delivers on it.
    pub require_rss: bool,
    /// The port's MTU (largest IP packet); none keeps the device's (1500 on most). A jumbo MTU also grows
    /// each mbuf's room to hold a whole frame of it (Ethernet header and two VLAN tags included), so that
    /// the data path never sees a frame in several segments.
    pub mtu: Option<u16>,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig {
            queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            mbufs: 8191,
            mbuf_cache: 256,
            data_room: ffi::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
            promiscuous: true,
            max_burst: 64,
            require_rss: true,
            mtu: None,
        }
    }
}

/// The largest MTU a port is set to: jumbo frames' 9216 (a frame in one mbuf, whose room is 16 bits).
pub const MAX_MTU: u16 = 9216;

/// An mbuf's room (headroom included) for a whole frame of an `mtu`-byte IP packet: Ethernet header, two
/// VLAN tags (QinQ), the frame check sequence some devices leave in.
pub fn frame_room(mtu: u16) -> u16 {
    const HEADROOM: u16 = 128;
    (HEADROOM + 14 + 8 + 4).saturating_add(mtu)
}

/// Device counters (`rte_eth_stats_get`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    /// Frames the NIC dropped because no RX descriptor was free (the workers did not keep up).
    pub rx_missed: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    /// RX failures for want of an mbuf (pool too small).
    pub rx_no_mbuf: u64,
}

/// A started port. Its queues are handed out once by [`Port::open`]; the port stays up until the `Port` and
/// all its queues are dropped.
pub struct Port {
    shared: Arc<PortShared>,
    mac: [u8; 6],
}

impl Port {
    /// Sets up and starts device `name` (a vdev name such as `net_ring0`, or a PCI address as the EAL names
    /// it) and returns the port with its `config.queues` queues.
    pub fn open(
        eal: &Eal,
        name: &str,
        config: &PortConfig,
    ) -> Result<(Port, Vec<DpdkQueue>), NetioError> {
        if config.queues == 0 || config.max_burst == 0 {
            return Err(NetioError::Config(format!(
                "port {name}: queues ({}) and max_burst ({}) must be at least 1",
                config.queues, config.max_burst
            )));
        }
        let cname = CString::new(name)
            .map_err(|_| NetioError::Config(format!("port name {name:?} contains a NUL byte")))?;
        let mut port_id = 0u16;
        // SAFETY: valid C string and out pointer.
        let r = unsafe { ffi::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut port_id) };
        check(
            || format!("rte_eth_dev_get_port_by_name({name}) (is it in the EAL arguments?)"),
            r,
        )?;

        let mut info = ffi::rte_eth_dev_info::default();
        // SAFETY: valid port id and out pointer.
        let r = unsafe { ffi::rte_eth_dev_info_get(port_id, &mut info) };
        check(|| format!("rte_eth_dev_info_get({name})"), r)?;
        let q = config.queues;
        if q > info.max_rx_queues || q > info.max_tx_queues {
            return Err(NetioError::Config(format!(
                "port {name}: {q} queues requested, the device has {} RX and {} TX",
                info.max_rx_queues, info.max_tx_queues
            )));
        }

        let mut conf = ffi::rte_eth_conf::default();
        let mut data_room = config.data_room;
        if let Some(mtu) = config.mtu {
            // The device's largest frame bounds the MTU too (DPDK counts 18 bytes of Ethernet header and
            // CRC around it), and configure refuses beyond it with a bare EINVAL.
            let by_frame = info
                .max_rx_pktlen
                .saturating_sub(18)
                .min(u32::from(u16::MAX)) as u16;
            let max = info.max_mtu.min(by_frame).min(MAX_MTU);
            if !(info.min_mtu..=max).contains(&mtu) {
                return Err(NetioError::Config(format!(
                    "port {name}: MTU {mtu} is outside what the device takes ({}..={max})",
                    info.min_mtu
                )));
            }
            conf.rxmode.mtu = u32::from(mtu);
            data_room = data_room.max(frame_room(mtu));
        }
        if q > 1 {
            // Spread flows over the queues by addresses and UDP ports, as far as the device can hash them.
            // SAFETY: pure function of the shim.
            let wanted = unsafe { ffi::dta_rss_hf_ip_udp() };
            let hf = wanted & info.flow_type_rss_offloads;
            if hf != 0 {
                conf.rxmode.mq_mode = ffi::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_RSS;
                conf.rx_adv_conf.rss_conf.rss_hf = hf;
            } else if config.require_rss {
                return Err(NetioError::Config(format!(
                    "port {name}: {q} queues need RSS, and the device hashes none of IP/UDP (offloads {:#x})",
                    info.flow_type_rss_offloads
                )));
            } else {
                log::warn!(
                    "port {name}: the device hashes none of IP/UDP; its {q} queues get what it delivers on each"
                );
            }
        }
        // SAFETY: valid port id and configuration.
        let r = unsafe { ffi::rte_eth_dev_configure(port_id, q, q, &conf) };
        check(|| format!("rte_eth_dev_configure({name}, {q} queues)"), r)?;
        let (mut rxd, mut txd) = (config.rx_desc, config.tx_desc);
        // SAFETY: valid port id and out pointers.
        let r = unsafe { ffi::rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &mut rxd, &mut txd) };
        check(|| format!("rte_eth_dev_adjust_nb_rx_tx_desc({name})"), r)?;

        // SAFETY: valid port id.
        let socket = unsafe { ffi::rte_eth_dev_socket_id(port_id) };
        let pool = Mempool::new(
            eal,
            &format!("dta_port{port_id}"),
            config.mbufs,
            config.mbuf_cache,
            data_room,
            socket,
        )?;
        for qi in 0..q {
            // A negative socket is SOCKET_ID_ANY, which the queue-setup calls take as an unsigned value.
            // SAFETY: valid port, queue and pool; NULL selects the driver's default queue configuration.
            let r = unsafe {
                ffi::rte_eth_rx_queue_setup(
                    port_id,
                    qi,
                    rxd,
                    socket as u32,
                    std::ptr::null(),
                    pool.as_ptr(),
                )
            };
            check(
                || format!("rte_eth_rx_queue_setup({name}, queue {qi}, {rxd} descriptors)"),
                r,
            )?;
            // SAFETY: as above.
            let r = unsafe {
                ffi::rte_eth_tx_queue_setup(port_id, qi, txd, socket as u32, std::ptr::null())
            };
            check(
                || format!("rte_eth_tx_queue_setup({name}, queue {qi}, {txd} descriptors)"),
                r,
            )?;
        }
        // SAFETY: configured port.
        let r = unsafe { ffi::rte_eth_dev_start(port_id) };
        check(|| format!("rte_eth_dev_start({name})"), r)?;
        // SAFETY: the driver name is a static C string of the driver, or NULL.
        let driver = (!info.driver_name.is_null())
            .then(|| unsafe { std::ffi::CStr::from_ptr(info.driver_name) })
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        let guarded = super::guard::needs_guard(&driver) && super::guard::install();
        let shared = Arc::new(PortShared {
            port_id,
            name: name.to_owned(),
            queues: q,
            pool,
            guarded,
        });
        if config.promiscuous {
            // SAFETY: started port. Virtual devices without the notion answer ENOTSUP, which is fine.
            let r = unsafe { ffi::rte_eth_promiscuous_enable(port_id) };
            if r < 0 && r != -libc::ENOTSUP {
                check(|| format!("rte_eth_promiscuous_enable({name})"), r)?;
            }
        }
        let mut addr = ffi::rte_ether_addr::default();
        // SAFETY: valid port id and out pointer.
        let r = unsafe { ffi::rte_eth_macaddr_get(port_id, &mut addr) };
        check(|| format!("rte_eth_macaddr_get({name})"), r)?;
        let queues = (0..q)
            .map(|qi| DpdkQueue::new(shared.clone(), qi, config.max_burst))
            .collect();
        log::info!("DPDK port {name} (id {port_id}) started: {q} queues, {rxd}/{txd} descriptors");
        Ok((
            Port {
                shared,
                mac: addr.addr_bytes,
            },
            queues,
        ))
    }

    /// Opens the port a command line or config names: `name,key=value,...` hot-plugs virtual device `name`
    /// with those devargs first ([`Eal::attach`]); a bare name is a device the EAL already has (a PCI
    /// address, or a `--vdev` from the EAL arguments).
    pub fn open_spec(
        eal: &Eal,
        spec: &str,
        config: &PortConfig,
    ) -> Result<(Port, Vec<DpdkQueue>), NetioError> {
        let name = match spec.split_once(',') {
            Some((name, _)) => {
                eal.attach(spec)?;
                name
            }
            None => spec,
        };
        Port::open(eal, name, config)
    }

    pub fn port_id(&self) -> u16 {
        self.shared.port_id
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// The port's mbuf pool (for watching its fill level).
    pub fn pool(&self) -> &Mempool {
        &self.shared.pool
    }

    /// Whether the link is up now (`rte_eth_link_get_nowait`). A virtual device between processes
    /// (`net_memif`) is up once its peer has connected; until then it drops what it is given.
    pub fn link_up(&self) -> Result<bool, NetioError> {
        let mut l = ffi::rte_eth_link::default();
        // SAFETY: valid port id and out pointer.
        let r = unsafe { ffi::rte_eth_link_get_nowait(self.shared.port_id, &mut l) };
        check(
            || format!("rte_eth_link_get_nowait({})", self.shared.name),
            r,
        )?;
        Ok(l.link_status() != 0)
    }

    /// Device counters since start.
    pub fn stats(&self) -> Result<PortStats, NetioError> {
        let mut s = ffi::rte_eth_stats::default();
        // SAFETY: valid port id and out pointer.
        let r = unsafe { ffi::rte_eth_stats_get(self.shared.port_id, &mut s) };
        check(|| format!("rte_eth_stats_get({})", self.shared.name), r)?;
        Ok(PortStats {
            rx_packets: s.ipackets,
            tx_packets: s.opackets,
            rx_bytes: s.ibytes,
            tx_bytes: s.obytes,
            rx_missed: s.imissed,
            rx_errors: s.ierrors,
            tx_errors: s.oerrors,
            rx_no_mbuf: s.rx_nombuf,
        })
    }
}
