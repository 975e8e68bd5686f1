#!/usr/bin/env bash
# Runs the face sidecar (faces/sidecar/server.js) and starts it again whenever it
# exits, waiting longer each time it dies young (up to 30 s), so a crash
# costs the worker a short wait, never its faces. Started by ml_up in
# lib.sh, which stops it with the sidecar by their process group.
cd "$(dirname "${BASH_SOURCE[0]}")/../faces/sidecar" || exit 1
trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 0' TERM INT
pause=1
while :; do
	started=$(date +%s)
	node server.js &
	child=$!
	wait "$child"
	rc=$?
	if [ $(($(date +%s) - started)) -ge 60 ]; then
		pause=1
	fi
	echo "lightbox: the face sidecar exited (status $rc); starting it again in $pause s" >&2
	sleep "$pause" &
	child=$!
	wait "$child"
	pause=$((pause * 2 > 30 ? 30 : pause * 2))
done
