"""Builds libtoolnexus with cargo and bundles it into the toolnexus_c package.

`pip install ./bindings/python` (from a checkout of the Rust repository) runs
`cargo rustc --release` for the `toolnexus` crate and copies the resulting
libtoolnexus.so into the wheel, next to toolnexus_c/__init__.py, with the
repository's LICENSE-MIT and LICENSE-APACHE (the library is MIT OR Apache-2.0). The
Rust sources are looked up at $TOOLNEXUS_SOURCE_DIR, else two directories above this file.
The cargo invocation is the same as the top-level Makefile's (`make lib`), in
the same target directory (target/install), so the two share one release build.
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - only sdists can be built then
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
LIB_NAME = "libtoolnexus.so"
SONAME = "libtoolnexus.so.0"
LICENSES = ("LICENSE-MIT", "LICENSE-APACHE")


def source_dir():
    src = os.environ.get("TOOLNEXUS_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", ".."))
    if not os.path.exists(os.path.join(src, "Cargo.toml")):
        sys.exit(
            "toolnexus-c: no Cargo.toml in %s; build from a checkout of the toolnexus repository "
            "or set TOOLNEXUS_SOURCE_DIR" % src
        )
    return src


def build_library():
    """cargo rustc --release for the cdylib (with a soname) and the staticlib; returns the .so path."""
    prebuilt = os.environ.get("TOOLNEXUS_PREBUILT_LIB")
    if prebuilt:
        return prebuilt
    src = source_dir()
    target = os.environ.get("TOOLNEXUS_CARGO_TARGET_DIR") or os.path.join(src, "target", "install")
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    cmd = [
        os.environ.get("CARGO", "cargo"), "rustc", "--release", "--lib", "-p", "toolnexus-c",
        "--manifest-path", os.path.join(src, "Cargo.toml"),
        "--crate-type", "cdylib,staticlib", "--",
        "-C", "link-arg=-Wl,-soname," + SONAME,
    ]
    print("toolnexus-c: " + " ".join(cmd), flush=True)
    subprocess.check_call(cmd, env=env, cwd=src)
    return os.path.join(target, "release", LIB_NAME)


class BuildPyWithLib(build_py):
    def run(self):
        super().run()
        lib = build_library()
        dest_dir = os.path.join(self.build_lib, "toolnexus_c")
        os.makedirs(dest_dir, exist_ok=True)
        dest = os.path.join(dest_dir, LIB_NAME)
        tmp = dest + ".tmp"
        # Debug info stays in the cargo build; the wheel gets a copy without it (~6 MB, not ~37).
        strip = shutil.which("strip")
        if strip and not os.environ.get("TOOLNEXUS_NO_STRIP"):
            subprocess.check_call([strip, "--strip-debug", "-o", tmp, lib])
        else:
            shutil.copyfile(lib, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, dest)
        # The binary is distributed in the wheel: its license texts go with it.
        for name in LICENSES:
            shutil.copyfile(os.path.join(source_dir(), name), os.path.join(dest_dir, name))


cmdclass = {"build_py": BuildPyWithLib}

if bdist_wheel is not None:

    class PlatformWheel(bdist_wheel):
        """The wheel carries a native library: tag it for this platform, not py3-none-any."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = PlatformWheel

setup(cmdclass=cmdclass)
