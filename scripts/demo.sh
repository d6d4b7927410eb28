#!/usr/bin/env bash
# The dta demo: build (release), then dta-e2e-drive creates three network namespaces (reporter,
# translator as a bump in the wire on DPDK net_af_packet ports with two workers, collector with the
# software RoCEv2 responder, also on DPDK), starts collector and translator, sends a mixed workload of all
# five primitives, checks every answer, prints a table and two example queries, and removes everything;
# then the same with standard INT reports (fabric-tna v0.5 and v2.0) into a translator with [int] enabled,
# the collector's history exporter ([export]) writing Parquet files, which the demo keeps under
# target/demo-history/ and ends by querying with chdb (drops per switch per second).
# Needs root (network namespaces), no hugepages, no arguments (`--io af-packet` runs it without DPDK).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $EUID -ne 0 ]]; then
  echo "demo: needs root for network namespaces (try: sudo make demo)" >&2
  exit 1
fi

# Namespaces of this run are named dta<pid>demo{r,t,c}; remove them however the driver ends.
cleanup() {
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^dta[0-9]+(demo|dint)[rtc]$' || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT

echo "== building (release)"
cargo build --release -q -p dta-translator-daemon -p dta-collector -p dta-e2e --bins

echo "== running the demo"
DTA_BIN_DIR="$PWD/target/release" RUST_LOG="${RUST_LOG:-warn}" DTA_ORACLE_PYTHON="$PWD/.venv/bin/python" \
  timeout 480 target/release/dta-e2e-drive "$@"
