#!/usr/bin/env bash
# `make bench`: every measurement of issue 7 in one run, so that each ratio divides two numbers taken minutes
# apart on the same machine under the same load. Writes bench/results.json, bench/results.md and
# bench/results.png. Takes about 5 minutes after the release build on a 2-core machine.
#
# BENCH_SECS (default 3) is the duration of each timed run.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
secs=${BENCH_SECS:-3}
target=${CARGO_TARGET_DIR:-$top/target}
bin=$target/release
run=$(mktemp -d /tmp/dta-bench.XXXXXX)
echo "bench: run directory $run"

sudo_if() { if [ "$(id -u)" -ne 0 ]; then sudo "$@"; else "$@"; fi; }
# testpmd is in Debian's dpdk-dev (the `dpdk` package has only the scripts).
if ! command -v dpdk-testpmd >/dev/null 2>&1; then
  echo "bench: installing dpdk-dev for dpdk-testpmd"
  DEBIAN_FRONTEND=noninteractive sudo_if apt-get install -y -q --no-install-recommends dpdk-dev
fi
# callgrind counts the translator's instructions per report (perf has no hardware counters in most VMs).
if ! command -v valgrind >/dev/null 2>&1; then
  echo "bench: installing valgrind for the instruction count"
  DEBIAN_FRONTEND=noninteractive sudo_if apt-get install -y -q --no-install-recommends valgrind
fi

# The daemons too: the whole-system run starts the release binaries users run.
cargo build --release -p dta-bench -p dta-pktgen -p dta-translator-daemon -p dta-collector

# One set of EAL options for testpmd and the translator. Hugepages when 512 are free (then --in-memory,
# which cannot combine with --no-huge), otherwise plain memory.
free_huge=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${free_huge:-0}" -ge 512 ]; then
  hugepages=--hugepages
  mem=(--in-memory -m 1024)
else
  hugepages=
  mem=(--no-huge --no-shconf -m 1024)
fi
common=("${mem[@]}" --no-pci --vdev=net_null0 --log-level=warning --no-telemetry)
eal1=(-l 0-1 "${common[@]}")

"$bin/dta-bench" machine $hugepages > "$run/machine.json"
# Others share this machine: sample the load every 10 s for the record.
( while true; do cut -d' ' -f1-3 /proc/loadavg >> "$run/load.txt"; sleep 10; done ) &
sampler=$!
trap 'kill $sampler 2>/dev/null || true' EXIT

# The limit: testpmd on the same vdev and EAL options, one port, stats every second. timeout's SIGINT makes
# testpmd stop and print its totals; its exit status is then 124.
testpmd() {
  local out=$1; shift
  # EAL start-up without hugepages takes seconds under load: leave room for several stats periods.
  timeout -s INT $((secs + 6)) dpdk-testpmd "$@" > "$out" 2>&1 || [ $? -eq 124 ]
}
echo "bench: testpmd io forward, 1 core"
testpmd "$run/testpmd-io-1.txt" "${eal1[@]}" -- --forward-mode=io --stats-period 1 --nb-cores=1 \
  --total-num-mbufs=16384
echo "bench: testpmd io forward, 2 cores"
# Forwarding lcores 1 and 2 on CPUs 0 and 1; the main lcore only prints stats and shares CPU 0.
testpmd "$run/testpmd-io-2.txt" --lcores='0@0,1@0,2@1' "${common[@]}" -- --forward-mode=io \
  --stats-period 1 --nb-cores=2 --rxq=2 --txq=2 --total-num-mbufs=16384
# The like-for-like limit: the same forwarding through dta-netio, whose pool packs its mbufs without
# hugepages (testpmd's puts one per 4 KiB page, all of a burst in the same L1 sets): the translator's ratio to
# this one is the part of its ratio to testpmd that the pool does not explain.
echo "bench: io forward through dta-netio, 1 core"
"$bin/dta-bench" iofwd --secs "$secs" -- "${eal1[@]}" > "$run/iofwd-netio-1.json"
echo "bench: testpmd txonly, 1 core"
testpmd "$run/testpmd-txonly-1.txt" "${eal1[@]}" -- --forward-mode=txonly --stats-period 1 \
  --nb-cores=1 --total-num-mbufs=16384

# The translator as users run it (issue 25): `dta-translator run`'s worker loop body, DataPlane::poll, on
# one and two workers, reports from a pre-filled net_null, RoCE answered through a net_ring as a collector's
# RNIC would. (Not Sketch-Merge: the pre-filled pool hands reports out in its cache's order, which a
# sketch's per-column merge reads as out of order.)
dmodes=(keywrite-n1 keywrite-n2 keyincrement append-b1 append-b4 append-b16 postcard5 int-v05)
for w in 1 2; do
  for m in "${dmodes[@]}"; do
    echo "bench: daemon data path $m, $w worker(s)"
    "$bin/dta-bench" daemon --mode "$m" --workers "$w" --secs "$secs" -- "${eal1[@]}" \
      > "$run/daemon-$m-w$w.json"
  done
done
# The bump in the wire: non-DTA frames from a looping net_pcap to a net_null sink, through the daemon's
# data path (with its engine) and through testpmd io forwarding, on the same vdevs in the same minute.
"$bin/dta-bench" forward-pcap --out "$run/forward.pcap" --count 1024
fwd_eal=(-l 0-1 "${mem[@]}" --no-pci "--vdev=net_pcap0,rx_pcap=$run/forward.pcap,infinite_rx=1"
  --vdev=net_null1,no-rx=1 --log-level=warning --no-telemetry)
echo "bench: bump in the wire, testpmd io forward"
testpmd "$run/testpmd-forward.txt" "${fwd_eal[@]}" -- --forward-mode=io --stats-period 1 --nb-cores=1
echo "bench: bump in the wire, the daemon's data path"
"$bin/dta-bench" forward --from net_pcap0 --to net_null1 --secs "$secs" -- "${fwd_eal[@]}" > "$run/forward.json"

# The software responder (the collector of every user without an RDMA NIC), same minute as testpmd.
for m in write fetch-add; do
  echo "bench: software responder $m"
  "$bin/dta-bench" responder --mode "$m" --secs "$secs" > "$run/responder-$m.json"
done

# The software responder daemon (issue 25, item 5): dta-collector serve's own DPDK loop (MbufLoop::poll) on one
# core through a net_ring, the bench writing requests into mbufs and taking responses as a NIC would.
for m in write fetch-add; do
  echo "bench: software responder daemon $m"
  "$bin/dta-bench" responder-daemon --mode "$m" --secs "$secs" -- "${eal1[@]}" > "$run/responder-daemon-$m.json"
done

# The whole system (issue 25, item 6): the release dta-pktgen (DPDK) -> net_memif -> dta-translator run (1
# worker) -> net_memif -> dta-collector serve --backend soft, three processes pinned (the collector alone on CPU
# 0, the sender beside the translator on CPU 1: the collector's ACKs bound the QP window); the highest lossless
# Key-Write N = 1 rate by search, the stage that loses first, then testpmd io-fwd in the translator's place over
# the same vdevs. memif rings of 2^14 slots: a 1024-slot ring overflows whenever another process preempts a
# daemon for ~3 ms, which on this shared machine set the "lossless" rate rather than the daemons did. Buffers of
# 256 bytes (a Key-Write report is 54 bytes, its RDMA WRITE 82; a longer frame would chain several): 2^14
# buffers of memif's default 2 KiB are 32 MiB a ring, which every copy in and out of it missed in cache (perf:
# the sender's store into the ring was its hottest instruction); with 256 the translator's CPU per report fell
# by about a third and the lossless rate rose from ~4.5 to 6 M/s in a run of fixed rates. Bounded to ~2 minutes.
echo "bench: whole system over net_memif (rate search)"
# (Each process sets its own -m.)
if [ -n "$hugepages" ]; then sysmem=--in-memory; else sysmem="--no-huge --no-shconf"; fi
timeout -k 10 150 "$bin/dta-bench" system --dir "$run/system" --memif-rsize 14 --memif-bsize 256 --mem "$sysmem" \
  > "$run/system.json" 2> "$run/system.log" || echo "bench: whole-system run failed, see $run/system.log"

# Key-Write N = 1 under callgrind: instructions per report of DataPlane::poll (the daemon's worker loop
# body), and where they go. A short run (callgrind is ~50x slower), the poll only.
echo "bench: callgrind, daemon data path Key-Write N = 1"
valgrind --tool=callgrind --toggle-collect='dta_translator_daemon::run::dataplane::DataPlane*::poll' \
  --callgrind-out-file="$run/callgrind-daemon.out" \
  "$bin/dta-bench" daemon --mode keywrite-n1 --secs 0.5 -- "${eal1[@]}" \
  > "$run/callgrind-daemon-keywrite-n1.json" 2> "$run/callgrind-daemon.log"
{
  echo "callgrind, the daemon's DataPlane::poll, Key-Write N = 1, inclusive cost (Ir) by function:"
  callgrind_annotate --inclusive=yes "$run/callgrind-daemon.out" 2>/dev/null | sed -n '/^Ir/,$p' | grep -E '^ *[0-9,]+ \(' | grep -vE 'rustc/|libc.so|clone.S' | sed -n '1,30p'
} | cut -c1-220 > "$run/profile-daemon.txt" || true

echo "bench: criterion (iCRC, DTA parse, frame build)"
crit=(-- --warm-up-time 1 --measurement-time 2)
cargo bench -p dta-protocol --bench icrc "${crit[@]}" > "$run/criterion-icrc.txt" 2>&1
cargo bench -p dta-bench --bench wire "${crit[@]}" > "$run/criterion-wire.txt" 2>&1

echo "bench: CPU collector baseline over UDP loopback"
"$bin/dta-bench" baseline --mode keywrite-n1 --secs "$secs" > "$run/baseline-keywrite-n1.json"
"$bin/dta-bench" baseline --mode append-b1 --secs "$secs" > "$run/baseline-append-b1.json"
# The CPU INT collector (fabric-tna v0.5 reports: parse, inner parse, flow-table insert) beside the
# translator's INT front end on the same reports.
"$bin/dta-bench" baseline --mode int-v05 --secs "$secs" > "$run/baseline-int-v05.json"

echo "bench: collector queries"
"$bin/dta-bench" queries --secs 2 > "$run/queries.json"

# The collector's history exporter (issue 28): rows/s per core into Parquet, and the highest Append rate
# it keeps up with before its ring overruns (a 2^16-entry ring; poll_ms 100, the default, where polling
# bounds the rate, and 10, where the thread's own speed does); about 40 s.
echo "bench: history exporter"
"$bin/dta-bench" export > "$run/export.json"
"$bin/dta-bench" export --secs 2 --poll-ms 10 > "$run/export-poll10.json"

# dta-pktgen out of the same DPDK net_null vdev, with the same EAL options as testpmd txonly on one core.
echo "bench: dta-pktgen"
for wl in keywrite append; do
  "$bin/dta-pktgen" --workload "$wl" --duration "$secs" --dpdk net_null0 --eal "-l 0 ${common[*]}" \
    > "$run/pktgen-$wl.json"
done

"$bin/dta-bench" report --dir "$run" --criterion "$target/criterion" --out "$top/bench" $hugepages
echo "bench: wrote bench/results.json, bench/results.md, bench/results.png (raw outputs in $run)"
