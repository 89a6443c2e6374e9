# Thin wrapper over CMake/CTest: the two commands (make run, make test) and a few helpers.
BUILD ?= build
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 30
SAN_LOGS := $(CURDIR)/build-asan/sanitizer-logs

.PHONY: all deps build check test test-release test-release-all test-asan test-asan-run run asan tsan test-tsan \
	fuzz fuzz-run differential package clean

all: build

deps:
	packaging/deps.sh test

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS)

# The fast gate, for every change: one release build of the proxy and the unit tests (no
# benchmarks, no fuzzers), then every test not labelled `slow` — the unit and in-process
# data-plane tests, the routing vectors, the include graph, the format, `mcring plan` end to end.
# The integration, bench-smoke and packaging tests are labelled `slow`; `make test` runs them all.
check: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS) --target check_build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300 -LE slow
	@echo "make check: passed"

# Everything CI runs, in three steps, each as parallel as 2 cores allow:
#   1. the release build (gcc);
#   2. the sanitizer build (clang, ASan+UBSan: mcring, unit tests, fuzz targets) beside the
#      release tests (unit tests, benches, packaging, the integration tests that measure RSS,
#      which ASan inflates, the admin tests, whose fd exhaustion UBSan cannot run under, and the
#      console's browser test, which checks the page, not the proxy's memory);
#   3. every unit and integration test under the sanitizers, beside the fuzzers.
# The integration tests that only check behaviour run under the sanitizers, not twice;
# `make test-release-all` runs every test against the release build.
test: deps
	$(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory -j2 asan test-release
	$(MAKE) --no-print-directory -j2 test-asan-run fuzz-run
	@echo "make test: all suites passed"

RELEASE_TESTS := ^(unit_|cli_|bench_|package|integration_(memory_budget|hostile|bounded_views|abuse|chaos|reload_storm|admin|console)$$)
test-release: build
	cd $(BUILD) && ctest --output-on-failure -j2 --timeout 600 -R '$(RELEASE_TESTS)'

test-release-all: build
	cd $(BUILD) && ctest --output-on-failure -j2 --timeout 600

run: build
	packaging/run-local.sh

# The sanitizer build: clang-14, AddressSanitizer + UndefinedBehaviorSanitizer, -O1 with line
# tables (enough for stack traces, a third less compile time than -O2 -g), in its own directory;
# the fuzz targets are built there too (tests/fuzz). Every process the tests start (mcring
# included) logs reports to $(SAN_LOGS); any report fails the run.
SAN_FLAGS := -O1 -g1
asan: deps
	CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(SAN_FLAGS)" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SAN_FLAGS)" \
	  -DMCRING_SANITIZE=address,undefined -DMCRING_FUZZ=ON -DMCRING_BUILD_BENCH=OFF
	cmake --build build-asan -j$(JOBS) --target mcring unit_protocol unit_routing unit_config \
	  unit_dataplane unit_stats unit_net unit_admin unit_control fuzz_targets

test-asan: asan
	$(MAKE) --no-print-directory test-asan-run

test-asan-run:
	rm -rf $(SAN_LOGS) && mkdir -p $(SAN_LOGS)
	cd build-asan && \
	  MCRING_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1:log_path=$(SAN_LOGS)/asan \
	  UBSAN_OPTIONS=print_stacktrace=1:log_path=$(SAN_LOGS)/ubsan \
	  ctest --output-on-failure -j2 --timeout 900 -R '^(unit_|integration_)'
	@if ls $(SAN_LOGS)/* >/dev/null 2>&1; then \
	  echo "sanitizer reports:"; cat $(SAN_LOGS)/*; exit 1; \
	else echo "sanitizers: no reports"; fi

# ThreadSanitizer run of the multi-worker integration tests (not part of make test: slow).
tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCRING_SANITIZE=thread
	cmake --build build-tsan -j$(JOBS) --target mcring
test-tsan: tsan
	rm -rf build-tsan/sanitizer-logs && mkdir -p build-tsan/sanitizer-logs
	cd build-tsan && MCRING_SANITIZED=1 TSAN_OPTIONS=log_path=$(CURDIR)/build-tsan/sanitizer-logs/tsan \
	  ctest --output-on-failure --timeout 900 -R '^integration_'
	@if ls build-tsan/sanitizer-logs/* >/dev/null 2>&1; then cat build-tsan/sanitizer-logs/*; exit 1; fi

# libFuzzer targets (built in the sanitizer build), each run for FUZZ_SECONDS on its committed
# seed corpus.
fuzz: asan
	$(MAKE) --no-print-directory fuzz-run

fuzz-run:
	packaging/run-fuzzers.sh build-asan $(FUZZ_SECONDS)

# A longer run of the stateful differential fuzzer against memcached (make test runs a fixed
# seed, 20,000 requests; see tests/integration/diff_fuzz.py). Replay a failure with DIFF_SEED=<seed>.
DIFF_SEED ?= $(shell date +%s)
DIFF_COMMANDS ?= 100000
differential: build
	cd tests/integration && MCRING_BIN=$(CURDIR)/$(BUILD)/mcring MCRING_DIFF_SEED=$(DIFF_SEED) \
	  MCRING_DIFF_COMMANDS=$(DIFF_COMMANDS) /usr/bin/python3 -m unittest -v test_differential

package: build
	cd $(BUILD) && cpack -G DEB

clean:
	rm -rf $(BUILD) build-asan build-tsan

# Instructions per request of the in-process hot path (bench/micro/hot_path_bench.cc: parse,
# route, frame replies) under callgrind. Two iteration counts, so that startup (ring build,
# input generation) cancels out: (Ir(N2) - Ir(N1)) / (requests(N2) - requests(N1)).
PERF_BUILD ?= build-perf
HOT_N1 ?= 1000
HOT_N2 ?= 11000
.PHONY: bench-instructions
bench-instructions:
	@command -v valgrind >/dev/null || { echo "bench-instructions needs valgrind: apt-get install valgrind" >&2; exit 1; }
	cmake -S . -B $(PERF_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(PERF_BUILD) --target hot_path_bench -j$(JOBS)
	@set -e; cd $(PERF_BUILD); \
	for n in $(HOT_N1) $(HOT_N2); do \
	  echo "valgrind --tool=callgrind --callgrind-out-file=$(PERF_BUILD)/callgrind.hot_path.$$n.out ./hot_path_bench $$n"; \
	  valgrind --tool=callgrind --callgrind-out-file=callgrind.hot_path.$$n.out \
	    ./hot_path_bench $$n > hot_path.$$n.txt 2> callgrind.hot_path.$$n.log; \
	done; \
	ir1=$$(awk '/^(summary|totals):/ {print $$2; exit}' callgrind.hot_path.$(HOT_N1).out); \
	ir2=$$(awk '/^(summary|totals):/ {print $$2; exit}' callgrind.hot_path.$(HOT_N2).out); \
	rq1=$$(awk '$$1 == "requests" {print $$2}' hot_path.$(HOT_N1).txt); \
	rq2=$$(awk '$$1 == "requests" {print $$2}' hot_path.$(HOT_N2).txt); \
	ky1=$$(awk '$$1 == "keys" {print $$2}' hot_path.$(HOT_N1).txt); \
	ky2=$$(awk '$$1 == "keys" {print $$2}' hot_path.$(HOT_N2).txt); \
	echo "N=$(HOT_N1): $$rq1 requests, $$ir1 Ir;  N=$(HOT_N2): $$rq2 requests, $$ir2 Ir"; \
	awk -v i1=$$ir1 -v i2=$$ir2 -v r1=$$rq1 -v r2=$$rq2 -v k1=$$ky1 -v k2=$$ky2 'BEGIN { \
	  printf "instructions per request: %.1f  (per key routed: %.1f; startup %.0f Ir)\n", \
	    (i2 - i1) / (r2 - r1), (i2 - i1) / (k2 - k1), i1 - (i2 - i1) / (r2 - r1) * r1 }'; \
	echo "top functions (self Ir, N=$(HOT_N2)):"; \
	callgrind_annotate --inclusive=no callgrind.hot_path.$(HOT_N2).out 2>/dev/null | \
	  awk '/^ *[0-9,]+ +\(/ && !/PROGRAM TOTALS/' | head -12
