//! EAL initialisation: once per process, as DPDK demands, with the arguments passed through verbatim.

use std::ffi::CString;
use std::sync::OnceLock;

use super::error::{dpdk_error, rte_errno, strerror};
use super::ffi;
use crate::NetioError;

/// Proof that the EAL is initialised; every DPDK object is created through it.
#[derive(Debug)]
pub struct Eal {
    args: Vec<String>,
}

impl Eal {
    /// The arguments the EAL was initialised with.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Adds a device after initialisation (hot-plug), `devargs` written as for `--vdev`, e.g.
    /// `net_af_packet0,iface=veth0`; the port's name is the part before the first comma. Lets one process
    /// (a test binary, a daemon reconfigured at run time) use devices that were not on its EAL command line.
    /// Kernel-backed vdevs (`net_af_packet`, `net_af_xdp`, `net_tap`) look their interface up by name in the
    /// calling thread's network namespace, here and again on port start, stop and promiscuous changes: make
    /// those calls from a thread in the interface's namespace (simplest: run the process there).
    pub fn attach(&self, devargs: &str) -> Result<(), NetioError> {
        let c = CString::new(devargs)
            .map_err(|_| NetioError::Config(format!("devargs {devargs:?} contain a NUL byte")))?;
        // SAFETY: valid C string; the EAL is initialised.
        let r = unsafe { ffi::rte_dev_probe(c.as_ptr()) };
        if r < 0 {
            return Err(dpdk_error(format!("rte_dev_probe({devargs})"), r));
        }
        Ok(())
    }

    /// Removes virtual device `name` (closing its port). Drop the [`Port`](super::Port) and its queues first.
    pub fn detach_vdev(&self, name: &str) -> Result<(), NetioError> {
        let c = CString::new(name)
            .map_err(|_| NetioError::Config(format!("device name {name:?} contains a NUL byte")))?;
        // SAFETY: valid C strings; the EAL is initialised.
        let r = unsafe { ffi::rte_eal_hotplug_remove(c"vdev".as_ptr(), c.as_ptr()) };
        if r < 0 {
            return Err(dpdk_error(
                format!("rte_eal_hotplug_remove(vdev, {name})"),
                r,
            ));
        }
        Ok(())
    }
}

/// The outcome of the one `rte_eal_init` call: DPDK cannot be initialised twice in a process, nor retried
/// after a failure, so the first result is the answer for every later caller.
static EAL: OnceLock<Result<Eal, (i32, String)>> = OnceLock::new();

/// Initialises the EAL with `args` (as on a DPDK command line, without the program name), or returns the
/// EAL of an earlier call. A later call with different arguments gets the first EAL and a warning: the
/// process has one EAL and its devices.
///
/// Test setup without hugepages: `-l 0 --no-huge --no-shconf -m 256 --no-pci --vdev=net_ring0`.
pub fn eal_init(args: Vec<String>) -> Result<&'static Eal, NetioError> {
    let result = EAL.get_or_init(|| init(&args));
    match result {
        Ok(eal) => {
            if eal.args != args {
                log::warn!(
                    "EAL already initialised with {:?}; ignoring {:?}",
                    eal.args,
                    args
                );
            }
            Ok(eal)
        }
        Err((errno, arg_text)) => Err(NetioError::Dpdk {
            call: format!("rte_eal_init({arg_text})"),
            errno: *errno,
            message: strerror(*errno),
        }),
    }
}

fn init(args: &[String]) -> Result<Eal, (i32, String)> {
    let text = args.join(" ");
    let mut owned = Vec::with_capacity(args.len() + 1);
    owned.push(CString::new("dta").expect("no NUL"));
    for a in args {
        owned.push(CString::new(a.as_str()).map_err(|_| (libc::EINVAL, text.clone()))?);
    }
    // The EAL may keep pointers into argv (and reorders it), so the strings live for the whole process.
    let owned: &'static mut [CString] = Box::leak(owned.into_boxed_slice());
    let argv: &'static mut [*mut libc::c_char] =
        Box::leak(owned.iter().map(|c| c.as_ptr().cast_mut()).collect());
    // SAFETY: argc/argv describe NUL-terminated strings that are never freed; called at most once.
    let r = unsafe { ffi::rte_eal_init(argv.len() as i32, argv.as_mut_ptr()) };
    if r < 0 {
        let errno = rte_errno();
        log::error!("{}", dpdk_error(format!("rte_eal_init({text})"), errno));
        return Err((errno, text));
    }
    Ok(Eal {
        args: args.to_vec(),
    })
}

/// Registers the calling (non-EAL) thread with DPDK so that it gets an lcore id, and with it the per-lcore
/// mempool caches that make mbuf alloc/free cheap. Call once on each worker thread before its first burst.
pub fn register_thread(_eal: &Eal) -> Result<u32, NetioError> {
    // SAFETY: plain call; the EAL is initialised (witnessed by `_eal`).
    let r = unsafe { ffi::rte_thread_register() };
    if r < 0 {
        return Err(dpdk_error("rte_thread_register", rte_errno()));
    }
    // SAFETY: reads this thread's lcore id.
    Ok(unsafe { ffi::rte_lcore_id() })
}
