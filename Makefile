# Lightbox. `make run` to use it, `make test` to test it.
#
# Without REDIS_URL / DATABASE_URL, the targets that need them start a local
# Redis and PostgreSQL under .data/ (see scripts/lib.sh) and stop them again
# when done, unless they were already running (`make services`).

SHELL := /bin/bash

# Go in its usual place even when a non-login shell has no PATH for it.
export PATH := $(PATH)$(if $(wildcard /usr/local/go/bin/go),:/usr/local/go/bin)

PKG     ?= ./...
RACE    ?= -race
# Packages tested under -race and, again in full, without it (see
# scripts/test.sh).
PLAIN_PKG ?=
# Packages tested without -race alone: those that drive Lightbox's binaries
# as processes of their own, built without -race; pixel arithmetic in Go and
# C, which -race slows tenfold and has nothing to find in; and the browser
# tests, whose server and worker code the race pass covers in their own
# packages (see scripts/test.sh).
NORACE_PKG ?= ./faults/ ./sdk/ ./imaging/ ./embedding/ ./render/ ./e2e/
TIMEOUT ?= 45m
# How many packages' tests run at once, and which start first: the suite
# mostly waits, so more than the cores (see scripts/test.sh).
PKG_PARALLEL ?= 4
# How many tests of one package run at once in the -race pass (go test's
# -parallel; its default is the cores): its tests mostly wait on leases,
# outages and heartbeats, so more than the cores (see scripts/test.sh).
TEST_PARALLEL ?= 6
SLOW_PKG ?= ./e2e/ ./worker/ ./server/ ./faults/ ./imaging/ ./sdk/
BENCH   ?= .
BENCH_TIMEOUT ?= 120m
CHAOS_TIMEOUT ?= 60m

.PHONY: all help run test chaos bench build lint services services-stop services-status clean clean-data

all: build

## help: list the targets
help:
	@sed -n 's/^## /  /p' Makefile

## run: services, build, migrate, dev user and key, server and worker; Ctrl-C stops it all
run:
	@scripts/run.sh

## test: services (with fsync off), Chromium for e2e/, Node and the SDK's tools for sdk/, the face sidecar's npm packages, the whole test suite PKG_PARALLEL packages at once, and beside it PLAIN_PKG and NORACE_PKG without -race and each fuzz target for FUZZTIME (20000x), then faces/sidecar/'s Node tests, then alone the tests that compare timings; times in artifacts/test-times.txt; RACE= to skip -race, FUZZ= to skip fuzzing
test:
	@scripts/e2e-deps.sh
	@scripts/sdk-deps.sh
	@scripts/ml-deps.sh
	@LIGHTBOX_PG_FSYNC=off PKG='$(PKG)' RACE='$(RACE)' PLAIN_PKG='$(PLAIN_PKG)' NORACE_PKG='$(NORACE_PKG)' TIMEOUT='$(TIMEOUT)' \
		PKG_PARALLEL='$(PKG_PARALLEL)' TEST_PARALLEL='$(TEST_PARALLEL)' SLOW_PKG='$(SLOW_PKG)' scripts/with-services.sh scripts/test.sh

## chaos: services, then the fault suite's long form (more photos, outages of minutes); table in artifacts/faults.txt
chaos:
	@mkdir -p artifacts
	@LIGHTBOX_CHAOS=1 scripts/with-services.sh go test -count=1 -v -timeout '$(CHAOS_TIMEOUT)' ./faults/

## bench: services, sharp for the imaging baselines, then the benchmarks (BENCH=regex, PKG=./x/...), also in artifacts/bench.txt
bench:
	@mkdir -p artifacts
	@scripts/bench-deps.sh
	@BENCH='$(BENCH)' PKG='$(PKG)' BENCH_TIMEOUT='$(BENCH_TIMEOUT)' scripts/with-services.sh bash -c \
		'set -o pipefail; go test -run "^$$" -bench "$$BENCH" -benchmem -count=1 -timeout "$$BENCH_TIMEOUT" $$PKG 2>&1 | tee artifacts/bench.txt'

## build: the three binaries in bin/
build:
	@scripts/deps.sh
	go build -o bin/ ./cmd/server ./cmd/worker ./cmd/lightbox

## lint: gofmt must list nothing, go vet must pass
lint:
	@scripts/deps.sh
	@out=$$(find . -path ./.data -prune -o -path ./.git -prune -o -name '*.go' -print | xargs -r gofmt -l); \
		if [ -n "$$out" ]; then echo "gofmt -l lists files that need gofmt -w:"; echo "$$out"; exit 1; fi
	go vet $(PKG)

## services: start (or reuse) Redis and PostgreSQL; they keep running
services:
	@scripts/services.sh start >/dev/null
	@echo "Redis and PostgreSQL are running. In a shell: source .data/env (or eval \"\$$(scripts/services.sh start)\")"
	@cat .data/env

## services-stop: stop our Redis and PostgreSQL (never a system service)
services-stop:
	@scripts/services.sh stop

## services-status: whether ours are running
services-status:
	@scripts/services.sh status

## clean: remove bin/ (never .data: see clean-data)
clean:
	rm -rf bin/

## clean-data: stop our services and delete .data/ (databases, blobs, keys)
clean-data:
	@scripts/services.sh clean
