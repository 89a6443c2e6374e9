# Thin wrapper: the two commands (make run, make test) plus a few helpers. CMake does the work.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build test run asan tsan fuzz clean

all: build

deps:
	packaging/deps.sh test

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j2 --timeout 600

run: build
	packaging/run-local.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
