#!/usr/bin/env bash
# Runs the test suite: every package of PKG with RACE (-race, or empty to
# go without); beside it, when RACE is set, the packages of PLAIN_PKG and
# NORACE_PKG among them without it and each fuzz target of FUZZ for
# FUZZTIME inputs; after it, the face sidecar's Node tests when PKG is the
# whole module.
#
# PLAIN_PKG's tests run in both passes. NORACE_PKG's run in the pass
# without -race alone: tests that drive Lightbox's own binaries as
# processes of their own, built without -race (see testsupport/procs), where
# -race would only check their harness; pixel arithmetic in Go and C, which
# -race makes ten times slower and has nothing to find in; and the browser
# tests, whose server and worker code the race pass covers in their own
# packages. Every part runs even when another fails; the status is the
# first failure's.
#
# Most of the suite waits rather than computes (on Postgres, a browser, a
# lease running out, an outage the fault suite holds): its test binaries
# spend about a third of their time on a CPU. So PKG_PARALLEL packages run at
# once rather than one per core, the longest (SLOW_PKG) start first so
# that none of them ends the run alone, and the pass without -race and the
# fuzz targets run beside the main pass; their output follows it. Within
# a package of the main pass TEST_PARALLEL tests run at once, not one per
# core: alone, worker/ takes 110 s with 6 against 161 s with 2, for the
# same CPU. Where the time went: artifacts/test-times.txt for the main
# pass, artifacts/test-times-plain.txt for the one without -race.
#
# A test whose verdict compares timings or CPU (testenv.Alone) skips in
# those busy passes, which swing its figures by more than its margins, and
# runs when they are over, one test at a time and without -race, like the
# servers it measures: artifacts/test-times-alone.txt.
#
#   PKG=./... RACE=-race NORACE_PKG="./faults/ ./sdk/ ./imaging/" TIMEOUT=30m scripts/test.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

PKG=${PKG:-./...}
RACE=${RACE-}
PLAIN_PKG=${PLAIN_PKG-}
NORACE_PKG=${NORACE_PKG-}
TIMEOUT=${TIMEOUT:-30m}
PKG_PARALLEL=${PKG_PARALLEL:-4}
TEST_PARALLEL=${TEST_PARALLEL:-6}
SLOW_PKG=${SLOW_PKG-./e2e/ ./worker/ ./server/ ./faults/ ./imaging/ ./sdk/}
FUZZ=${FUZZ-./imaging/formats:FuzzSniff ./imaging:FuzzParseExif ./imaging:FuzzReadXMP ./imaging:FuzzInspect ./blob:FuzzVerify ./server/jsonbody:FuzzDecode ./xmp:FuzzRead}
# A count of inputs, not a duration: a duration can end a run mid-input, which
# go test reports as a failure ("context deadline exceeded").
FUZZTIME=${FUZZTIME:-20000x}

# first STATUS... is the first non-zero status, or 0.
first() {
	local s
	for s in "$@"; do
		[ "$s" -eq 0 ] || {
			echo "$s"
			return
		}
	done
	echo 0
}

# beside runs the pass without RACE and, meanwhile, the fuzz targets one
# after another, and exits with the first failure's status.
beside() {
	local rc=0 plain_pid f pkg target
	if [ -n "$plain_pkgs" ]; then
		say "without $RACE: $(echo $plain_pkgs)" 2>artifacts/test-plain.log
		# shellcheck disable=SC2086
		go test -json -p "$PKG_PARALLEL" -count=1 -timeout "$TIMEOUT" $plain_pkgs 2>&1 | go run ./scripts/testtimes -o artifacts/test-times-plain.txt -alone artifacts/alone-plain.txt >>artifacts/test-plain.log 2>&1 &
		plain_pid=$!
	fi
	# -fuzz takes one package and one target at a time.
	for f in $FUZZ; do
		pkg=${f%%:*} target=${f#*:}
		grep -qx "$(go list "$pkg")" <<<"$tested" || continue
		say "fuzz $target ($pkg) for $FUZZTIME"
		go test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" "$pkg" || rc=$(first "$rc" $?)
	done
	if [ -n "$plain_pkgs" ]; then
		wait "$plain_pid" || rc=$(first "$rc" $?)
		cat artifacts/test-plain.log
	fi
	exit "$rc"
}

mkdir -p artifacts
rm -f artifacts/alone.txt artifacts/alone-plain.txt
export LIGHTBOX_ALONE=later
# shellcheck disable=SC2086
tested=$(go list $PKG)
# among LIST prints the packages of LIST that are among those tested.
among() {
	# shellcheck disable=SC2086
	[ -z "$*" ] || go list $* | grep -Fx -f <(echo "$tested") || true
}
plain_pkgs= norace=
if [ -n "$RACE" ]; then
	norace=$(among $NORACE_PKG)
	# The longest first, as in the main pass.
	plain_pkgs=$( { among $SLOW_PKG; among $PLAIN_PKG; echo "$norace"; } | grep -Fx -f <( { among $PLAIN_PKG; echo "$norace"; } | grep . || echo /) | awk 'NF && !seen[$0]++')
fi
beside >artifacts/test-beside.log 2>&1 &
beside_pid=$!

# go test starts the packages' tests in the order it is given them.
# shellcheck disable=SC2086
order=$( { among $SLOW_PKG; echo "$tested"; } | awk '!seen[$0]++' | grep -vFx -f <(echo "${norace:-/}") || true)
# scripts/testtimes prints what go test prints without -json, and writes
# each package's time and the slowest tests to artifacts/test-times.txt.
rc=0
# shellcheck disable=SC2086 # RACE and order are lists of words
go test -json $RACE -p "$PKG_PARALLEL" -parallel "$TEST_PARALLEL" -count=1 -timeout "$TIMEOUT" $order | go run ./scripts/testtimes -o artifacts/test-times.txt -alone artifacts/alone.txt || rc=$?

# The face sidecar's own tests (Node's test runner), with the whole suite,
# when scripts/ml-deps.sh installed its packages. They run after the main
# pass: a detection has a deadline (ML_TIMEOUT_MS) that a machine busy
# with the main pass can exceed.
if [ "$PKG" = ./... ] && [ -f faces/sidecar/node_modules/.lightbox-installed ] && node_ok >/dev/null; then
	say "node --test in faces/sidecar/"
	(cd faces/sidecar && node --test) || rc=$(first "$rc" $?)
fi
wait "$beside_pid" || rc=$(first "$rc" $?)
cat artifacts/test-beside.log

# The tests testenv.Alone put off, now that the machine is quiet.
alone=$(cat artifacts/alone.txt artifacts/alone-plain.txt 2>/dev/null | sort -u)
if [ -n "$alone" ]; then
	say "alone, one at a time: $(awk '{print $2}' <<<"$alone" | paste -sd' ')"
	# shellcheck disable=SC2046 # lists of words
	LIGHTBOX_ALONE= go test -json -p 1 -parallel 1 -count=1 -timeout "$TIMEOUT" \
		-run "^($(awk '{print $2}' <<<"$alone" | paste -sd'|'))\$" $(awk '{print $1}' <<<"$alone" | sort -u) |
		go run ./scripts/testtimes -o artifacts/test-times-alone.txt || rc=$(first "$rc" $?)
fi
exit "$rc"
