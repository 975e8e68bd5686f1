#!/usr/bin/env bash
# Runs the test suite: every package of PKG with RACE (-race, or empty to
# go without); beside it, when RACE is set, the packages of PLAIN_PKG
# among them once more without it, the face sidecar's Node tests when PKG
# is the whole module, then each fuzz target of FUZZ for FUZZTIME inputs. PLAIN_PKG's tests are pixel arithmetic on data no
# other goroutine sees, which -race makes ten times slower and has
# nothing to find in: under -race they leave out their largest inputs
# (see race_test.go in imaging/ and embed/) and the second pass runs them
# in full. Every part runs even when another fails; the status is the
# first failure's.
#
# Most of the suite waits rather than computes (on Postgres, a browser, a
# lease running out, an outage the fault suite holds): its test binaries
# spend about a third of their time on a CPU. So PKG_PARALLEL packages run at
# once rather than one per core, the longest (SLOW_PKG) start first so
# that none of them ends the run alone, and the pass without -race, the
# Node tests and the fuzz targets run beside the main pass; their output
# follows it.
#
#   PKG=./... RACE=-race PLAIN_PKG="./imaging/ ./embed/" TIMEOUT=20m scripts/test.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

PKG=${PKG:-./...}
RACE=${RACE-}
PLAIN_PKG=${PLAIN_PKG-}
TIMEOUT=${TIMEOUT:-20m}
PKG_PARALLEL=${PKG_PARALLEL:-4}
SLOW_PKG=${SLOW_PKG-./e2e/ ./worker/ ./server/ ./faults/}
FUZZ=${FUZZ-./imaging/formats:FuzzSniff ./imaging:FuzzParseExif ./imaging:FuzzReadXMP ./imaging:FuzzInspect ./blob:FuzzVerify ./internal/jsonbody:FuzzDecode}
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

# beside runs the pass without RACE, the Node tests and the fuzz targets, one after
# another, and exits with the first failure's status.
beside() {
	local rc=0 plain f pkg target
	if [ -n "$RACE" ] && [ -n "$PLAIN_PKG" ]; then
		# shellcheck disable=SC2086 # PKG and PLAIN_PKG are lists of words
		plain=$(comm -12 <(go list $PKG | sort) <(go list $PLAIN_PKG | sort))
		if [ -n "$plain" ]; then
			say "without $RACE: $(echo $plain)"
			# shellcheck disable=SC2086
			go test -count=1 -timeout "$TIMEOUT" $plain || rc=$(first "$rc" $?)
		fi
	fi
	# The face sidecar's own tests (Node's test runner), with the whole
	# suite, when scripts/ml-deps.sh installed its packages.
	if [ "$PKG" = ./... ] && [ -f ml/node_modules/.lightbox-installed ] && node_ok >/dev/null; then
		say "node --test in ml/"
		(cd ml && node --test) || rc=$(first "$rc" $?)
	fi
	# -fuzz takes one package and one target at a time.
	for f in $FUZZ; do
		pkg=${f%%:*} target=${f#*:}
		grep -qx "$(go list "$pkg")" <<<"$tested" || continue
		say "fuzz $target ($pkg) for $FUZZTIME"
		go test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" "$pkg" || rc=$(first "$rc" $?)
	done
	exit "$rc"
}

mkdir -p artifacts
# shellcheck disable=SC2086
tested=$(go list $PKG)
beside >artifacts/test-beside.log 2>&1 &
beside_pid=$!

# go test starts the packages' tests in the order it is given them.
order=$tested
if [ -n "$SLOW_PKG" ]; then
	# shellcheck disable=SC2086
	order=$({ go list $SLOW_PKG | grep -Fx -f <(echo "$tested") || true; echo "$tested"; } | awk '!seen[$0]++')
fi
# scripts/testtimes prints what go test prints without -json, and writes
# each package's time and the slowest tests to artifacts/test-times.txt.
rc=0
# shellcheck disable=SC2086 # RACE and order are lists of words
go test -json $RACE -p "$PKG_PARALLEL" -count=1 -timeout "$TIMEOUT" $order | go run ./scripts/testtimes -o artifacts/test-times.txt || rc=$?

wait "$beside_pid" || rc=$(first "$rc" $?)
cat artifacts/test-beside.log
exit "$rc"
