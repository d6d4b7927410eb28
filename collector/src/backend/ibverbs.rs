//! The real RDMA backend through libibverbs (`ibverbs-sys`, the FFI layer of the `ibverbs` crate). The crate's safe API allocates its
//! own memory and hides raw handles, while the collector registers its hugepage arena and drives QP states
//! itself, so this file calls the verbs directly and keeps every `unsafe` next to the one call it guards.

use std::collections::HashMap;
use std::ffi::CStr;
use std::io;
use std::ptr;

use ibverbs_sys as ffi;

use super::{GidEntry, GidKind, RtrAttrs, RtsAttrs, Verbs};
use crate::error::{Error, Result};

/// The message every "no device" failure carries, so a user knows the way out.
pub const NO_DEVICE_HINT: &str =
    "no usable RDMA device; run `dta-collector serve --backend soft` to use the software RoCEv2 responder";

/// Port the collector uses on the device (the first; multi-port NICs expose one device per port for RoCE).
const PORT: u8 = 1;
/// Completion queue depth: the collector posts no work requests, but a QP needs a CQ.
const CQ_DEPTH: i32 = 16;
/// GID table entries read at most (rxe has 1024 slots; a NIC port rarely uses more than a few dozen).
const MAX_GIDS: usize = 1024;

/// An opened device with one protection domain, one CQ, its registrations and its QPs.
pub struct IbvDevice {
    ctx: *mut ffi::ibv_context,
    pd: *mut ffi::ibv_pd,
    cq: *mut ffi::ibv_cq,
    mrs: Vec<*mut ffi::ibv_mr>,
    qps: HashMap<u32, *mut ffi::ibv_qp>,
}

// SAFETY: libibverbs handles may be used from any thread; IbvDevice is only used behind a Mutex.
unsafe impl Send for IbvDevice {}

fn verb_error(verb: &str, err: io::Error) -> Error {
    Error::Rdma(format!("{verb}: {err}"))
}

fn check(verb: &str, rc: i32) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        // Verbs return a positive errno (or -1 with errno set).
        let e = if rc > 0 {
            io::Error::from_raw_os_error(rc)
        } else {
            io::Error::last_os_error()
        };
        Err(verb_error(verb, e))
    }
}

fn mtu_enum(bytes: u32) -> Result<ffi::ibv_mtu> {
    Ok(match bytes {
        256 => ffi::IBV_MTU_256,
        512 => ffi::IBV_MTU_512,
        1024 => ffi::IBV_MTU_1024,
        2048 => ffi::IBV_MTU_2048,
        4096 => ffi::IBV_MTU_4096,
        other => return Err(Error::Rdma(format!("path MTU {other} is not an IB MTU"))),
    })
}

impl IbvDevice {
    /// Opens device `name`, or the first device. Fails with [`NO_DEVICE_HINT`] when the kernel has no RDMA
    /// (ENOSYS) or no device is present.
    pub fn open(name: Option<&str>) -> Result<Self> {
        let mut n = 0i32;
        // SAFETY: n is a valid out-pointer; the list is freed below.
        let list = unsafe { ffi::ibv_get_device_list(&mut n) };
        if list.is_null() {
            let e = io::Error::last_os_error();
            return Err(Error::Rdma(format!(
                "listing RDMA devices failed ({e}): {NO_DEVICE_HINT}"
            )));
        }
        // SAFETY: ibv_get_device_list returned n valid device pointers.
        let devices = unsafe { std::slice::from_raw_parts(list, n.max(0) as usize) };
        let chosen = devices.iter().copied().find(|&d| {
            name.map_or(true, |want| {
                // SAFETY: d is a device from the list; the name is a NUL-terminated string it owns.
                let got = unsafe { CStr::from_ptr(ffi::ibv_get_device_name(d)) };
                got.to_str() == Ok(want)
            })
        });
        let result = match chosen {
            None => Err(Error::Rdma(match name {
                Some(want) => format!("RDMA device {want:?} not found: {NO_DEVICE_HINT}"),
                None => format!("no RDMA devices: {NO_DEVICE_HINT}"),
            })),
            Some(dev) => Self::open_device(dev),
        };
        // SAFETY: list came from ibv_get_device_list; an opened context stays valid after the list is freed.
        unsafe { ffi::ibv_free_device_list(list) };
        result
    }

    fn open_device(dev: *mut ffi::ibv_device) -> Result<Self> {
        // SAFETY: dev is a live device from the device list.
        let ctx = unsafe { ffi::ibv_open_device(dev) };
        if ctx.is_null() {
            return Err(verb_error("ibv_open_device", io::Error::last_os_error()));
        }
        let mut d = IbvDevice {
            ctx,
            pd: ptr::null_mut(),
            cq: ptr::null_mut(),
            mrs: Vec::new(),
            qps: HashMap::new(),
        };
        // SAFETY: ctx is open.
        d.pd = unsafe { ffi::ibv_alloc_pd(ctx) };
        if d.pd.is_null() {
            return Err(verb_error("ibv_alloc_pd", io::Error::last_os_error()));
        }
        // SAFETY: ctx is open; no completion channel.
        d.cq = unsafe { ffi::ibv_create_cq(ctx, CQ_DEPTH, ptr::null_mut(), ptr::null_mut(), 0) };
        if d.cq.is_null() {
            return Err(verb_error("ibv_create_cq", io::Error::last_os_error()));
        }
        Ok(d)
    }

    fn qp(&self, qpn: u32) -> Result<*mut ffi::ibv_qp> {
        self.qps
            .get(&qpn)
            .copied()
            .ok_or_else(|| Error::Rdma(format!("no QP {qpn:#x}")))
    }

    fn modify(&self, verb: &str, qpn: u32, attr: &mut ffi::ibv_qp_attr, mask: u32) -> Result<()> {
        let qp = self.qp(qpn)?;
        // SAFETY: qp is a live QP of this device and attr a fully initialised attribute struct.
        check(verb, unsafe { ffi::ibv_modify_qp(qp, attr, mask as i32) })
    }
}

fn zeroed_attr() -> ffi::ibv_qp_attr {
    // SAFETY: ibv_qp_attr is a plain C struct for which all-zero is a valid (RESET, unset) value.
    unsafe { std::mem::zeroed() }
}

/// The name and MAC address of network interface `ifindex`: the Ethernet address a RoCE device answers
/// from is its network device's.
pub fn netdev_mac(ifindex: u32) -> Result<(String, [u8; 6])> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: buf has IF_NAMESIZE bytes, as if_indextoname requires.
    let name = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if name.is_null() {
        return Err(Error::Rdma(format!(
            "if_indextoname({ifindex}) for the GID's network device: {}",
            io::Error::last_os_error()
        )));
    }
    // SAFETY: on success buf holds a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let path = format!("/sys/class/net/{name}/address");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::io(format!("reading {path} (the RoCE device's MAC)"), e))?;
    let mac: dta_protocol::MacAddr = text
        .trim()
        .parse()
        .map_err(|e| Error::Rdma(format!("{path}: {e}")))?;
    Ok((name, mac.octets()))
}

impl Verbs for IbvDevice {
    fn gid_table(&mut self) -> Result<Vec<GidEntry>> {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut entries: Vec<ffi::ibv_gid_entry> = vec![unsafe { std::mem::zeroed() }; MAX_GIDS];
        // SAFETY: entries has MAX_GIDS elements of the size passed; ctx is open.
        let n = unsafe {
            ffi::_ibv_query_gid_table(
                self.ctx,
                entries.as_mut_ptr(),
                MAX_GIDS,
                0,
                std::mem::size_of::<ffi::ibv_gid_entry>(),
            )
        };
        if n < 0 {
            return Err(verb_error(
                "ibv_query_gid_table",
                io::Error::from_raw_os_error((-n) as i32),
            ));
        }
        Ok(entries[..n as usize]
            .iter()
            .filter(|e| e.port_num == u32::from(PORT))
            .filter_map(|e| {
                let kind = match e.gid_type {
                    0 => GidKind::Ib,
                    1 => GidKind::RoceV1,
                    2 => GidKind::RoceV2,
                    // A type newer than this code: not one we can send from.
                    _ => return None,
                };
                Some(GidEntry {
                    index: e.gid_index,
                    // SAFETY: every bit pattern of the union's raw bytes is valid.
                    gid: unsafe { e.gid.raw },
                    kind,
                    ifindex: e.ndev_ifindex,
                })
            })
            .collect())
    }

    fn register(&mut self, addr: u64, len: usize, access: u32) -> Result<u32> {
        // SAFETY: the caller registers memory of the arena, which outlives the device (the server holds
        // both until exit); the NIC may then write it, which is the point.
        let mr = unsafe { ffi::ibv_reg_mr(self.pd, addr as *mut _, len, access as i32) };
        if mr.is_null() {
            return Err(verb_error(
                &format!("ibv_reg_mr(addr={addr:#x} length={len} access={access:#x})"),
                io::Error::last_os_error(),
            ));
        }
        self.mrs.push(mr);
        // SAFETY: mr is the valid registration just returned.
        Ok(unsafe { (*mr).rkey })
    }

    fn create_qp(&mut self) -> Result<u32> {
        // SAFETY: all-zero is a valid starting point for this C struct; the fields that matter are set.
        let mut init: ffi::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        init.send_cq = self.cq;
        init.recv_cq = self.cq;
        init.qp_type = ffi::ibv_qp_type::IBV_QPT_RC;
        init.cap.max_send_wr = 1;
        init.cap.max_recv_wr = 1;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        // SAFETY: pd and cq are live; init is initialised.
        let qp = unsafe { ffi::ibv_create_qp(self.pd, &mut init) };
        if qp.is_null() {
            return Err(verb_error("ibv_create_qp", io::Error::last_os_error()));
        }
        // SAFETY: qp is the valid QP just created.
        let qpn = unsafe { (*qp).qp_num };
        self.qps.insert(qpn, qp);
        Ok(qpn)
    }

    fn modify_to_init(&mut self, qpn: u32, access: u32) -> Result<()> {
        let mut a = zeroed_attr();
        a.qp_state = ffi::ibv_qp_state::IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = PORT;
        a.qp_access_flags = access;
        let m = ffi::ibv_qp_attr_mask::IBV_QP_STATE.0
            | ffi::ibv_qp_attr_mask::IBV_QP_PKEY_INDEX.0
            | ffi::ibv_qp_attr_mask::IBV_QP_PORT.0
            | ffi::ibv_qp_attr_mask::IBV_QP_ACCESS_FLAGS.0;
        let verb = format!(
            "ibv_modify_qp(QP {qpn:#x} RESET->INIT: port_num={PORT} qp_access_flags={access:#x})"
        );
        self.modify(&verb, qpn, &mut a, m)
    }

    fn modify_to_rtr(&mut self, qpn: u32, r: &RtrAttrs) -> Result<()> {
        let mut a = zeroed_attr();
        a.qp_state = ffi::ibv_qp_state::IBV_QPS_RTR;
        a.path_mtu = mtu_enum(r.path_mtu)?;
        a.dest_qp_num = r.dest_qpn;
        a.rq_psn = r.rq_psn;
        a.max_dest_rd_atomic = r.max_dest_rd_atomic;
        a.min_rnr_timer = r.min_rnr_timer;
        // RoCE addresses the peer by GID through a global route header.
        a.ah_attr.is_global = 1;
        a.ah_attr.port_num = PORT;
        a.ah_attr.grh.dgid.raw = r.remote_gid;
        a.ah_attr.grh.sgid_index = r.sgid_index;
        a.ah_attr.grh.hop_limit = 64;
        let m = ffi::ibv_qp_attr_mask::IBV_QP_STATE.0
            | ffi::ibv_qp_attr_mask::IBV_QP_AV.0
            | ffi::ibv_qp_attr_mask::IBV_QP_PATH_MTU.0
            | ffi::ibv_qp_attr_mask::IBV_QP_DEST_QPN.0
            | ffi::ibv_qp_attr_mask::IBV_QP_RQ_PSN.0
            | ffi::ibv_qp_attr_mask::IBV_QP_MAX_DEST_RD_ATOMIC.0
            | ffi::ibv_qp_attr_mask::IBV_QP_MIN_RNR_TIMER.0;
        let verb = format!(
            "ibv_modify_qp(QP {qpn:#x} INIT->RTR: dest_qp_num={:#x} rq_psn={:#x} \
             ah_attr.grh.dgid={} ah_attr.grh.sgid_index={} path_mtu={} max_dest_rd_atomic={})",
            r.dest_qpn,
            r.rq_psn,
            std::net::Ipv6Addr::from(r.remote_gid),
            r.sgid_index,
            r.path_mtu,
            r.max_dest_rd_atomic
        );
        self.modify(&verb, qpn, &mut a, m).map_err(|e| {
            // RTR resolves the destination GID's MAC through the kernel's neighbour table (ARP for an
            // IPv4-mapped GID) and fails with ETIMEDOUT when nobody answers.
            if e.to_string().contains("os error 110") {
                Error::Rdma(format!(
                    "{e}: the kernel could not resolve {}'s MAC address (no ARP answer on the RDMA \
                     device's link); the translator answers ARP for its address once its ports are open",
                    std::net::Ipv6Addr::from(r.remote_gid)
                ))
            } else {
                e
            }
        })
    }

    fn modify_to_rts(&mut self, qpn: u32, r: &RtsAttrs) -> Result<()> {
        let mut a = zeroed_attr();
        a.qp_state = ffi::ibv_qp_state::IBV_QPS_RTS;
        a.sq_psn = r.sq_psn;
        a.timeout = r.timeout;
        a.retry_cnt = r.retry_cnt;
        a.rnr_retry = r.rnr_retry;
        a.max_rd_atomic = 1;
        let m = ffi::ibv_qp_attr_mask::IBV_QP_STATE.0
            | ffi::ibv_qp_attr_mask::IBV_QP_SQ_PSN.0
            | ffi::ibv_qp_attr_mask::IBV_QP_TIMEOUT.0
            | ffi::ibv_qp_attr_mask::IBV_QP_RETRY_CNT.0
            | ffi::ibv_qp_attr_mask::IBV_QP_RNR_RETRY.0
            | ffi::ibv_qp_attr_mask::IBV_QP_MAX_QP_RD_ATOMIC.0;
        let verb = format!(
            "ibv_modify_qp(QP {qpn:#x} RTR->RTS: sq_psn={:#x} timeout={} retry_cnt={} rnr_retry={})",
            r.sq_psn, r.timeout, r.retry_cnt, r.rnr_retry
        );
        self.modify(&verb, qpn, &mut a, m)
    }

    fn destroy_qp(&mut self, qpn: u32) -> Result<()> {
        let qp = self.qp(qpn)?;
        self.qps.remove(&qpn);
        // SAFETY: qp is live and no longer reachable through self.qps.
        check("ibv_destroy_qp", unsafe { ffi::ibv_destroy_qp(qp) })
    }
}

impl Drop for IbvDevice {
    fn drop(&mut self) {
        // SAFETY: every handle below was created by this device and is released once, children first.
        unsafe {
            for (_, qp) in self.qps.drain() {
                ffi::ibv_destroy_qp(qp);
            }
            for mr in self.mrs.drain(..) {
                ffi::ibv_dereg_mr(mr);
            }
            if !self.cq.is_null() {
                ffi::ibv_destroy_cq(self.cq);
            }
            if !self.pd.is_null() {
                ffi::ibv_dealloc_pd(self.pd);
            }
            ffi::ibv_close_device(self.ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_device_the_error_names_the_soft_backend() {
        match IbvDevice::open(None) {
            // This machine's kernel has no RDMA (ENOSYS) or no device: the error must point to the way out.
            Err(e) => assert!(e.to_string().contains("--backend soft"), "{e}"),
            Ok(_) => eprintln!("an RDMA device exists here; the no-device path is not exercised"),
        }
        assert!(mtu_enum(1000).is_err());
        assert_eq!(mtu_enum(1024).unwrap(), ffi::IBV_MTU_1024);
    }
}
