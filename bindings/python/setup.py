"""Builds libtoolnexus with cargo (setuptools-rust, Binding.NoBinding) into the toolnexus_c package.

The wheel carries toolnexus_c/libtoolnexus.so (libtoolnexus.dylib on macOS; loaded with ctypes, so
the wheel is tagged py3-none-<platform>; `auditwheel repair` retags it manylinux) with its debug
info stripped, plus the repository's LICENSE-MIT and LICENSE-APACHE. With $TOOLNEXUS_PREBUILT_LIB
set, the wheel carries that file instead of building one (scripts/wheels.sh builds each release
wheel's library with cargo-zigbuild for its glibc or musl, then packages it this way) and
$TOOLNEXUS_WHEEL_PLAT names its platform (e.g. linux_aarch64, before `auditwheel repair`). The Rust sources are found at
$TOOLNEXUS_SOURCE_DIR, else in rust/ beside this file (an sdist carries them there: see
SdistWithRust), else two directories up (a checkout). The cargo invocation is the Makefile's
(`make lib`: cdylib + staticlib, soname libtoolnexus.so.0), so with CARGO_TARGET_DIR set to the
checkout's target/install the two share one release build.
"""

import os
import re
import shutil
import sys

from setuptools import setup
from setuptools.dist import Distribution
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools_rust import Binding, RustExtension, Strip
from setuptools_rust.build import build_rust

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - older wheel
    from setuptools.command.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
DARWIN = sys.platform == "darwin"
# The target cargo builds for (CARGO_BUILD_TARGET, which setuptools-rust passes on): a Windows
# one gives toolnexus_c/toolnexus.dll in a win_amd64 wheel (cross-built with mingw-w64).
TARGET = os.environ.get("CARGO_BUILD_TARGET", "")
WINDOWS = "windows" in TARGET
# macOS: one file named @rpath/libtoolnexus.dylib inside (build.rs); Linux: a soname.
LIB_NAME = "toolnexus.dll" if WINDOWS else "libtoolnexus.dylib" if DARWIN else "libtoolnexus.so"
SONAME = "libtoolnexus.so.0"
PREBUILT = os.environ.get("TOOLNEXUS_PREBUILT_LIB")
WHEEL_PLAT = os.environ.get("TOOLNEXUS_WHEEL_PLAT")
LICENSES = ("LICENSE-MIT", "LICENSE-APACHE")
# What cargo needs to build the library (an sdist carries these under rust/).
RUST_FILES = ("Cargo.toml", "Cargo.lock", "build.rs", "cbindgen.toml") + LICENSES
RUST_DIRS = ("src",)
RUSTUP = "https://rustup.rs"


def source_dir():
    candidates = [os.environ.get("TOOLNEXUS_SOURCE_DIR"), os.path.join(HERE, "rust"), os.path.join(HERE, "..", "..")]
    for d in candidates:
        if d and os.path.exists(os.path.join(d, "Cargo.toml")) and os.path.exists(os.path.join(d, "src", "lib.rs")):
            return os.path.normpath(d)
    sys.exit(
        "toolnexus-c: the Rust sources are missing (looked in %s): build from the sdist, a checkout of "
        "the repository, or set TOOLNEXUS_SOURCE_DIR" % ", ".join(c for c in candidates if c)
    )


SRC = source_dir()
if not PREBUILT and os.path.normpath(os.path.join(HERE, "..", "..")) == SRC and not os.environ.get("CARGO_TARGET_DIR"):
    # In a checkout: the Makefile's target directory, shared with `make lib`.
    os.environ["CARGO_TARGET_DIR"] = os.path.join(SRC, "target", "install")


class BuildRust(build_rust):
    """The library as toolnexus_c/libtoolnexus.so (.dylib), and a one-line error when Rust is missing."""

    def run(self):
        cargo = os.environ.get("CARGO", "cargo")
        missing = [tool for tool in (cargo, "rustc") if shutil.which(tool) is None]
        if missing:
            sys.exit(
                "toolnexus-c: building from source needs Rust (%s not found on PATH): install it from %s "
                "(then open a new shell) and retry, or install a prebuilt toolnexus-c wheel"
                % (" and ".join(missing), RUSTUP)
            )
        super().run()

    def get_dylib_ext_path(self, ext, target_fname):
        # A ctypes library, not a Python extension module: no EXT_SUFFIX in its name.
        build_ext = self.get_finalized_command("build_ext")
        return os.path.join(os.path.dirname(build_ext.get_ext_fullpath(target_fname)), LIB_NAME)


class BuildPyWithLicenses(build_py):
    """The binary is distributed in the wheel: its license texts go with it."""

    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "toolnexus_c")
        os.makedirs(dest, exist_ok=True)
        for name in LICENSES:
            shutil.copyfile(os.path.join(SRC, name), os.path.join(dest, name))
        if PREBUILT:
            if not os.path.isfile(PREBUILT):
                sys.exit("toolnexus-c: TOOLNEXUS_PREBUILT_LIB=%s is not a file" % PREBUILT)
            shutil.copyfile(PREBUILT, os.path.join(dest, LIB_NAME))


class SdistWithRust(sdist):
    """The sdist carries the crate under rust/, a workspace of its own (the checkout's
    workspace members, the command and the test server, are not needed)."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        rust = os.path.join(base_dir, "rust")
        os.makedirs(rust, exist_ok=True)
        for name in RUST_FILES:
            shutil.copyfile(os.path.join(SRC, name), os.path.join(rust, name))
        for d in RUST_DIRS:
            shutil.copytree(os.path.join(SRC, d), os.path.join(rust, d), ignore=shutil.ignore_patterns("*.orig", "*~"))
        manifest = os.path.join(rust, "Cargo.toml")
        with open(manifest) as f:
            text = f.read()
        text, n = re.subn(r"(?m)^members\s*=\s*\[.*\]\s*$", 'members = ["."]', text)
        if n != 1:
            sys.exit("toolnexus-c: no `members = [...]` line in %s to rewrite for the sdist" % manifest)
        with open(manifest, "w") as f:
            f.write(text)


class PlatformWheel(bdist_wheel):
    """The wheel carries a native library loaded with ctypes: any Python 3, this platform."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, plat = super().get_tag()
        if WINDOWS:
            if not TARGET.startswith("x86_64-"):
                sys.exit("toolnexus-c: only x86_64 Windows wheels are built (CARGO_BUILD_TARGET=%s)" % TARGET)
            plat = "win_amd64"
        return "py3", "none", WHEEL_PLAT or plat


class NativeDistribution(Distribution):
    """Has a native library even when it is prebuilt (no rust_extensions then): so the wheel puts
    it in platlib, where `auditwheel repair` looks."""

    def has_ext_modules(self):
        return True


setup(
    distclass=NativeDistribution,
    rust_extensions=[]
    if PREBUILT
    else [
        RustExtension(
            "toolnexus_c.libtoolnexus",
            path=os.path.join(SRC, "Cargo.toml"),
            binding=Binding.NoBinding,
            # `make lib`'s flags exactly, so the two share one build in target/install.
            args=["--crate-type", "cdylib,staticlib"],
            rustc_flags=[] if DARWIN or WINDOWS else ["-C", "link-arg=-Wl,-soname," + SONAME],
            strip=Strip.Debug,
            debug=False,
        )
    ],
    cmdclass={
        "build_rust": BuildRust,
        "build_py": BuildPyWithLicenses,
        "sdist": SdistWithRust,
        "bdist_wheel": PlatformWheel,
    },
    zip_safe=False,
)
