#!/usr/bin/env bash
# Installs Chromium, which the browser tests in e2e/ drive, when it is
# missing and we run as root. Otherwise it only says what to install: the
# other tests still run, and the browser test fails saying the same.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then
	exit 0
fi
if ! is_root || ! command -v apt-get >/dev/null; then
	say "the browser tests need Chromium: install it with: sudo apt-get install -y chromium"
	exit 0
fi
apt_install "the browser tests need Chromium" chromium
command -v chromium >/dev/null || die "chromium is still not on PATH after apt-get install chromium"
