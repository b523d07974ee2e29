#!/usr/bin/env bash
# Builds every release wheel of the Python package into one folder (`make wheels
# WHEELHOUSE=DIR` calls this): manylinux2014 (glibc 2.17) for x86_64 and aarch64, and
# musllinux_1_2 for x86_64. Each library is built with cargo-zigbuild for its libc (zig links
# against glibc 2.17's symbols, or musl), packaged by bindings/python/setup.py as a prebuilt
# library, then checked and retagged by `auditwheel repair` (which fails on any symbol newer
# than the policy allows); x86_64's library is stripped by auditwheel, the others' at link time.
#
#   scripts/wheels.sh DIR [TARGET...]   # TARGET: x86_64-gnu aarch64-gnu x86_64-musl (default: all)
#
# Cargo target directories, kept between runs: target/wheels/x86_64-gnu for x86_64 (its own: zig
# links its build scripts too, as the target is the host's triple) and target/wheels/cross shared
# by aarch64 and musl (each under its triple; their build scripts and proc-macros built once).
# The tools come from scripts/install-cross.sh (idempotent). Prints the wheels it made.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WHEELHOUSE=${1:?usage: scripts/wheels.sh DIR [TARGET...]}
shift
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(x86_64-gnu aarch64-gnu x86_64-musl)
mkdir -p "$WHEELHOUSE"
WHEELHOUSE=$(cd "$WHEELHOUSE" && pwd)
scripts/install-cross.sh >/dev/null
CROSS=$ROOT/target/cross/venv
export PATH=$CROSS/bin:$PATH CARGO_TERM_COLOR=never PIP_DISABLE_PIP_VERSION_CHECK=1
# The wheels' libraries are stripped: no debug info to compile (the release profile has line
# tables for `make lib`), which saves a good part of each cold build.
export CARGO_PROFILE_RELEASE_DEBUG=0
VERSION=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
MAJOR=${VERSION%%.*}

for name in "${TARGETS[@]}"; do
  case $name in
  x86_64-gnu) zig_target=x86_64-unknown-linux-gnu.2.17 triple=x86_64-unknown-linux-gnu plat=linux_x86_64 policy=manylinux2014_x86_64 ;;
  aarch64-gnu) zig_target=aarch64-unknown-linux-gnu.2.17 triple=aarch64-unknown-linux-gnu plat=linux_aarch64 policy=manylinux2014_aarch64 ;;
  x86_64-musl) zig_target=x86_64-unknown-linux-musl triple=x86_64-unknown-linux-musl plat=musllinux_1_2_x86_64 policy=musllinux_1_2_x86_64 ;;
  *) echo "wheels.sh: unknown target $name (x86_64-gnu, aarch64-gnu, x86_64-musl)" >&2; exit 2 ;;
  esac
  cargo_dir=$ROOT/target/wheels/cross
  [ "$name" = x86_64-gnu ] && cargo_dir=$ROOT/target/wheels/x86_64-gnu
  dir=$ROOT/target/wheels/work/$name
  # musl: a cdylib needs the dynamic C library (Rust's musl targets link it statically by default).
  if [ "$name" = x86_64-musl ]; then
    export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C target-feature=-crt-static"
  fi
  # The library as `make lib` builds it (release, soname libtoolnexus.so.MAJOR), for this target.
  # The host's strip cannot read another CPU's library (auditwheel's --strip runs it), so those
  # are linked without their symbol table (-C strip=symbols: the linker's -s, what strip -s does).
  strip_flags=(-C strip=symbols) repair_strip=()
  [ "$name" = x86_64-gnu ] && strip_flags=() repair_strip=(--strip)
  CARGO_TARGET_DIR=$cargo_dir cargo-zigbuild rustc --release --lib -p toolnexus-c --target "$zig_target" \
    --crate-type cdylib -- -C "link-arg=-Wl,-soname,libtoolnexus.so.$MAJOR" "${strip_flags[@]}"
  lib=$cargo_dir/$triple/release/libtoolnexus.so
  rm -rf "$dir/wheel" && mkdir -p "$dir/wheel"
  # Packaged from a copy of the package sources, so the checkout's build/ and egg-info stay clean.
  rm -rf "$dir/pkg" && cp -r bindings/python "$dir/pkg" && rm -rf "$dir/pkg/build" "$dir/pkg"/*.egg-info
  TOOLNEXUS_PREBUILT_LIB=$lib TOOLNEXUS_WHEEL_PLAT=$plat TOOLNEXUS_SOURCE_DIR=$ROOT \
    "$CROSS/bin/pip" wheel -q --no-build-isolation --no-deps -w "$dir/wheel" "$dir/pkg"
  rm -f "$WHEELHOUSE"/toolnexus_c-*"$policy"*.whl
  # auditwheel offers --plat names for this machine's CPU and libc only; for the others `auto`
  # (the lowest policy the library's symbols allow), and the tag it gave is checked below.
  # The musl library needs musl's "libc.so", which auditwheel does not take for musl: the wheel
  # is tagged musllinux before the repair (auditwheel reads the libc off the name), and the
  # search path has Debian's musl, so the check reads musl's libc.so, not glibc's linker script.
  plat_arg=auto
  [ "$name" = x86_64-gnu ] && plat_arg=$policy
  ldenv=()
  [ "$name" = x86_64-musl ] && ldenv=(AUDITWHEEL_LD_LIBRARY_PATH=/usr/lib/x86_64-linux-musl)
  env "${ldenv[@]}" auditwheel repair --plat "$plat_arg" "${repair_strip[@]}" -w "$WHEELHOUSE" "$dir"/wheel/toolnexus_c-"$VERSION"-py3-none-"$plat".whl
  ls "$WHEELHOUSE"/toolnexus_c-"$VERSION"-py3-none-*"$policy"*.whl >/dev/null 2>&1 ||
    { echo "wheels.sh: auditwheel did not tag the $name wheel $policy:" >&2; ls "$WHEELHOUSE" >&2; exit 1; }
done
ls -1 "$WHEELHOUSE"/*.whl
