#!/usr/bin/env bash
# Installs what the tests in e2e/ run beside the shared services, when it is
# missing and we run as root: Chromium, which the browser tests drive, and
# Redis with Redis Sentinel, of which the failover test starts its own
# primary, replica and sentinels. Otherwise it only says what to install:
# the other tests still run, and the test that needs it fails saying the same.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

can_install() { is_root && command -v apt-get >/dev/null; }

if ! command -v redis-server >/dev/null || ! command -v redis-sentinel >/dev/null; then
	if can_install; then
		ensure_redis
	else
		say "the failover test needs Redis Sentinel: install it with: sudo apt-get install -y redis-server redis-sentinel"
	fi
fi

if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then
	exit 0
fi
if ! can_install; then
	say "the browser tests need Chromium: install it with: sudo apt-get install -y chromium"
	exit 0
fi
apt_install "the browser tests need Chromium" chromium
command -v chromium >/dev/null || die "chromium is still not on PATH after apt-get install chromium"
