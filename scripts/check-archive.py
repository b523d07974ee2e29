#!/usr/bin/env python3
"""Checks a static library built for macOS without a Mac (scripts/test-cross.sh).

    check-archive.py LIB.a ARCH SYMBOL...     # ARCH: aarch64 or x86_64

Passes when LIB.a is an ar archive whose every object is a 64-bit Mach-O object for ARCH (none
for another CPU, none ELF) and whose symbol table (__.SYMDEF) defines each SYMBOL (C names: the
Mach-O symbol carries a leading underscore). Prints one line; exits 1 naming what was wrong.
"""

import struct
import sys

MH_MAGIC_64 = b"\xcf\xfa\xed\xfe"  # little-endian 64-bit Mach-O
CPU = {"aarch64": 0x0100000C, "x86_64": 0x01000007}  # CPU_TYPE_ARM64, CPU_TYPE_X86_64


def members(data):
    """(name, bytes) of each member of an ar archive (BSD #1/N names and GNU / names)."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    pos, long_names = 8, b""
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        if header[58:60] != b"`\n":
            raise ValueError("bad member header at byte %d" % pos)
        name = header[:16].decode("ascii", "replace").rstrip()
        size = int(header[48:58].decode("ascii").strip())
        body = data[pos + 60 : pos + 60 + size]
        if name.startswith("#1/"):  # BSD: the name is the body's first N bytes
            n = int(name[3:])
            name, body = body[:n].rstrip(b"\0").decode("utf-8", "replace"), body[n:]
        elif name == "//":  # GNU: the long-name table
            long_names = body
        elif name.startswith("/") and name[1:].isdigit():
            off = int(name[1:])
            name = long_names[off : long_names.index(b"/\n", off)].decode("utf-8", "replace")
        yield name, body
        pos += 60 + size + (size & 1)


def main(argv):
    if len(argv) < 4 or argv[2] not in CPU:
        sys.exit(__doc__)
    path, arch, symbols = argv[1], argv[2], argv[3:]
    with open(path, "rb") as f:
        data = f.read()
    objects, wrong, symtab = 0, [], b""
    for name, body in members(data):
        if name.startswith("__.SYMDEF"):
            symtab += body
        elif body.startswith(MH_MAGIC_64):
            objects += 1
            (cputype,) = struct.unpack_from("<I", body, 4)
            if cputype != CPU[arch]:
                wrong.append("%s (cputype %#x)" % (name, cputype))
        elif body.startswith(b"\x7fELF"):
            wrong.append(name + " (ELF)")
    problems = []
    if objects == 0:
        problems.append("no Mach-O objects")
    if wrong:
        problems.append("%d objects not for %s, e.g. %s" % (len(wrong), arch, wrong[0]))
    if not symtab:
        problems.append("no __.SYMDEF symbol table")
    missing = [s for s in symbols if b"\0_" + s.encode() + b"\0" not in b"\0" + symtab]
    if missing:
        problems.append("symbols not defined: " + ", ".join(missing))
    if problems:
        sys.exit("%s: %s" % (path, "; ".join(problems)))
    print("%s: %d Mach-O %s objects, defines %s" % (path, objects, arch, ", ".join(symbols)))


if __name__ == "__main__":
    main(sys.argv)
