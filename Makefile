# dta: Direct Telemetry Access in Rust. `make test` is what CI runs (through .ci/run).
SHELL := /bin/bash
CARGO ?= cargo
VENV := .venv
PY := $(VENV)/bin/python
# Short coverage-guided runs of every fuzz target inside `make test`; `make fuzz` runs longer.
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_SECONDS ?= 300
FUZZ_TARGETS := dta_parse roce_parse int_parse int_handoff int_translate translator_engine responder

.PHONY: setup build test unit test-rxe fuzz-smoke fuzz lint fmt p4 bench-protocol bench figures demo clean

## Install every system package and tool (Debian 12), idempotently.
setup:
	bash scripts/setup.sh

build: setup
	$(CARGO) build --workspace --all-targets

## The whole test suite: unit, property and integration tests, the scapy oracle cross-check, lint,
## the Soft-RoCE suite in a VM, the fuzz smoke run and the P4 checks.
test: setup
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory test-rxe
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory p4

## Rust tests. DTA_REQUIRE_ORACLES makes the scapy cross-checks fail instead of skipping without the venv;
## DTA_REQUIRE_NETNS makes the namespace tests (AF_PACKET, DPDK on veths, end to end) fail instead of
## skipping where namespaces cannot be made, so CI cannot pass by skipping them; DTA_REQUIRE_PROMETHEUS
## makes the monitoring tests (promtool on the shipped rules, a real Prometheus scraping both daemons)
## fail instead of skipping without Debian's prometheus package.
unit:
	DTA_REQUIRE_ORACLES=1 DTA_REQUIRE_NETNS=1 DTA_REQUIRE_PROMETHEUS=1 DTA_ORACLE_PYTHON=$(abspath $(PY)) $(CARGO) test --workspace

## The Soft-RoCE suite: a VM with Debian's kernel and rdma_rxe, the collector on the ibverbs backend over
## rxe, every primitive exact through it, then under netem loss and reordering (scripts/rxe.sh).
test-rxe: setup
	bash scripts/rxe.sh $(RXE_ARGS)

lint:
	$(CARGO) fmt --all -- --check
	cd fuzz && $(CARGO) fmt -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p dta-collector --no-default-features --all-targets -- -D warnings
	bash scripts/deps-check.sh
	python3 scripts/module-circles.py $(wildcard */src)

fmt:
	$(CARGO) fmt --all

fuzz-smoke:
	@for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz smoke: $$t ($(FUZZ_SMOKE_SECONDS)s)"; \
	  (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $$t -- -max_total_time=$(FUZZ_SMOKE_SECONDS) -rss_limit_mb=2048) || exit 1; \
	done

## Longer fuzzing: FUZZ_SECONDS per target.
fuzz: setup
	@for t in $(FUZZ_TARGETS); do \
	  (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS)) || exit 1; \
	done

## P4: both programs through p4check and tofino-compile (p4/check.sh), their control-plane tests, and the
## contract check that every P4 header, port and opcode matches dta-protocol.
p4:
	bash p4/check.sh
	$(CARGO) run -q -p dta-protocol --example contract > target/contract.json
	@for prog in p4/reporter/dta_reporter.p4 p4/translator/dta_translator.p4; do \
	  for form in "" -DDTA_COMPACT; do \
	    $(PY) tests/contract/check_p4_contract.py target/contract.json $$prog $$form || exit 1; \
	  done; \
	done

## Benchmarks (not part of `make test`, under 15 minutes): testpmd's limit, the translator on DPDK net_null
## per primitive on 1 and 2 cores, the CPU collector baseline, collector queries, pktgen and criterion costs;
## writes bench/results.{json,md,png}.
bench: setup
	bash scripts/bench.sh

## Criterion micro-benchmarks of the protocol crate (iCRC naive and with the per-QP prefix).
bench-protocol:
	$(CARGO) bench -p dta-protocol --bench icrc

## The demo: reporter -> translator -> collector in network namespaces, a mixed workload, exact queries
## and a results table, then INT reports whose exported history (Parquet, target/demo-history/) it ends
## by querying with chdb (needs root; no hugepages needed).
demo: setup
	$(CARGO) build --release -p dta-translator-daemon -p dta-collector -p dta-e2e --bins
	bash scripts/demo.sh

## The paper's figures 12 and 13 and the measured-vs-analytical tables, from the real engine (dta-sim):
## PNG and CSV into figures/.
figures: setup
	$(CARGO) run --release -p dta-sim -- figures --out figures/

clean:
	$(CARGO) clean
	rm -rf fuzz/target
