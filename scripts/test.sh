#!/usr/bin/env bash
# Runs the test suite: every package of PKG with RACE (-race, or empty to
# go without), then, when RACE is set, the packages of PLAIN_PKG among them
# once more without it. Their tests are pixel arithmetic on data no other
# goroutine sees, which -race makes ten times slower and has nothing to
# find in: under -race they leave out their largest inputs (see
# race_test.go in imaging/ and embed/) and the second pass runs them in
# full. Both passes run even when the first fails; the status is the first
# failure's. The face sidecar's Node tests follow when PKG is the whole
# module.
#
#   PKG=./... RACE=-race PLAIN_PKG="./imaging/ ./embed/" TIMEOUT=20m scripts/test.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

PKG=${PKG:-./...}
RACE=${RACE-}
PLAIN_PKG=${PLAIN_PKG-}
TIMEOUT=${TIMEOUT:-20m}
FUZZ=${FUZZ-./imaging/formats:FuzzSniff ./imaging:FuzzParseExif ./imaging:FuzzReadXMP ./imaging:FuzzInspect ./blob:FuzzVerify ./internal/jsonbody:FuzzDecode}
# A count of inputs, not a duration: a duration can end a run mid-input, which
# go test reports as a failure ("context deadline exceeded").
FUZZTIME=${FUZZTIME:-20000x}

rc=0
mkdir -p artifacts
# scripts/testtimes prints what go test prints without -json, and writes
# each package's time and the slowest tests to artifacts/test-times.txt.
# shellcheck disable=SC2086 # PKG and RACE are lists of words
go test -json $RACE -count=1 -timeout "$TIMEOUT" $PKG | go run ./scripts/testtimes -o artifacts/test-times.txt || rc=$?
if [ -n "$RACE" ] && [ -n "$PLAIN_PKG" ]; then
	# shellcheck disable=SC2086
	plain=$(comm -12 <(go list $PKG | sort) <(go list $PLAIN_PKG | sort))
	if [ -n "$plain" ]; then
		say "without $RACE: $(echo $plain)"
		# shellcheck disable=SC2086
		go test -count=1 -timeout "$TIMEOUT" $plain || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
	fi
fi
# The face sidecar's own tests (Node's test runner), with the whole suite,
# when scripts/ml-deps.sh installed its packages.
if [ "$PKG" = ./... ] && [ -f ml/node_modules/.lightbox-installed ] && node_ok >/dev/null; then
	say "node --test in ml/"
	(cd ml && node --test) || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
fi
# -fuzz takes one package and one target at a time.
# shellcheck disable=SC2086
tested=$(go list $PKG)
for f in $FUZZ; do
	pkg=${f%%:*} target=${f#*:}
	grep -qx "$(go list "$pkg")" <<<"$tested" || continue
	say "fuzz $target ($pkg) for $FUZZTIME"
	go test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" "$pkg" || { s=$?; [ "$rc" -ne 0 ] || rc=$s; }
done
exit $rc
