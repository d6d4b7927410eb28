#!/usr/bin/env bash
# The library crates stay libraries: the simulator builds the translator engine and the collector's
# memory, queries and responder without packet I/O, DPDK or bindgen, and the DART reporter without DPDK
# (it sends its frames over AF_PACKET, so dta-netio without its DPDK feature is its own dependency), and
# the RoCE requester (dta-rc) without the engine.
# Fails, naming the path, when a dependency drags the daemons back in. Runs in `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
check() { # package, forbidden crate
  local tree
  tree=$(cargo tree -q -p "$1" -e normal,build --prefix none --no-dedupe)
  if grep -q "^$2 " <<<"$tree"; then
    echo "deps-check: $1 depends on $2:" >&2
    cargo tree -q -p "$1" -e normal,build -i "$2" >&2 || true
    fail=1
  fi
}
check dta-sim dta-netio
check dta-sim bindgen
check dta-sim dta-httpd
check dta-reporter bindgen
check dta-translator dta-netio
check dta-translator clap
# The RoCE requester is a transport: no I/O, and nothing of DTA's engine; the DART reporter uses it
# without the translator.
check dta-rc dta-netio
check dta-rc dta-translator
check dta-reporter dta-translator
[[ $fail == 0 ]] && echo "deps-check: the engine, simulator and reporter build without the daemons' dependencies"
exit $fail
