#!/usr/bin/env bash
# Installs what `make bench` needs beyond Go: sharp, the imaging
# benchmarks' second baseline, in imaging/testdata/sharp/node_modules (npm
# ci, as its package-lock.json pins it, with sharp's own prebuilt libvips:
# nothing is built) when it is missing or was installed from another
# lockfile. Without Node.js 20 and npm it says what to install and carries
# on: the benchmarks then run without their x_sharp figures and say why.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! why=$(node_ok); then
	say "the imaging benchmarks' sharp baseline needs Node.js 20 or newer with npm: $why. They will run without it (no x_sharp)"
	exit 0
fi
dir=$ROOT/imaging/testdata/sharp
want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) node$(node_major)"
stamp=$dir/node_modules/.lightbox-installed
[ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || exit 0
say "installing sharp for the imaging benchmarks (npm ci in imaging/testdata/sharp/)"
# sharp's install script only checks for its prebuilt binaries, which
# npm installs as optional packages for this platform.
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2 ||
	die "npm ci in imaging/testdata/sharp/ failed: see above"
echo "$want" >"$stamp"
