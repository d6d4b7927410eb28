//! Builds the DPDK bindings when the `dpdk` feature is on: bindgen over csrc/dpdk_shim.h with the cflags of
//! Debian's libdpdk verbatim, plus the C wrappers bindgen generates for DPDK's `static inline` fast path.

fn main() {
    #[cfg(feature = "dpdk")]
    dpdk::build();
}

#[cfg(feature = "dpdk")]
mod dpdk {
    use std::path::PathBuf;
    use std::process::Command;

    /// Functions, types and constants dta uses; a narrow list keeps the bindings (and build time) small.
    const FUNCTIONS: &str = "rte_eal_init|rte_eal_cleanup|rte_eal_has_hugepages|rte_strerror|rte_socket_id|rte_lcore_id\
        |rte_pktmbuf_pool_create|rte_mempool_free|rte_mempool_avail_count|rte_mempool_in_use_count|rte_mempool_put_bulk\
        |rte_pktmbuf_alloc|rte_pktmbuf_alloc_bulk|rte_pktmbuf_free|rte_pktmbuf_free_bulk\
        |rte_eth_dev_count_avail|rte_eth_dev_get_port_by_name|rte_eth_dev_get_name_by_port\
        |rte_eth_dev_info_get|rte_eth_dev_configure|rte_eth_dev_adjust_nb_rx_tx_desc|rte_eth_rx_queue_setup\
        |rte_eth_tx_queue_setup|rte_eth_dev_start|rte_eth_dev_stop|rte_eth_dev_close|rte_eth_dev_socket_id\
        |rte_eth_promiscuous_enable|rte_eth_macaddr_get|rte_eth_stats_get|rte_eth_link_get_nowait\
        |rte_eth_rx_burst|rte_eth_tx_burst|rte_thread_register|rte_dev_probe|rte_eal_hotplug_remove\
        |rte_ring_create|rte_ring_free|rte_ring_lookup|rte_ring_count|rte_ring_sp_enqueue_burst|rte_ring_sc_dequeue_burst\
        |rte_ring_enqueue_burst|rte_ring_dequeue_burst|dta_.*";
    const TYPES: &str =
        "rte_mbuf|rte_mempool|rte_eth_conf|rte_eth_dev_info|rte_eth_stats|rte_ether_addr\
        |rte_eth_link|rte_eth_rxconf|rte_eth_txconf|rte_eth_rx_mq_mode|rte_eth_tx_mq_mode|rte_ring";
    const VARS: &str =
        "RTE_MBUF_DEFAULT_.*|RTE_PKTMBUF_HEADROOM|RTE_MAX_ETHPORTS|RTE_ETHER_.*_LEN|SOCKET_ID_ANY|RING_F_.*";

    pub fn build() {
        let shim = PathBuf::from("csrc/dpdk_shim.h");
        println!("cargo:rerun-if-changed={}", shim.display());
        println!("cargo:rerun-if-changed=csrc/fault_guard.c");
        println!("cargo:rerun-if-changed=build.rs");
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

        // Emits the link flags of libdpdk (its PMDs are loaded later by dlopen from the EAL's driver directory).
        pkg_config::Config::new()
            .atleast_version("22.11")
            .probe("libdpdk")
            .unwrap_or_else(|e| {
                panic!("dta-netio's `dpdk` feature needs libdpdk-dev >= 22.11 (make setup installs it): {e}")
            });
        // The cflags verbatim: the pkg-config crate drops `-include rte_config.h` and `-march=...`, without which
        // DPDK's headers do not parse.
        let cflags = Command::new("pkg-config")
            .args(["--cflags", "libdpdk"])
            .output()
            .expect("run pkg-config --cflags libdpdk");
        assert!(
            cflags.status.success(),
            "pkg-config --cflags libdpdk failed"
        );
        let cflags: Vec<String> = String::from_utf8(cflags.stdout)
            .expect("pkg-config prints UTF-8")
            .split_whitespace()
            .map(str::to_owned)
            .collect();

        let wrappers = out.join("dpdk_wrappers");
        bindgen::Builder::default()
            .header(shim.to_str().expect("UTF-8 path"))
            .clang_args(&cflags)
            .allowlist_function(FUNCTIONS)
            .allowlist_type(TYPES)
            .allowlist_var(VARS)
            .wrap_static_fns(true)
            .wrap_static_fns_path(&wrappers)
            // DPDK's doc comments contain code blocks that rustdoc would run as (failing) doctests.
            .generate_comments(false)
            .layout_tests(false)
            .derive_default(true)
            .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
            .generate()
            .expect("bindgen over csrc/dpdk_shim.h")
            .write_to_file(out.join("dpdk_bindings.rs"))
            .expect("write dpdk_bindings.rs");

        let mut cc = cc::Build::new();
        cc.file(wrappers.with_extension("c"))
            .file("csrc/fault_guard.c")
            .include(".")
            .warnings(false);
        // `-include rte_config.h` is two words; pass each word through as pkg-config printed it.
        for flag in &cflags {
            cc.flag(flag);
        }
        cc.compile("dta_dpdk_wrappers");
    }
}
