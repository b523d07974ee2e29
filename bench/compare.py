#!/usr/bin/env python3
"""Two or more builds of libtoolnexus in the same run: `build/bench/host perf` (pinned, without
the HTTP leg) is run once per library directory per round, taking turns (A B, then B A, ...),
with LD_LIBRARY_PATH pointing at that directory (the host's RUNPATH yields to it), and the
medians over rounds are printed side by side. Use it for a before/after of a change: copy the
`target/release/libtoolnexus.so` of each build into a directory of its own first.

    python3 bench/compare.py DIR_A DIR_B [--rounds 8] [-- extra host perf options]

Needs build/bench/host and host-floor (./scripts/bench builds them) and a release fixture.
Default host options: --connect1-reps 31 --cold-reps 21 --seq 1000 --ask 100 --many 10
--startup-ms 0 --http 0 --fleet 0 (no many-server leg: `-- --fleet 100` runs it, its figures
not compared); after `--`, `--http 1` adds the HTTP leg and `--https-cert F --https-key F
--https-ca F` (build/bench/tls, made by ./scripts/bench) the HTTPS leg, and their ratios are
printed too.
"""
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
HOST = os.path.join(ROOT, "build", "bench", "host")
FLOOR = os.path.join(ROOT, "build", "bench", "host-floor")
FIXTURE = os.path.join(ROOT, "target", "release", "tn-fixture-server")


def main(argv):
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    rounds = 8
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds = int(argv[i + 1])
        del argv[i:i + 2]
    dirs = [os.path.abspath(d) for d in argv]
    if len(dirs) < 2 or not all(os.path.exists(os.path.join(d, "libtoolnexus.so")) for d in dirs):
        sys.exit(__doc__)
    opts = ["--connect1-reps", "31", "--cold-reps", "21", "--seq", "1000", "--ask", "100",
            "--many", "10", "--startup-ms", "0", "--http", "0", "--fleet", "0"] + extra
    runs = {d: [] for d in dirs}
    for r in range(rounds):
        for d in (dirs if r % 2 == 0 else dirs[::-1]):
            cmd = ["taskset", "-c", "0", HOST, "perf", "--fixture", FIXTURE, "--floor-bin", FLOOR,
                   "--first", "ours" if r % 2 == 0 else "floor"] + opts
            env = dict(os.environ, LD_LIBRARY_PATH=d)
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if out.returncode:
                sys.exit(out.stderr)
            runs[d].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print("round %d/%d done" % (r + 1, rounds), file=sys.stderr)

    def row(name, f, leg=None):
        cells = []
        for d in dirs:
            if leg and not all(leg in x for x in runs[d]):
                return
            vals = [f(x[leg]["ours"], x[leg]["floor"]) if leg else f(x["ours"], x["floor"])
                    for x in runs[d]]
            cells.append("%14.3f" % statistics.median(vals))
        print("%-28s%s" % (name, "".join(cells)))

    print("%-28s%s" % ("median of %d rounds" % rounds, "".join("%14s" % os.path.basename(d) for d in dirs)))
    row("connect 1, ours (ms)", lambda o, f: o["connect1_ms"])
    row("connect 1, floor (ms)", lambda o, f: f["connect1_ms"])
    row("connect_ratio", lambda o, f: o["connect1_ms"] / f["connect1_ms"])
    row("protocol legacy (ms)", lambda o, f: o["connect1_legacy_ms"])
    row("protocol auto (ms)", lambda o, f: o["connect1_auto_ms"])
    row("cold start, ours (ms)", lambda o, f: o["cold_start_ms"])
    row("cold start, floor (ms)", lambda o, f: f["cold_start_ms"])
    row("cold_start_ratio", lambda o, f: o["cold_start_ms"] / f["cold_start_ms"])
    row("disconnect p50, ours (ms)", lambda o, f: o["disconnect1_ms"])
    row("seq_p50_ratio", lambda o, f: o["seq_p50_us"] / f["seq_p50_us"])
    row("ask_p50_ratio", lambda o, f: o["ask_p50_us"] / f["ask_p50_us"])
    row("conc_ratio", lambda o, f: o["conc_calls_per_s"] / f["conc_calls_per_s"])
    if all("async_conc_calls_per_s" in x["ours"] for d in dirs for x in runs[d]):
        row("async calls/s, ours", lambda o, f: o["async_conc_calls_per_s"])
        row("async_conc_ratio", lambda o, f: o["async_conc_calls_per_s"] / o["conc_calls_per_s"])
        row("async CPU/call, ours (us)", lambda o, f: o["async_cpu_us_per_call"])
    # The HTTP and HTTPS legs, when the host options ask for them (-- --http 1, --https-…).
    for leg in ("http", "https"):
        row("%s_seq_p50_ratio" % leg, lambda o, f: o["seq_p50_us"] / f["seq_p50_us"], leg)
        row("%s seq p50, ours (us)" % leg, lambda o, f: o["seq_p50_us"], leg)
        row("%s_conc_ratio" % leg, lambda o, f: o["conc_calls_per_s"] / f["conc_calls_per_s"], leg)
        row("%s_ask_p50_ratio" % leg, lambda o, f: o["ask_p50_us"] / f["ask_p50_us"], leg)
        row("%s seq CPU/call, ours (us)" % leg, lambda o, f: o["seq_cpu_us_per_call"], leg)


if __name__ == "__main__":
    main(sys.argv[1:])
