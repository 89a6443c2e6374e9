# Thin wrapper over CMake/CTest: the two commands (make run, make test) and a few helpers.
BUILD ?= build
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
SAN_LOGS := $(CURDIR)/build-asan/sanitizer-logs

.PHONY: all deps build test test-release test-asan run asan tsan test-tsan fuzz package clean

all: build

deps:
	packaging/deps.sh test

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS)

# Everything CI runs: the release build's tests, the same tests under ASan+UBSan, and the fuzzers.
test: test-release test-asan fuzz
	@echo "make test: all suites passed"

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j2 --timeout 600

run: build
	packaging/run-local.sh

# AddressSanitizer + UndefinedBehaviorSanitizer build in its own directory. Every process the
# tests start (mcring included) logs reports to $(SAN_LOGS); any report fails the run.
asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCRING_SANITIZE=address,undefined
	cmake --build build-asan -j$(JOBS) --target mcring unit_protocol unit_routing unit_config \
	  $(shell test -d tests/unit/stats && echo unit_stats)

test-asan: asan
	rm -rf $(SAN_LOGS) && mkdir -p $(SAN_LOGS)
	cd build-asan && \
	  ASAN_OPTIONS=detect_leaks=1:log_path=$(SAN_LOGS)/asan \
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
	cd build-tsan && TSAN_OPTIONS=log_path=$(CURDIR)/build-tsan/sanitizer-logs/tsan \
	  ctest --output-on-failure --timeout 900 -R '^integration_'
	@if ls build-tsan/sanitizer-logs/* >/dev/null 2>&1; then cat build-tsan/sanitizer-logs/*; exit 1; fi

# libFuzzer targets (clang), each run for FUZZ_SECONDS on its committed seed corpus.
fuzz: deps
	CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DMCRING_FUZZ=ON -DMCRING_BUILD_BENCH=OFF
	cmake --build build-fuzz -j$(JOBS) --target fuzz_targets
	packaging/run-fuzzers.sh build-fuzz $(FUZZ_SECONDS)

package: build
	cd $(BUILD) && cpack -G DEB

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
