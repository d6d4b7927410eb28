/* A fault guard around a poll-mode driver's burst, for drivers whose peer can unmap the memory a burst reads.
 *
 * DPDK 22.11's net_memif tears a connection down on the EAL interrupt thread (memif_disconnect: link down,
 * flags cleared, then munmap of the shared regions and rte_free of their descriptors) with no synchronisation
 * with the lcores: an rx/tx burst that passed the PMD's "connected" check just before keeps reading the
 * rings and buffers, which are gone a few microseconds later, and the process dies of SIGSEGV inside
 * librte_net_memif (seen with a translator whose collector stopped: the worker thread in rte_eth_rx_burst
 * on the memif port, the interrupt thread done). Nothing outside the PMD can order the two, so the burst
 * runs under this guard: a SIGSEGV/SIGBUS raised on this thread inside the guarded call jumps back out of
 * it, and the call reports the fault instead of the process dying. Any other fault goes to the handler
 * that was installed before (Rust's stack-overflow handler, or the default action).
 *
 * What the jump leaves behind: the PMD's per-queue indices (reset by the PMD when it connects again), and
 * the mbufs the burst held at that moment (taken from our pool by an rx burst, or handed over by a tx burst
 * and perhaps already freed): the caller leaks them rather than risk a double free. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include <rte_ethdev.h>

/* This thread's jump target while it is inside a guarded burst; NULL otherwise. */
static __thread sigjmp_buf *dta_guard_jump;
static struct sigaction dta_guard_prev_segv;
static struct sigaction dta_guard_prev_bus;

static void dta_guard_on_fault(int sig, siginfo_t *info, void *ctx)
{
	sigjmp_buf *jump = dta_guard_jump;
	struct sigaction *prev;

	if (jump != NULL) {
		dta_guard_jump = NULL;
		/* SA_NODEFER left the signal unblocked, so the mask needs no restoring (sigsetjmp saved none). */
		siglongjmp(*jump, 1);
	}
	prev = sig == SIGBUS ? &dta_guard_prev_bus : &dta_guard_prev_segv;
	if (prev->sa_flags & SA_SIGINFO) {
		prev->sa_sigaction(sig, info, ctx);
		return;
	}
	if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
		return;
	}
	/* The default action: returning re-executes the faulting instruction, which then kills the process. */
	signal(sig, SIG_DFL);
}

/* Installs the handler (once per process; the caller sees to that). 0, or -errno. */
int dta_fault_guard_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = dta_guard_on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &dta_guard_prev_segv) != 0)
		return -errno;
	if (sigaction(SIGBUS, &sa, &dta_guard_prev_bus) != 0)
		return -errno;
	return 0;
}

/* rte_eth_rx_burst under the guard; on a fault returns 0 and sets *faulted. */
uint16_t dta_rx_burst_guarded(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n,
		int *faulted)
{
	sigjmp_buf jump;
	uint16_t got;

	if (sigsetjmp(jump, 0) != 0) {
		*faulted = 1;
		return 0;
	}
	dta_guard_jump = &jump;
	got = rte_eth_rx_burst(port, queue, pkts, n);
	dta_guard_jump = NULL;
	return got;
}

/* rte_eth_tx_burst under the guard; on a fault returns 0 and sets *faulted (the mbufs' fate is unknown). */
uint16_t dta_tx_burst_guarded(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n,
		int *faulted)
{
	sigjmp_buf jump;
	uint16_t sent;

	if (sigsetjmp(jump, 0) != 0) {
		*faulted = 1;
		return 0;
	}
	dta_guard_jump = &jump;
	sent = rte_eth_tx_burst(port, queue, pkts, n);
	dta_guard_jump = NULL;
	return sent;
}
