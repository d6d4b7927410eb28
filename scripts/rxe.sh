#!/usr/bin/env bash
# The Soft-RoCE suite: boots Debian's own kernel under QEMU (TCG) with virtme-ng, the host's filesystem as
# the guest's root, and runs dta-e2e-rxe inside as root: reporter and translator in namespaces, the
# collector on the ibverbs backend over Linux Soft-RoCE (rdma_rxe), every primitive checked exactly, then
# again under netem loss and reordering, DART writes from the reporter included; then dta-e2e-conformance,
# our software responder judged against rxe request by request. Everything lives in the VM (namespaces, rxe, netem) and goes
# with it; the scratch directory is removed. Bounded by progress: the run is stopped when neither the suite's
# logs nor the VM's console grew for RXE_STALL seconds (default 300), and in any case after RXE_TIMEOUT
# seconds (default 2400, a bound for a machine so loaded that it crawls, not the expected duration: ~3 min).
#
# Arguments are passed to dta-e2e-rxe (`--reports N`, `--fault-reports N`, `--fault-percent P`).
# Without the VM's ingredients (run `make setup`) it fails, unless DTA_RXE_OPTIONAL=1, which skips loudly.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

skip_or_fail() {
  if [[ "${DTA_RXE_OPTIONAL:-0}" == 1 ]]; then
    echo "SKIP: rxe suite: $1" >&2
    exit 0
  fi
  echo "rxe suite: $1 (make setup installs what it needs; DTA_RXE_OPTIONAL=1 skips)" >&2
  exit 1
}

[[ $EUID -eq 0 ]] || skip_or_fail "needs root (the guest runs as the invoking user)"
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)
[[ -n "$kernel" ]] || skip_or_fail "no kernel in /boot (package linux-image-amd64)"
command -v qemu-system-x86_64 >/dev/null || skip_or_fail "no qemu-system-x86_64 (package qemu-system-x86)"
[[ -x "$top/.venv/bin/vng" ]] || skip_or_fail "no virtme-ng in .venv"
command -v busybox >/dev/null || [[ -x /bin/busybox ]] || skip_or_fail "no busybox (package busybox-static)"

# RXE_PROFILE=debug uses the binaries `make unit` has just built (no second build); release is the default.
profile=${RXE_PROFILE:-release}
echo "== building the $profile binaries the guest runs"
if [[ "$profile" == release ]]; then
  cargo build --release -q -p dta-translator-daemon -p dta-collector -p dta-reporter -p dta-e2e --bins
else
  cargo build -q -p dta-translator-daemon -p dta-collector -p dta-reporter -p dta-e2e --bins
fi
bindir="target/$([[ "$profile" == release ]] && echo release || echo debug)"

scratch=$(mktemp -d /tmp/dta-rxe.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# The guest runs copies: a build on the host during the run must not swap binaries under it.
mkdir "$scratch/bin"
for b in dta-translator dta-collector dta-report dta-e2e-rxe dta-e2e-conformance; do
  cp "$bindir/$b" "$scratch/bin/"
done
args=""
if [[ $# -gt 0 ]]; then args=$(printf ' %q' "$@"); fi
# The guest's script: the suite's output goes to a file on the shared directory, and its exit status too
# (the console also carries the kernel's messages).
cat > "$scratch/guest.sh" <<GUEST
export DTA_BIN_DIR="$scratch/bin" RUST_LOG="\${RUST_LOG:-info}" PATH="$PATH"
cd "$scratch"
# 2 MiB hugepages for the collector's regions, as a production collector has them (it registers them).
echo 32 > /proc/sys/vm/nr_hugepages
timeout $(( ${RXE_TIMEOUT:-2400} - 120 )) "$scratch/bin/dta-e2e-rxe"$args > "$scratch/suite.log" 2>&1
echo \$? > "$scratch/rc"
# Then our software responder judged against rxe, request by request (its own rxe1 on its own veth).
"$scratch/bin/dta-e2e-conformance" --timeout 300 --collector "$scratch/bin/dta-collector" \
  > "$scratch/conformance.log" 2>&1
echo \$? > "$scratch/conformance.rc"
GUEST

echo "== booting $(basename "$kernel") under QEMU (TCG) with rdma_rxe; the suite runs inside"
start=$(date +%s)
set +e
# KVM hangs at boot on this class of machine, so TCG; --cpus 2 gives rxe's tasklets a CPU of their own.
# In its own process group, so that the watchdog below stops QEMU with it.
setsid env PATH="$top/.venv/bin:$PATH" timeout "${RXE_TIMEOUT:-2400}" vng --run "$kernel" --disable-kvm \
  --memory 2G --cpus 2 --rwdir "$scratch" --exec "bash $scratch/guest.sh" > "$scratch/console.log" 2>&1 &
vm=$!
# The watchdog: a loaded machine may run the suite slowly, never silently. Progress is any growth of the
# console (boot), the suite's log or the conformance log.
stall=${RXE_STALL:-300}
last_size=-1
last_change=$(date +%s)
stalled=0
while kill -0 "$vm" 2>/dev/null; do
  sleep 5
  size=$(cat "$scratch/console.log" "$scratch/suite.log" "$scratch/conformance.log" 2>/dev/null | wc -c)
  now=$(date +%s)
  if [[ "$size" != "$last_size" ]]; then
    last_size=$size
    last_change=$now
  elif (( now - last_change >= stall )); then
    echo "== rxe suite: no progress for ${stall} s (logs at $size bytes): stopping the VM" >&2
    stalled=1
    kill -TERM -- "-$vm" 2>/dev/null || true
    sleep 5
    kill -KILL -- "-$vm" 2>/dev/null || true
    break
  fi
done
wait "$vm"
vm_rc=$?
set -e
cat "$scratch/suite.log" 2>/dev/null || true
echo "== differential conformance: our software responder against rxe"
cat "$scratch/conformance.log" 2>/dev/null || true
rc=$(cat "$scratch/rc" 2>/dev/null || echo none)
crc=$(cat "$scratch/conformance.rc" 2>/dev/null || echo none)
echo "== rxe suite: exit status $rc, conformance $crc, VM exit $vm_rc, $(( $(date +%s) - start )) s"
if [[ "$stalled" == 1 || "$rc" != 0 || "$crc" != 0 ]]; then
  echo "---- last lines of the VM console ----"
  tail -n 40 "$scratch/console.log"
  exit 1
fi
