#!/usr/bin/env bash
# Installs what the SDK's tests (sdk/, run by `go test ./sdk/`) need: Node.js
# 20 or newer with npm, from Debian when missing and we run as root, and the
# SDK's dev tools (TypeScript, the Node types, a YAML parser) as pinned by
# sdk/package-lock.json, whenever node_modules is missing or older than the
# lockfile. Without Node it only says what to install: the other tests still
# run, and the SDK's test fails saying the same.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	if is_root && command -v apt-get >/dev/null; then
		apt_install "the SDK's tests need Node.js and npm" nodejs npm
	else
		say "the SDK's tests need Node.js 20 or newer with npm: install them (for example: sudo apt-get install -y nodejs npm)"
		exit 0
	fi
fi
if [ "$(node_major)" -lt 20 ]; then
	say "the SDK's tests need Node.js 20 or newer; this is $(node --version): install a newer one"
	exit 0
fi

cd "$ROOT/sdk"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
	say "sdk: npm ci (TypeScript and the tools the SDK's tests use, as package-lock.json pins them)"
	npm ci --no-audit --no-fund --loglevel=error >&2
fi
