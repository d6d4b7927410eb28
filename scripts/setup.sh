#!/usr/bin/env bash
# Installs every system package and tool dta needs on a fresh Debian 12 machine.
# Idempotent and non-interactive: a second run only checks that everything is present.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
venv="$top/.venv"

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo "$@"; else
      echo "setup: '$*' needs root (no sudo found)" >&2; exit 1
    fi
  else "$@"; fi
}

# Debian packages: DPDK 22.11, its headers and dpdk-testpmd (in dpdk-dev, for the benchmarks), rdma-core for the collector's ibverbs backend (and what
# ibverbs-sys needs to build rdma-core), clang for bindgen, tshark as an independent dissector, the Python
# venv for scapy, libz3 and cpp for the Tofino compiler, iproute2 for the end-to-end namespaces; and for the
# Soft-RoCE suite (scripts/rxe.sh) QEMU, Debian's kernel (it has rdma_rxe, the host's may not) and
# busybox for virtme-ng's guest init, with ibverbs-utils to inspect the device by hand; clickhouse-server,
# the real ClickHouse the exporter's tests insert into (Debian's 18.16, run by the tests as a process of
# their own on loopback: its packaged service is not needed).
packages=(
  dpdk dpdk-dev libdpdk-dev pkg-config libclang-dev clang cmake
  libnl-3-dev libnl-route-3-dev libibverbs-dev rdma-core ibverbs-providers
  tshark python3-venv python3-pip libz3-4 cpp iproute2 libpcap-dev
  qemu-system-x86 linux-image-amd64 busybox-static ibverbs-utils clickhouse-server
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer for it.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | need_root debconf-set-selections
  need_root apt-get update -q
  need_root apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Prometheus, which brings promtool: the monitoring checks (e2e/tests/deploy.rs runs `promtool check
# rules` on deploy/prometheus/rules.yml; e2e/tests/prometheus.rs starts its own server with its own
# configuration in a test namespace, so the package's own service is not used).
if ! dpkg-query -W -f='${Status}' prometheus 2>/dev/null | grep -q "install ok installed"; then
  echo "setup: installing prometheus"
  need_root apt-get update -q
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus
fi

# Python venv with scapy (the independent oracle for RoCEv2 frames and iCRC) and pytest.
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import scapy.contrib.roce, pytest' >/dev/null 2>&1; then
  "$venv/bin/pip" install -q 'scapy==2.6.1' 'pytest==8.3.4'
fi
# pyarrow and chdb (ClickHouse in-process) read the exporter's Parquet files back in its tests.
if ! "$venv/bin/python" -c 'import pyarrow, chdb' >/dev/null 2>&1; then
  "$venv/bin/pip" install -q 'pyarrow==26.0.1' 'chdb==4.4.0'
fi
# virtme-ng boots a kernel with the host's filesystem as the guest's root (the rxe suite).
if [ ! -x "$venv/bin/vng" ]; then
  "$venv/bin/pip" install -q 'virtme-ng==1.42'
fi

# cargo-fuzz for the parser fuzz targets (run with RUSTC_BOOTSTRAP=1 on the stable toolchain).
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz@0.12.0
fi

echo "setup: ok"
