# The project's interface to people and CI. Everything builds with CMake into build/
# (build-asan/ for the sanitizer build); the package check runs first, so a fresh
# Debian machine needs nothing but this file's targets.
JOBS ?= $(shell nproc)
BUILD ?= build
CTEST_FLAGS ?= --output-on-failure

.PHONY: all deps build install uninstall demo test asan-test tsan-test bench bench-batch bench-cpu bench-cluster bench-control bench-failover bench-hitrate bench-pressure bench-recovery bench-small bench-smoke bench-ssd bench-ssd-refill fuzz clean

all: build

deps:
	@./scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# make install [PREFIX=/usr/local] [DESTDIR=]: the CLI and the daemons, libfluxon
# with its header and fluxon.pc, the Python package, the systemd units and the
# example configs (the layout: packaging/install.cmake). It configures $(BUILD)
# for PREFIX and builds only what it installs. make uninstall removes what the
# last install from $(BUILD) recorded (under the same DESTDIR). It installs only
# the packages the build needs (scripts/deps.sh --build), no test tools.
PREFIX ?= /usr/local

install:
	@./scripts/deps.sh --build
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$(PREFIX)" >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target fx_installables
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

uninstall:
	@DESTDIR="$(DESTDIR)" cmake -DMANIFEST="$(BUILD)/install_manifest.txt" -P packaging/uninstall.cmake

demo: build
	@./scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest $(CTEST_FLAGS) -j 2

asan-test: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFX_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ctest $(CTEST_FLAGS) -j 2 -LE fuzz

# ThreadSanitizer over the tests of the multi-threaded pieces (the SSD engine,
# the owner's get threads beside its loop, the client's threads on one pool).
tsan-test: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DFX_TSAN=ON >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest $(CTEST_FLAGS) -R 'ssd|get_lanes|near_cache'

# fx_bench_cluster starts two owners of FX_BENCH_SEGMENT_MIB (default 1024) each: huge
# pages are reserved for both first (root only; never lowers the reservation).
BENCH_CLUSTER = ./scripts/hugepages.sh $$(( 2 * $${FX_BENCH_SEGMENT_MIB:-1024} * 1048576 )) && \
	$(BUILD)/bench/fx_bench_cluster

BENCH_HITRATE = ./scripts/hugepages.sh $$(( $${FX_HITRATE_MEMORY_MIB:-1024} * 1048576 )) && \
	$(BUILD)/bench/fx_bench_hitrate --memory-mib $${FX_HITRATE_MEMORY_MIB:-1024}

bench: build
	@$(BUILD)/bench/fx_bench_micro
	@$(BUILD)/bench/fx_bench_batch
	@$(BUILD)/bench/fx_bench_exists
	@$(BENCH_CLUSTER)
	@$(BENCH_HITRATE)

# The batch calls of "Many keys at once" (docs/benchmarks.md): C batch get/put/exists,
# then the same calls from Python (batch_exists, batch_get_into, batch_put_from).
bench-batch: build
	@$(BUILD)/bench/fx_bench_batch
	@$(BUILD)/bench/fx_bench_exists
	@PYTHONPATH=$(BUILD)/python FX_BUILD_DIR=$(BUILD) python3 bench/py_exists_bench.py
	@PYTHONPATH=$(BUILD)/python FX_BUILD_DIR=$(BUILD) python3 bench/py_batch_io_bench.py

# Owner-to-owner pulls and pushes against one loopback TCP stream (docs/benchmarks.md).
bench-cluster: build
	@$(BENCH_CLUSTER)

# What one put / remote get / local get costs each process in CPU time and sleeps,
# next to one Unix-socket round trip: the fixed cost of a remote get (docs/benchmarks.md).
bench-control: build
	@./scripts/hugepages.sh $$(( 2 * 1024 * 1048576 )) && $(BUILD)/bench/fx_bench_control

# Failover (issue 20): etcd, two masters, three owners; FAILOVER_KILLS (default 10)
# kill -9 of the leader, each timed to the new leader (etcd) and to the first
# successful put (docs/benchmarks.md). Needs /usr/bin/etcd; about 5 s a kill.
bench-failover: build
	@$(BUILD)/bench/fx_bench_failover $(FAILOVER_KILLS)

# Recovery (issue 20): one master and two owners holding N values of 256 bytes
# (RECOVERY_NS, default 10k,100k,1M); kill -9 of the master and its restart, timed
# to the first get that needs it and to its "recovery ended" (docs/benchmarks.md).
# The 1M case fills for about a minute and takes 2 x 326 MiB of segments.
bench-recovery: build
	@$(BUILD)/bench/fx_bench_recovery $(RECOVERY_NS)

# Hit rate of the master's replica eviction policy against LRU and Belady's MIN on
# seeded Zipf traces: simulated, then replayed on a one-owner cluster with a
# FX_HITRATE_MEMORY_MIB (default 1024) segment, whose huge pages are reserved first
# (root only). `fx_bench_hitrate --sim-only` needs no cluster.
bench-hitrate: build
	@$(BENCH_HITRATE)

# Single-key 4 KiB gets and 4 / 64 KiB puts, 1 and 2 client threads, Fluxon against
# a memcached it starts, alternating in one run (FX_BENCH_SMALL_ROUNDS, default 5;
# FX_BENCH_SMALL_OPS, ops per thread and pass at 4 KiB, default 20000).
bench-small: build
	@./scripts/deps.sh --bench && $(BUILD)/bench/fx_bench_small

# The pressure benchmark of spec 000 §8 against memcached (+ extstore) and redis
# (docs/benchmarks.md). The full matrix takes hours on 2 cores; PRESSURE_ARGS
# narrows it (options at the top of bench/pressure/run.sh). bench-smoke: one
# payload, c1, a 5 s window, under 3 minutes.
bench-cpu: build
	@$(BUILD)/bench/fx_bench_cpu

bench-pressure: build
	@./scripts/deps.sh --bench && ./bench/pressure/run.sh $(BUILD) $(PRESSURE_ARGS)

bench-smoke: build
	@./scripts/deps.sh --bench && \
		./bench/pressure/run.sh $(BUILD) --smoke --out $(BUILD)/pressure-smoke

bench-ssd: build
	@./scripts/bench_ssd.sh $(BUILD)

# SSD refill (issue 5): fio, then local and remote refills from the SSD tier
# (docs/benchmarks.md). Not part of `make bench`: it takes a few minutes and about
# 2 x FX_REFILL_SSD_MIB (4096) + FX_REFILL_FIO_MIB (2048) MiB of disk under /tmp
# (fallocated shard files, removed at the end). Huge pages for two owners of
# FX_REFILL_DRAM_MIB (512) and fio's buffers are reserved first (root only).
bench-ssd-refill: build
	@./scripts/hugepages.sh $$(( (2 * $${FX_REFILL_DRAM_MIB:-512} + 32) * 1048576 )) && \
		$(BUILD)/bench/fx_bench_ssd_refill

clean:
	rm -rf build build-asan build-tsan
