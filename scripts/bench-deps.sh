#!/usr/bin/env bash
# Installs what `make bench` needs beyond Go: sharp, the imaging
# benchmarks' second baseline, in imaging/testdata/sharp/node_modules (npm
# ci, as its package-lock.json pins it, with sharp's own prebuilt libvips:
# nothing is built) when it is missing or was installed from another
# lockfile; and, for HEIC and JPEG XL, which that libvips cannot read,
# sharp built against the system's libvips in imaging/testdata/sharp-system.
# Without Node.js 20 and npm, or without what the build needs, it says what
# to install and carries on: the benchmarks then run without those x_sharp
# figures and say why.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# npm_sharp installs the prebuilt sharp.
npm_sharp() {
	local dir=$ROOT/imaging/testdata/sharp
	local want stamp
	want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) node$(node_major)"
	stamp=$dir/node_modules/.lightbox-installed
	[ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || return 0
	say "installing sharp for the imaging benchmarks (npm ci in imaging/testdata/sharp/)"
	# sharp's install script only checks for its prebuilt binaries, which
	# npm installs as optional packages for this platform.
	(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2 ||
		die "npm ci in imaging/testdata/sharp/ failed: see above"
	echo "$want" >"$stamp"
}

# system_sharp builds sharp 0.31.3, the newest that accepts Debian 12's
# libvips 8.14, against the system's libvips with node-gyp (npm's own), on
# Node's installed headers: nothing is downloaded but the npm package.
system_sharp() {
	local dir=$ROOT/imaging/testdata/sharp-system
	local want stamp nodedir gyp need
	want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) node$(node_major) vips$(pkg-config --modversion vips-cpp 2>/dev/null)"
	stamp=$dir/node_modules/.lightbox-installed
	[ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || return 0
	nodedir=$(dirname "$(dirname "$(command -v node)")")
	gyp=$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js
	for need in "pkg-config --exists vips-cpp:libvips-dev" "command -v g++:g++" "command -v make:make" \
		"test -f $nodedir/include/node/node_api.h:Node.js' headers" "test -f $gyp:npm's node-gyp"; do
		if ! eval "${need%%:*}" >/dev/null 2>&1; then
			say "sharp for HEIC and JPEG XL is not built: ${need#*:} is missing. The benchmarks will run without those x_sharp figures"
			return 0
		fi
	done
	say "building sharp against the system's libvips for the imaging benchmarks (imaging/testdata/sharp-system/)"
	(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error &&
		cd node_modules/sharp && node "$gyp" rebuild --nodedir="$nodedir" --loglevel=error) >&2 ||
		die "building sharp in imaging/testdata/sharp-system/ failed: see above"
	echo "$want" >"$stamp"
}

if ! why=$(node_ok); then
	say "the imaging benchmarks' sharp baseline needs Node.js 20 or newer with npm: $why. They will run without it (no x_sharp)"
	exit 0
fi
npm_sharp
system_sharp
