#!/usr/bin/env bash
# Starts, stops and shows the face sidecar of this tree (faces/sidecar/), on loopback
# port LIGHTBOX_ML_PORT (57080), with its log in .data/ml/ml.log.
#
#   scripts/ml.sh start    install its packages if need be, start it (or
#                          reuse ours), and print the FACES_URL and
#                          FACES_SECRET_FILE (.data/ml/secret) to use
#   scripts/ml.sh stop     stop ours (found by .data/ml/ml.pid)
#   scripts/ml.sh status
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
start)
	ml_up
	echo "export FACES_URL='$FACES_URL' FACES_SECRET_FILE='$FACES_SECRET_FILE'"
	;;
stop)
	ml_stop
	;;
status)
	if pid=$(ml_pid) && ml_answers; then
		echo "face sidecar: running, pid $pid, $(ml_url)"
	else
		echo "face sidecar: not running"
	fi
	;;
*)
	echo "usage: scripts/ml.sh start|stop|status" >&2
	exit 2
	;;
esac
