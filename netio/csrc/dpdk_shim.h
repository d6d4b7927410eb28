/* The DPDK surface dta-netio binds. bindgen reads this header; its `static inline` functions (DPDK's fast path
 * and the few helpers below) get out-of-line C wrappers that build.rs compiles, because Rust cannot call an
 * inline C function directly. */
#ifndef DTA_DPDK_SHIM_H
#define DTA_DPDK_SHIM_H

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_dev.h>
#include <rte_ring.h>

/* rte_errno is a macro over a per-lcore (thread-local) variable: only C can name it. */
static inline int dta_rte_errno(void) { return rte_errno; }

/* The RSS hash types dta spreads reports with (IPv4/IPv6 addresses and UDP ports). RTE_ETH_RSS_* are built with
 * RTE_BIT64(), a function-like macro bindgen cannot evaluate, so C computes the mask. */
static inline uint64_t dta_rss_hf_ip_udp(void) { return RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP; }

/* rte_pktmbuf_mtod() is a macro. */
static inline void *dta_pktmbuf_data(struct rte_mbuf *m) { return rte_pktmbuf_mtod(m, void *); }

/* RTE_MEMPOOL_F_NO_IOVA_CONTIG is built with RTE_BIT32(), which bindgen cannot evaluate. */
static inline unsigned int dta_mempool_f_no_iova_contig(void) { return RTE_MEMPOOL_F_NO_IOVA_CONTIG; }

/* A packet-buffer pool made as rte_pktmbuf_pool_create() makes one (no private area, the best mempool ops),
 * but with mempool `flags`, which that function fixes at 0. NULL with rte_errno set on failure. */
static inline struct rte_mempool *dta_pktmbuf_pool_create_flags(const char *name, unsigned int n,
		unsigned int cache_size, uint16_t data_room_size, int socket_id, unsigned int flags)
{
	struct rte_pktmbuf_pool_private priv;
	struct rte_mempool *mp;
	int ret;

	memset(&priv, 0, sizeof(priv));
	priv.mbuf_data_room_size = data_room_size;
	priv.mbuf_priv_size = 0;
	mp = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) + (unsigned int)data_room_size,
		cache_size, sizeof(struct rte_pktmbuf_pool_private), socket_id, flags);
	if (mp == NULL)
		return NULL;
	ret = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (ret != 0) {
		rte_mempool_free(mp);
		rte_errno = -ret;
		return NULL;
	}
	rte_pktmbuf_pool_init(mp, &priv);
	ret = rte_mempool_populate_default(mp);
	if (ret < 0) {
		rte_mempool_free(mp);
		rte_errno = -ret;
		return NULL;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
}

/* csrc/fault_guard.c: a burst that survives its PMD faulting (net_memif unmapping a gone peer's rings). */
int dta_fault_guard_install(void);
uint16_t dta_rx_burst_guarded(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, int *faulted);
uint16_t dta_tx_burst_guarded(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, int *faulted);

#endif
