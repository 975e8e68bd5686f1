#!/usr/bin/env bash
# Starts, stops and shows the local Redis and PostgreSQL of this tree.
#
#   scripts/services.sh start    start (or reuse) them; prints `export` lines,
#                                so `eval "$(scripts/services.sh start)"` works
#   scripts/services.sh stop     stop ours (found by our pidfiles and data
#                                dirs under .data/), never a system service
#   scripts/services.sh status
#   scripts/services.sh clean    stop them and delete .data/ (all local data)
#
# `start` only starts what REDIS_URL / DATABASE_URL do not already name, and
# the local S3 server too (unless LIGHTBOX_TEST_S3_ENDPOINT names one).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
start)
	S3_WANTED=1
	services_up
	cat "$DATA/env"
	;;
stop)
	redis_stop
	pg_stop
	s3_stop
	;;
status)
	if pid=$(redis_pid) && redis_answers; then
		echo "redis: running, pid $pid, $(redis_url)"
	else
		echo "redis: not running"
	fi
	if PG_BIN=$(pg_bindir) && [ -e "$PG_ROOT" ]; then
		PGDATA=$(readlink -f "$PG_ROOT")/data
		if pg_running && pg_answers; then
			echo "postgres: running, $(pg_url)"
		else
			echo "postgres: not running"
		fi
	else
		echo "postgres: not running"
	fi
	if pid=$(s3_pid) && s3_answers; then
		echo "s3: running, pid $pid, $(s3_url)"
	else
		echo "s3: not running"
	fi
	;;
clean)
	redis_stop
	pg_stop
	s3_stop
	# The cluster may live outside the tree (see pg_dirs in lib.sh).
	if [ -L "$PG_ROOT" ]; then
		target=$(readlink -f "$PG_ROOT")
		case $target in
		/var/lib/lightbox/*/postgres) rm -rf "$(dirname "$target")" ;;
		esac
	fi
	rm -rf "$DATA"
	say "deleted $DATA"
	;;
*)
	echo "usage: scripts/services.sh start|stop|status|clean" >&2
	exit 2
	;;
esac
