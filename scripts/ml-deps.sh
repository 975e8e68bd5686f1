#!/usr/bin/env bash
# Installs the face sidecar's npm packages in faces/sidecar/node_modules (npm ci, as
# faces/sidecar/package-lock.json pins them) when they are missing or were installed
# from another lockfile, for its tests and for `make run`.
#
# Without Node.js 20 and npm it says what to install and fails when
# LIGHTBOX_FACES=on; with auto (the default) it only says so: the tests that
# need the sidecar then skip, and `make run` runs without faces.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${LIGHTBOX_FACES:-auto} in
off)
	exit 0
	;;
auto)
	if ! why=$(node_ok); then
		say "the face sidecar needs Node.js 20 or newer with npm: $why. Its tests will be skipped; install them (Debian 12 ships Node.js 18: take Node.js 20 from nodejs.org or NodeSource)"
		exit 0
	fi
	;;
esac
ml_deps
