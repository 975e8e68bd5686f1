#!/usr/bin/env bash
# Runs a command with REDIS_URL and DATABASE_URL set, starting our local Redis
# and PostgreSQL first when those are unset, and with the local S3 server's
# LIGHTBOX_TEST_S3_* (started likewise). Afterwards it stops the servers it
# started (not the ones it found running) and exits with the command's status.
#
#   scripts/with-services.sh go test ./...
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -gt 0 ] || die "usage: scripts/with-services.sh COMMAND [ARG...]"

# Ctrl-C, SIGTERM and a closing terminal stop the command, then the
# servers, alike.
trap 'services_down' EXIT
trap 'stop_child INT; exit 130' INT
trap 'stop_child TERM; exit 143' TERM
trap 'stop_child HUP; exit 129' HUP

ensure_build_deps
S3_WANTED=1
services_up
cd "$ROOT"
rc=0
run_child "$@" || rc=$?
exit $rc
