/* The DPDK surface dta-netio binds. bindgen reads this header; its `static inline` functions (DPDK's fast path
 * and the few helpers below) get out-of-line C wrappers that build.rs compiles, because Rust cannot call an
 * inline C function directly. */
#ifndef DTA_DPDK_SHIM_H
#define DTA_DPDK_SHIM_H

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_dev.h>

/* rte_errno is a macro over a per-lcore (thread-local) variable: only C can name it. */
static inline int dta_rte_errno(void) { return rte_errno; }

/* The RSS hash types dta spreads reports with (IPv4/IPv6 addresses and UDP ports). RTE_ETH_RSS_* are built with
 * RTE_BIT64(), a function-like macro bindgen cannot evaluate, so C computes the mask. */
static inline uint64_t dta_rss_hf_ip_udp(void) { return RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP; }

/* rte_pktmbuf_mtod() is a macro. */
static inline void *dta_pktmbuf_data(struct rte_mbuf *m) { return rte_pktmbuf_mtod(m, void *); }

#endif
