#!/usr/bin/env bash
# Checks for Go and installs what the cgo imaging code builds with (libvips,
# LibRaw, pkg-config) and the tools its benchmarks compare with (vipsthumbnail,
# dcraw_emu) when missing and running as root; otherwise says what to install.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_build_deps
