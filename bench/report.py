#!/usr/bin/env python3
"""Aggregates the raw lines written by scripts/bench into a table and one JSON line.

Input: a JSONL file, one line per benchmark process:
  {"pass":"pinned"|"unpinned","round":N,"data":{...the line printed by build/bench/host...}}
where a perf line holds both contenders ({"mode":"perf","ours":{…},"floor":{…}}) and an rss
line one ({"mode":"rss","who":…,"servers":…,"rss_kb":…}); plus {"meta":…} and {"meta_end":…}.
Every figure is the median over the rounds of one pass; a ratio is the ratio of those two
medians, always within one pass (never across passes). The headline ratios come from the pass
named by --primary (pinned by default).

The HTTP leg runs twice when the host was given certificates: plain HTTP (the raw line's
"http") and HTTPS ("https"); each has the same figures and ratios, the HTTPS ones prefixed
https_.

Connect is measured in two variants (bench/README.md): `instant` (the fixture as is) and
`startup` (the fixture started with --init-delay-ms S: a server that takes S ms to start). The
headline connect50_ratio is ours' startup-variant ratio; connect50_ratio_instant is the instant
one (50 process creations on 2 CPUs are CPU work no client can run in parallel).

The many-server leg (the perf line's "many", ours only) and its RSS lines (rss lines with
"calls_each" > 0, "transport" stdio or http) give connect200_ratio, calls200_ratio and
rss200_kb_per_{stdio,http}_server; the Python leg ({"mode":"py"} lines, bench/py_calls.py)
gives py_main_thread_ratio. With --out-dir DIR the JSON line is also written to DIR/last.json
and a bar chart of the ratios and their targets to DIR/ratios.svg.
"""
import json
import os
import statistics
import sys

PERF_KEYS = [
    # key, label, unit, better ("lo" or "hi")
    ("connect1_ms", "connect, 1 server", "ms", "lo"),
    ("disconnect1_ms", "disconnect, 1 server", "ms", "lo"),
    ("cold_start_ms", "cold start (a process: 1 call)", "ms", "lo"),
    ("connectN_ms", "connect, {N} servers", "ms", "lo"),
    ("connect1_startup_ms", "connect, 1 server, {S} ms start", "ms", "lo"),
    ("connectN_startup_ms", "connect, {N} servers, {S} ms start", "ms", "lo"),
    ("seq_p50_us", "sequential echo p50", "µs", "lo"),
    ("seq_p99_us", "sequential echo p99", "µs", "lo"),
    ("seq_cpu_us_per_call", "  client CPU per seq call", "µs", "lo"),
    ("conc_calls_per_s", "throughput, {C} in flight", "calls/s", "hi"),
    ("conc_cpu_us_per_call", "  client CPU per conc call", "µs", "lo"),
    ("ask_p50_us", "elicitation round trip p50", "µs", "lo"),
    ("ask_p99_us", "elicitation round trip p99", "µs", "lo"),
    ("ask_cpu_us_per_call", "  client CPU per round trip", "µs", "lo"),
    ("async_conc_calls_per_s", "async, {C} in flight, 1 thread", "calls/s", "hi"),
    ("async_cpu_us_per_call", "  client CPU per async call", "µs", "lo"),
    ("connect1_legacy_ms", "connect 1, protocol legacy", "ms", "lo"),
    ("connect1_auto_ms", "connect 1, protocol modern-first (probe)", "ms", "lo"),
    ("mrtr_ask_p50_us", "MRTR elicitation round trip p50", "µs", "lo"),
]

# the HTTP leg (the fixture's HTTP mode; floor = bench/floor_http.c), plain and HTTPS
LEGS = [
    ("http", "HTTP (fixture --http, plain HTTP/1.1 on 127.0.0.1; floor: bench/floor_http.c)"),
    ("https", "HTTPS (fixture --http --tls-cert/--tls-key, rustls; floor: bench/floor_http.c on "
              "OpenSSL; ours: tls.caFile)"),
]
HTTP_KEYS = [
    ("connect1_ms", "connect", "ms", "lo"),
    ("disconnect1_ms", "disconnect", "ms", "lo"),
    ("seq_p50_us", "sequential echo p50", "µs", "lo"),
    ("seq_p99_us", "sequential echo p99", "µs", "lo"),
    ("seq_cpu_us_per_call", "  client CPU per seq call", "µs", "lo"),
    ("conc_calls_per_s", "throughput, {C} in flight", "calls/s", "hi"),
    ("conc_cpu_us_per_call", "  client CPU per conc call", "µs", "lo"),
    ("ask_p50_us", "elicitation round trip p50", "µs", "lo"),
    ("ask_p99_us", "elicitation round trip p99", "µs", "lo"),
    ("ask_cpu_us_per_call", "  client CPU per round trip", "µs", "lo"),
]

HTTPS_NOTE = ("no HTTPS leg in this run: the host was built without OpenSSL or given no "
              "certificates (scripts/bench says why)")

MRTR_NOTE = ("not measured in this run; "
             "mrtr_ask_ratio = our MRTR ask p50 / our legacy ask p50 once it has")

PY_NOTE = ("no Python leg in this run: the toolnexus_c binding or the library could not be loaded "
           "(scripts/bench says why)")

MANY_NOTE = "no many-server leg in this run (--fleet 0)"

# the many-server leg's raw figures (ours only), from the perf line's "many" block
MANY_KEYS = [
    # key, label, unit
    ("connect1_ms", "connect, 1 stdio server", "ms"),
    ("connect_all_ms", "connect, all {A} servers", "ms"),
    ("connect_stdio_ms", "connect, the {F} stdio ones alone", "ms"),
    ("connect_http_ms", "connect, the {F} HTTP ones alone", "ms"),
    ("disconnect_all_ms", "disconnect, all {A} servers", "ms"),
    ("connect1_startup_ms", "connect, 1 stdio, {S} ms start", "ms"),
    ("connect_all_startup_ms", "connect, all {A}, {S} ms start", "ms"),
    ("calls_one_per_s", "{C} threads, s0 alone (stdio)", "calls/s"),
    ("calls_one_cpu_us_per_call", "  client CPU per call", "µs"),
    ("calls_all_per_s", "{C} threads, all {A} servers", "calls/s"),
    ("calls_all_cpu_us_per_call", "  client CPU per call", "µs"),
    ("calls_stdio_per_s", "{C} threads, the {F} stdio ones", "calls/s"),
    ("calls_stdio_cpu_us_per_call", "  client CPU per call", "µs"),
    ("calls_http1_per_s", "{C} threads, 1 HTTP server", "calls/s"),
    ("calls_http1_cpu_us_per_call", "  client CPU per call", "µs"),
    ("calls_http_per_s", "{C} threads, the {F} HTTP ones", "calls/s"),
    ("calls_http_cpu_us_per_call", "  client CPU per call", "µs"),
    ("floor_calls_one_per_s", "floor: {C} threads, s0 alone", "calls/s"),
    ("floor_calls_one_cpu_us_per_call", "  client CPU per call", "µs"),
    ("floor_calls_stdio_per_s", "floor: {C} threads, {F} stdio", "calls/s"),
    ("floor_calls_stdio_cpu_us_per_call", "  client CPU per call", "µs"),
    ("threads_before", "host threads before connecting", "threads"),
    ("threads_connected", "host threads, all {A} connected", "threads"),
    ("threads_after_calls", "host threads after the calls", "threads"),
    ("fleet_start_ms", "starting {F} HTTP fixtures", "ms"),
]

# the Python leg's raw figures (bench/py_calls.py)
PY_KEYS = [
    ("main_p50_us", "call p50, main thread", "µs"),
    ("main_p99_us", "call p99, main thread", "µs"),
    ("main_cpu_us_per_call", "  CPU per call, main thread", "µs"),
    ("worker_p50_us", "call p50, worker thread", "µs"),
    ("worker_p99_us", "call p99, worker thread", "µs"),
    ("worker_cpu_us_per_call", "  CPU per call, worker thread", "µs"),
]

TARGETS = [
    # key, op, bound
    ("seq_p50_ratio", "<=", 1.03),
    ("conc_ratio", ">=", 0.97),
    ("ask_p50_ratio", "<=", 1.15),
    # client CPU per call, ours / floor's (the per-call speed pass set these)
    ("seq_cpu_ratio", "<=", 1.05),
    ("ask_cpu_ratio", "<=", 1.3),
    ("rss_kb_per_server", "<=", 1024),
    ("connect50_ratio", "<=", 3),
    ("connect_ratio", "<=", 1.1),
    ("cold_start_ratio", "<=", 1.2),
    ("disconnect_p50_ms", "<=", 0.5),
    ("http_seq_p50_ratio", "<=", 1.2),
    ("http_conc_ratio", ">=", 0.85),
    ("http_ask_p50_ratio", "<=", 1.4),
    # the same bounds for the HTTPS run of the HTTP leg
    ("https_seq_p50_ratio", "<=", 1.2),
    ("https_conc_ratio", ">=", 0.85),
    ("https_ask_p50_ratio", "<=", 1.4),
    ("probe_overhead_ms", "<=", 100),
    ("mrtr_ask_ratio", "<=", 1.3),
    ("async_conc_ratio", ">=", 0.9),
    # many servers, and Python's main thread
    ("connect200_ratio", "<=", 3),
    ("rss200_kb_per_stdio_server", "<=", 200),
    ("rss200_kb_per_http_server", "<=", 400),
    ("calls200_ratio", ">=", 0.9),
    # calls spread over the 100 stdio servers, ours / the floor's doing the same
    ("calls_stdio_spread_vs_floor", ">=", 0.9),
    ("py_main_thread_ratio", "<=", 1.1),
]

# the chart (ratios.svg): the ratios, ours / floor and ours / ours, on one axis; the targets
# in other units (KB, ms) each on its own scale below them
CHART_RATIOS = [
    ("seq_p50_ratio", "ours/floor"), ("conc_ratio", "ours/floor"), ("ask_p50_ratio", "ours/floor"),
    ("connect_ratio", "ours/floor"), ("cold_start_ratio", "ours/floor"),
    ("http_seq_p50_ratio", "ours/floor"), ("http_conc_ratio", "ours/floor"),
    ("http_ask_p50_ratio", "ours/floor"),
    ("https_seq_p50_ratio", "ours/floor"), ("https_conc_ratio", "ours/floor"),
    ("https_ask_p50_ratio", "ours/floor"),
    ("connect50_ratio", "ours/ours"), ("async_conc_ratio", "ours/ours"),
    ("mrtr_ask_ratio", "ours/ours"), ("connect200_ratio", "ours/ours"),
    ("calls200_ratio", "ours/ours"), ("py_main_thread_ratio", "ours/ours"),
]
CHART_ABSOLUTE = [
    ("rss_kb_per_server", "KB"), ("rss200_kb_per_stdio_server", "KB"),
    ("rss200_kb_per_http_server", "KB"), ("disconnect_p50_ms", "ms"), ("probe_overhead_ms", "ms"),
]


def stats(xs):
    xs = [x for x in xs if x is not None]
    return {"median": med(xs), "min": min(xs) if xs else None, "max": max(xs) if xs else None,
            "n": len(xs)}


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(v, unit=""):
    if v is None:
        return "—"
    if unit == "calls/s":
        return f"{v:,.0f}"
    if unit in ("KB", "KiB", "threads"):
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    return f"{v:.2f}"


def rnd(v, nd=2):
    if v is None:
        return None
    return int(round(v)) if nd == 0 else round(v, nd)


def esc(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def chart(r, checks, primary, meta):
    """An SVG bar chart (hand-written, no plotting library): one bar per key, each target marked
    (a tick at the bound, its ≤ or ≥ beside the value); met green, missed red, not measured grey.
    The ratios share one axis up to 3.5 at most (a dashed line at 1 = parity; a longer bar is cut
    and marked »); each target in KB or ms (the second
    panel) has a scale of its own, 0 to 1.25 × the larger of value and bound."""
    bounds = {k: (op, b) for k, op, b in TARGETS}
    ok_c, miss_c, none_c = "#3a7d44", "#c0392b", "#b0b0b0"
    left, x0, x1, width, row = 20, 250, 700, 900, 22
    y = 70
    out = []
    hi = max([1.6] + [r[k] * 1.08 for k, _ in CHART_RATIOS if r.get(k) is not None]
             + [bounds[k][1] * 1.15 for k, _ in CHART_RATIOS if k in bounds])
    hi = min(hi, 3.5)  # a longer bar is cut at the edge and marked », its value written beside it
    sx = lambda v: x0 + (x1 - x0) * min(v, hi) / hi

    def bar_row(key, kind, v, scale, unit):
        nonlocal y
        op, bound = bounds.get(key, (None, None))
        met = checks.get(key)
        colour = none_c if v is None else ok_c if met or met is None and op is None else miss_c
        out.append(f'<text x="{left}" y="{y + 15}" font-size="12">{esc(key)}</text>')
        if kind:
            out.append(f'<text x="{x0 - 8}" y="{y + 15}" font-size="10" fill="#666" '
                       f'text-anchor="end">{esc(kind)}</text>')
        if v is None:
            out.append(f'<rect x="{x0}" y="{y + 4}" width="{x1 - x0}" height="{row - 8}" fill="none" '
                       f'stroke="{none_c}" stroke-dasharray="3,3"/>')
            out.append(f'<text x="{x0 + 6}" y="{y + 15}" font-size="11" fill="#888">not measured</text>')
        else:
            w = max(1.0, scale(v) - x0)
            out.append(f'<rect x="{x0}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" fill="{colour}"/>')
            if scale(v) >= x1 - 0.5 and unit == "":
                out.append(f'<text x="{x1 + 2}" y="{y + 15}" font-size="12" fill="{colour}">»</text>')
        if bound is not None:
            bx = scale(bound)
            out.append(f'<line x1="{bx:.1f}" y1="{y + 1}" x2="{bx:.1f}" y2="{y + row - 1}" stroke="#111" '
                       f'stroke-width="2"/>')
        sym = {"<=": "≤", ">=": "≥"}.get(op, "")
        val = "—" if v is None else f"{v:.3f}" if unit == "" else fmt(v, unit) + " " + unit
        verdict = "" if op is None else " ok" if met else " MISSED" if met is not None else ""
        tgt = "" if op is None else f"  (target {sym} {bound:g}{' ' + unit if unit else ''}{verdict})"
        out.append(f'<text x="{x1 + 14}" y="{y + 15}" font-size="12" fill="{colour if v is not None else "#666"}">'
                   f'{esc(val)}{esc(tgt)}</text>')
        y += row

    out.append(f'<text x="{left}" y="24" font-size="16" font-weight="bold">toolnexus benchmark: headline ratios '
               f'({esc(primary)} pass)</text>')
    out.append(f'<text x="{left}" y="42" font-size="11" fill="#444">{esc(meta.get("when", ""))}, commit '
               f'{esc(meta.get("commit", "?"))}, {esc(meta.get("rounds", "?"))} rounds, '
               f'{esc(meta.get("cpus", "?"))} CPUs; bar: the value; black tick: the target '
               f'(≤: the bar should stop short of it, ≥: reach past it)</text>')
    lx = left
    for colour, what in ((ok_c, "target met"), (miss_c, "target missed"), (none_c, "not measured")):
        out.append(f'<rect x="{lx}" y="50" width="12" height="10" fill="{colour}"/>'
                   f'<text x="{lx + 16}" y="59" font-size="11">{what}</text>')
        lx += 110
    top = y
    for key, kind in CHART_RATIOS:
        bar_row(key, kind, r.get(key), sx, "")
    # the axis of the ratios: ticks, and parity (1.0) dashed
    step = 0.25 if hi <= 2.5 else 0.5 if hi <= 4 else 1.0
    t = 0.0
    while t <= hi + 1e-9:
        xt = sx(t)
        out.append(f'<line x1="{xt:.1f}" y1="{top}" x2="{xt:.1f}" y2="{y}" stroke="#e4e4e4"/>'
                   f'<text x="{xt:.1f}" y="{y + 13}" font-size="10" fill="#666" text-anchor="middle">{t:g}</text>')
        t += step
    out.append(f'<line x1="{sx(1.0):.1f}" y1="{top - 4}" x2="{sx(1.0):.1f}" y2="{y}" stroke="#555" '
               f'stroke-dasharray="4,3"/>')
    y += 30
    out.append(f'<text x="{left}" y="{y + 12}" font-size="13" font-weight="bold">targets in KB and ms '
               f'(each row its own scale: 0 to 1.25 × the larger of value and target)</text>')
    y += 20
    for key, unit in CHART_ABSOLUTE:
        v = r.get(key)
        bound = bounds.get(key, (None, None))[1]
        span = max([x for x in (v, bound) if x is not None] + [1e-9]) * 1.25
        bar_row(key, "", v, lambda val, span=span: x0 + (x1 - x0) * max(val, 0) / span, unit)
    height = y + 16
    # the grid goes under the bars: move it to the front of the list
    grid = [e for e in out if 'stroke="#e4e4e4"' in e]
    rest = [e for e in out if 'stroke="#e4e4e4"' not in e]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 250}" height="{height}" '
            f'viewBox="0 0 {width + 250} {height}" font-family="DejaVu Sans, Arial, sans-serif">\n'
            f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(grid + rest) + "\n</svg>\n")


def main():
    args = sys.argv[1:]
    primary = "pinned"
    out_dir = None
    while args and args[0] in ("--primary", "--out-dir"):
        if len(args) < 2:
            sys.exit("report.py: %s needs a value" % args[0])
        if args[0] == "--primary":
            primary = args[1]
        else:
            out_dir = args[1]
        args = args[2:]
    if len(args) != 1:
        sys.exit("usage: report.py [--primary pinned|unpinned] [--out-dir DIR] RAW.jsonl")
    path = args[0]
    meta = {}
    runs = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line:
            continue
        obj = json.loads(line)
        if "meta" in obj:
            meta.update(obj["meta"])
        elif "meta_end" in obj:
            meta.update(obj["meta_end"])
        else:
            runs.append(obj)

    many = int(meta.get("many", 50))
    fleet = int(meta.get("fleet", 0) or 0)
    passes = [p for p in ("pinned", "unpinned") if any(r["pass"] == p for r in runs)]
    if primary not in passes:
        primary = passes[0]

    summary = {}
    for p in passes:
        s = {"ours": {}, "floor": {}}
        for who in ("ours", "floor"):
            perf = [r["data"][who] for r in runs if r["pass"] == p
                    and r["data"]["mode"] == "perf"]
            for d in perf:  # connect50_ms is named after --many
                d["connectN_ms"] = d.get(f"connect{many}_ms")
                d["connectN_startup_ms"] = d.get(f"connect{many}_startup_ms")
            figs = {}
            for key, *_ in PERF_KEYS:
                xs = [d[key] for d in perf if d.get(key) is not None]
                figs[key] = {"median": med(xs), "min": min(xs) if xs else None,
                             "max": max(xs) if xs else None, "n": len(xs)}
            for n in (1, many):
                xs = [r["data"]["rss_kb"] for r in runs if r["pass"] == p
                      and r["data"]["mode"] == "rss" and r["data"]["who"] == who
                      and r["data"]["servers"] == n and r["data"].get("transport", "stdio") == "stdio"
                      and not r["data"].get("calls_each")]
                figs[f"rss{n}_kb"] = {"median": med(xs), "min": min(xs) if xs else None,
                                      "max": max(xs) if xs else None, "n": len(xs)}
            m = lambda k: figs[k]["median"]
            figs["rss_kb_per_server"] = {"median": (m(f"rss{many}_kb") - m("rss1_kb")) / (many - 1)
                                         if m("rss1_kb") is not None and m(f"rss{many}_kb") is not None
                                         else None}
            # connect50_ratio: servers that take startup_ms to start (the headline);
            # connect50_ratio_instant: the instant fixture (mostly process creation)
            figs["connect50_ratio"] = {"median": m("connectN_startup_ms") / m("connect1_startup_ms")
                                       if m("connect1_startup_ms") and m("connectN_startup_ms") is not None
                                       else None}
            figs["connect50_ratio_instant"] = {"median": m("connectN_ms") / m("connect1_ms")
                                               if m("connect1_ms") else None}
            s[who] = figs
            s[who + "_rounds"] = len(perf)
            for leg, _ in LEGS:
                legs = [r["data"][leg][who] for r in runs if r["pass"] == p
                        and r["data"]["mode"] == "perf" and leg in r["data"]]
                s[leg + "_" + who] = {key: stats([d.get(key) for d in legs])
                                      for key, *_ in HTTP_KEYS}

        # the many-server leg (ours only) and its RSS processes (calls on every server)
        manys = [r["data"]["many"] for r in runs if r["pass"] == p
                 and r["data"]["mode"] == "perf" and "many" in r["data"]]
        s["many"] = {key: stats([d.get(key) for d in manys]) for key, *_ in MANY_KEYS}
        s["many_rounds"] = len(manys)
        fleet_n = manys[0]["servers_stdio"] if manys else fleet
        s["fleet_n"] = fleet_n
        rss_fleet = {}
        for transport in ("stdio", "http"):
            for n in (1, fleet_n):
                xs = [r["data"]["rss_kb"] for r in runs if r["pass"] == p
                      and r["data"]["mode"] == "rss" and r["data"]["who"] == "ours"
                      and r["data"]["servers"] == n and r["data"].get("calls_each")
                      and r["data"].get("transport", "stdio") == transport]
                rss_fleet[f"rss_{transport}1_kb" if n == 1 else f"rss_{transport}_n_kb"] = stats(xs)
        s["rss_fleet"] = rss_fleet
        # the Python leg
        pys = [r["data"] for r in runs if r["pass"] == p and r["data"]["mode"] == "py"]
        s["py"] = {key: stats([d.get(key) for d in pys]) for key, *_ in PY_KEYS}

        o = lambda k: s["ours"][k]["median"]
        f = lambda k: s["floor"][k]["median"]
        div = lambda a, b: a / b if a is not None and b else None
        mn = lambda k: s["many"][k]["median"]
        rf = lambda k: rss_fleet[k]["median"]
        py = lambda k: s["py"][k]["median"]
        per_extra = lambda a, b: (a - b) / (fleet_n - 1) if a is not None and b is not None and fleet_n > 1 else None
        # the same ratios round by round (both contenders measured in the same process)
        paired = [r["data"] for r in runs if r["pass"] == p and r["data"]["mode"] == "perf"]
        s["per_round"] = {
            "seq_p50_ratio": [round(d["ours"]["seq_p50_us"] / d["floor"]["seq_p50_us"], 3) for d in paired],
            "conc_ratio": [round(d["ours"]["conc_calls_per_s"] / d["floor"]["conc_calls_per_s"], 3) for d in paired],
            "ask_p50_ratio": [round(d["ours"]["ask_p50_us"] / d["floor"]["ask_p50_us"], 3) for d in paired],
            "connect50_ratio": [round(d["ours"][f"connect{many}_startup_ms"] / d["ours"]["connect1_startup_ms"], 2)
                                for d in paired if d["ours"].get("connect1_startup_ms")],
            "connect50_ratio_instant": [round(d["ours"][f"connect{many}_ms"] / d["ours"]["connect1_ms"], 2)
                                        for d in paired],
        }
        leg_ratios = {}
        for leg, _ in LEGS:
            for name, key in (("seq_p50_ratio", "seq_p50_us"), ("conc_ratio", "conc_calls_per_s"),
                              ("ask_p50_ratio", "ask_p50_us")):
                s["per_round"][f"{leg}_{name}"] = [
                    round(d[leg]["ours"][key] / d[leg]["floor"][key], 3) for d in paired if leg in d]
            lo = lambda k, leg=leg: s[leg + "_ours"][k]["median"]
            lf = lambda k, leg=leg: s[leg + "_floor"][k]["median"]
            leg_ratios.update({
                f"{leg}_seq_p50_ratio": div(lo("seq_p50_us"), lf("seq_p50_us")),
                f"{leg}_conc_ratio": div(lo("conc_calls_per_s"), lf("conc_calls_per_s")),
                f"{leg}_ask_p50_ratio": div(lo("ask_p50_us"), lf("ask_p50_us")),
                f"{leg}_seq_cpu_ratio": div(lo("seq_cpu_us_per_call"), lf("seq_cpu_us_per_call")),
            })
        s["per_round"]["connect200_ratio"] = [
            round(d["many"]["connect_all_startup_ms"] / d["many"]["connect1_startup_ms"], 2)
            for d in paired if d.get("many", {}).get("connect1_startup_ms")]
        s["per_round"]["connect200_ratio_instant"] = [
            round(d["many"]["connect_all_ms"] / d["many"]["connect1_ms"], 2) for d in paired if "many" in d]
        s["per_round"]["calls200_ratio"] = [
            round(d["many"]["calls_all_per_s"] / d["many"]["calls_one_per_s"], 3) for d in paired if "many" in d]
        s["per_round"]["py_main_thread_ratio"] = [
            round(d["main_p50_us"] / d["worker_p50_us"], 3) for d in pys]
        s["per_round"]["probe_overhead_ms"] = [
            round(d["ours"]["connect1_auto_ms"] - d["ours"]["connect1_legacy_ms"], 3)
            for d in paired if d["ours"].get("connect1_auto_ms") is not None]
        s["ratios"] = {
            "connect_ratio": div(o("connect1_ms"), f("connect1_ms")),
            "cold_start_ratio": div(o("cold_start_ms"), f("cold_start_ms")),
            "disconnect_p50_ms": o("disconnect1_ms"),
            "floor_disconnect_p50_ms": f("disconnect1_ms"),
            **leg_ratios,
            "async_conc_ratio": div(o("async_conc_calls_per_s"), o("conc_calls_per_s")),
            "probe_overhead_ms": (o("connect1_auto_ms") - o("connect1_legacy_ms"))
            if o("connect1_auto_ms") is not None and o("connect1_legacy_ms") is not None else None,
            "mrtr_ask_ratio": div(o("mrtr_ask_p50_us"), o("ask_p50_us")),
            "seq_p50_ratio": div(o("seq_p50_us"), f("seq_p50_us")),
            "seq_p99_ratio": div(o("seq_p99_us"), f("seq_p99_us")),
            "seq_cpu_ratio": div(o("seq_cpu_us_per_call"), f("seq_cpu_us_per_call")),
            "conc_ratio": div(o("conc_calls_per_s"), f("conc_calls_per_s")),
            "ask_p50_ratio": div(o("ask_p50_us"), f("ask_p50_us")),
            "ask_cpu_ratio": div(o("ask_cpu_us_per_call"), f("ask_cpu_us_per_call")),
            "rss_kb_per_server": o("rss_kb_per_server"),
            "connect50_ratio": o("connect50_ratio"),
            "floor_connect50_ratio": f("connect50_ratio"),
            "connect50_ratio_instant": o("connect50_ratio_instant"),
            "floor_connect50_ratio_instant": f("connect50_ratio_instant"),
            # client CPU per call beside the latency and throughput ratios
            "conc_cpu_ratio": div(o("conc_cpu_us_per_call"), f("conc_cpu_us_per_call")),
            "async_cpu_ratio": div(o("async_cpu_us_per_call"), o("conc_cpu_us_per_call")),
            # many servers (ours over ours)
            "connect200_ratio": div(mn("connect_all_startup_ms"), mn("connect1_startup_ms")),
            "connect200_ratio_instant": div(mn("connect_all_ms"), mn("connect1_ms")),
            "calls200_ratio": div(mn("calls_all_per_s"), mn("calls_one_per_s")),
            "calls200_cpu_ratio": div(mn("calls_all_cpu_us_per_call"), mn("calls_one_cpu_us_per_call")),
            "calls_stdio_spread_ratio": div(mn("calls_stdio_per_s"), mn("calls_one_per_s")),
            "calls_http_spread_ratio": div(mn("calls_http_per_s"), mn("calls_http1_per_s")),
            "calls_http1_vs_stdio1_ratio": div(mn("calls_http1_per_s"), mn("calls_one_per_s")),
            "floor_calls_stdio_spread_ratio": div(mn("floor_calls_stdio_per_s"), mn("floor_calls_one_per_s")),
            "calls_stdio_spread_vs_floor": div(mn("calls_stdio_per_s"), mn("floor_calls_stdio_per_s")),
            "rss200_kb_per_stdio_server": per_extra(rf("rss_stdio_n_kb"), rf("rss_stdio1_kb")),
            "rss200_kb_per_http_server": per_extra(rf("rss_http_n_kb"), rf("rss_http1_kb")),
            # Python, main thread over a worker thread
            "py_main_thread_ratio": div(py("main_p50_us"), py("worker_p50_us")),
            "py_main_thread_cpu_ratio": div(py("main_cpu_us_per_call"), py("worker_cpu_us_per_call")),
        }
        for leg, _ in LEGS:
            lo = lambda k, leg=leg: s[leg + "_ours"][k]["median"]
            lf = lambda k, leg=leg: s[leg + "_floor"][k]["median"]
            s["ratios"][f"{leg}_conc_cpu_ratio"] = div(lo("conc_cpu_us_per_call"), lf("conc_cpu_us_per_call"))
            s["ratios"][f"{leg}_ask_cpu_ratio"] = div(lo("ask_cpu_us_per_call"), lf("ask_cpu_us_per_call"))
        summary[p] = s

    # ------------------------------------------------------------------ the table
    first_perf = next((r["data"] for r in runs if r["data"]["mode"] == "perf"), {})
    for k in ("seq_calls", "ask_calls", "conc_in_flight", "conc_window_ms"):
        meta.setdefault(k, first_perf.get(k, "?"))
    conc = meta["conc_in_flight"]
    startup = first_perf.get("startup_ms") or 0  # 0: no startup variant (or an older raw file)
    print()
    print(f"toolnexus benchmark — {meta.get('when', '')}")
    print(f"  library {meta.get('version', '?')} (release) at {meta.get('commit', '?')}; "
          f"{meta.get('cpus', '?')} CPUs ({meta.get('cpu_model', '?')}); kernel {meta.get('kernel', '?')}")
    print(f"  server: tn-fixture-server (release), tool `echo` ({{\"text\":\"hello\"}}) and `ask_form`")
    print(f"  medians over {meta.get('rounds', '?')} rounds per pass; a round = one host process running both "
          f"clients interleaved in blocks (A B A B …, first one alternating by round), then the RSS processes"
          + (" and the Python leg" if meta.get("python_leg") else ""))
    print(f"  seq: {meta['seq_calls']} calls (10 blocks); elicitation: {meta['ask_calls']} round trips (10 blocks); "
          f"throughput: {conc} host threads (4 groups × 4) in blocking calls on one server, "
          f"{meta['conc_window_ms']} ms counted (4 windows, alternating) per client")
    print(f"  connect: both clients connect the servers in parallel (ours: tn_connect, one thread per "
          f"server; floor: spawn all, then each phase sent to all before awaiting answers);\n    "
          + (f"two variants: instant fixture, and the fixture with --init-delay-ms {startup} "
             f"(a server that takes {startup} ms to start)" if startup else
             "instant fixture only (--startup-ms 0)"))
    lb, la = meta.get("load_before"), meta.get("load_after")
    foreign = None
    if meta.get("wall_ticks"):
        cap = meta["wall_ticks"] * int(meta.get("cpus", 1))
        foreign = max(0.0, (meta["busy_ticks"] - meta["own_ticks"]) / cap * 100)
        steal = meta["steal_ticks"] / cap * 100
        print(f"  other processes used {foreign:.0f}% of the machine's CPU during the run "
              f"(hypervisor steal {steal:.1f}%); load average before {lb}, after {la}; "
              f"{meta.get('seconds', '?')} s"
              + ("\n  WARNING: the machine was busy with other work: expect noise, re-run when idle"
                 if foreign > 10 else ""))
    elif lb:
        print(f"  load average before: {lb}; after: {la}")
    for p in passes:
        s = summary[p]
        print()
        title = "PINNED (taskset -c 0: host, library threads and servers on CPU 0)" if p == "pinned" \
            else "UNPINNED (scheduler places everything)"
        print(f"== {title}")
        hdr = f"  {'':38} {'ours':>12} {'floor':>12} {'ours/floor':>11}   {'ours min–max':>21}  {'floor min–max':>21}"
        print(hdr)
        print("  " + "-" * (len(hdr) - 2))
        for key, label, unit, _ in PERF_KEYS:
            if "startup" in key and not startup:
                continue  # the startup variant was not run (--startup-ms 0)
            lab = label.format(N=many, C=conc, S=startup) + f" ({unit})"
            ov, fv = s["ours"][key]["median"], s["floor"][key]["median"]
            ratio = ov / fv if ov is not None and fv else None
            orng = f"{fmt(s['ours'][key]['min'], unit)}–{fmt(s['ours'][key]['max'], unit)}"
            frng = f"{fmt(s['floor'][key]['min'], unit)}–{fmt(s['floor'][key]['max'], unit)}"
            print(f"  {lab:38} {fmt(ov, unit):>12} {fmt(fv, unit):>12} {fmt(ratio):>11}   {orng:>21}  {frng:>21}")
        for n in (1, many):
            key = f"rss{n}_kb"
            ov, fv = s["ours"][key]["median"], s["floor"][key]["median"]
            ratio = ov / fv if ov is not None and fv else None
            lab = f"peak RSS, {n} server{'s' if n > 1 else ''} (KB)"
            orng = f"{fmt(s['ours'][key]['min'], 'KB')}–{fmt(s['ours'][key]['max'], 'KB')}"
            frng = f"{fmt(s['floor'][key]['min'], 'KB')}–{fmt(s['floor'][key]['max'], 'KB')}"
            print(f"  {lab:38} {fmt(ov, 'KB'):>12} {fmt(fv, 'KB'):>12} {fmt(ratio):>11}   {orng:>21}  {frng:>21}")
        ov, fv = s["ours"]["rss_kb_per_server"]["median"], s["floor"]["rss_kb_per_server"]["median"]
        print(f"  {'RSS per extra server (KB)':38} {fmt(ov):>12} {fmt(fv):>12}")
        ov, fv = s["ours"]["connect50_ratio_instant"]["median"], s["floor"]["connect50_ratio_instant"]["median"]
        print(f"  {f'connect {many} / connect 1, instant':38} {fmt(ov):>12} {fmt(fv):>12}")
        if startup:
            ov, fv = s["ours"]["connect50_ratio"]["median"], s["floor"]["connect50_ratio"]["median"]
            print(f"  {f'connect {many} / connect 1, {startup} ms start':38} {fmt(ov):>12} {fmt(fv):>12}")
        for leg, title in LEGS:
            if not s[leg + "_ours"]["seq_p50_us"]["n"]:
                continue
            print(f"  -- {title}")
            for key, label, unit, _ in HTTP_KEYS:
                lab = label.format(C=conc) + f" ({unit})"
                a, b = s[leg + "_ours"][key], s[leg + "_floor"][key]
                ratio = a["median"] / b["median"] if a["median"] is not None and b["median"] else None
                orng = f"{fmt(a['min'], unit)}–{fmt(a['max'], unit)}"
                frng = f"{fmt(b['min'], unit)}–{fmt(b['max'], unit)}"
                print(f"  {lab:38} {fmt(a['median'], unit):>12} {fmt(b['median'], unit):>12} "
                      f"{fmt(ratio):>11}   {orng:>21}  {frng:>21}")
        if s["many_rounds"]:
            fn = s["fleet_n"]
            print(f"  -- many servers (ours, and the floor's stdio reference): one config of {fn} stdio + {fn} HTTP "
                  f"servers (fixture processes; the HTTP ones --http 127.0.0.1:0)")
            for key, label, unit in MANY_KEYS:
                a = s["many"][key]
                if not a["n"]:
                    continue
                lab = label.format(A=2 * fn, F=fn, C=conc, S=startup) + (f" ({unit})" if unit != "threads" else "")
                rng = f"{fmt(a['min'], unit)}–{fmt(a['max'], unit)}"
                print(f"  {lab:38} {fmt(a['median'], unit):>12} {'':>12} {'':>11}   {rng:>21}")
            for transport in ("stdio", "http"):
                for n, key in ((1, f"rss_{transport}1_kb"), (fn, f"rss_{transport}_n_kb")):
                    a = s["rss_fleet"][key]
                    if not a["n"]:
                        continue
                    lab = f"peak RSS, {n} {transport} server{'s' if n > 1 else ''} (KB)"
                    rng = f"{fmt(a['min'], 'KB')}–{fmt(a['max'], 'KB')}"
                    print(f"  {lab:38} {fmt(a['median'], 'KB'):>12} {'':>12} {'':>11}   {rng:>21}")
            print(f"  {'  (5 echo calls on every server first)':38}")
        if s["py"]["main_p50_us"]["n"]:
            print("  -- Python: bench/py_calls.py, client.call(\"s0_echo\") through bindings/python (toolnexus_c) "
                  "on the release library, stdio")
            for key, label, unit in PY_KEYS:
                a = s["py"][key]
                rng = f"{fmt(a['min'], unit)}–{fmt(a['max'], unit)}"
                print(f"  {label + f' ({unit})':38} {fmt(a['median'], unit):>12} {'':>12} {'':>11}   {rng:>21}")

    # ------------------------------------------------------------------ targets
    r = summary[primary]["ratios"]
    print()
    print(f"== targets, from the {primary.upper()} pass")
    checks = {}
    for key, op, bound in TARGETS:
        v = r[key]
        ok = v is not None and (v <= bound if op == "<=" else v >= bound)
        checks[key] = ok if v is not None else None
        extra = ""
        if key == "connect50_ratio":
            extra = (f"   ({startup} ms start; floor {fmt(r['floor_connect50_ratio'])})" if startup
                     else "   (no startup variant: --startup-ms 0)")
        if key == "mrtr_ask_ratio" and v is None:
            extra = "   (" + MRTR_NOTE + ")"
        if key.startswith("https_") and v is None:
            extra = "   (" + HTTPS_NOTE + ")"
        if key == "connect200_ratio":
            extra = (f"   ({startup} ms start; instant {fmt(r['connect200_ratio_instant'])})" if v is not None
                     else "   (" + (MANY_NOTE if not summary[primary]["many_rounds"] else
                                   "no startup variant: --startup-ms 0") + ")")
        if key in ("calls200_ratio", "calls_stdio_spread_vs_floor", "rss200_kb_per_stdio_server",
                   "rss200_kb_per_http_server") and v is None:
            extra = "   (" + MANY_NOTE + ")"
        if key == "calls200_ratio" and v is not None:
            extra = (f"   (stdio only {fmt(r['calls_stdio_spread_ratio'])}, the floor's "
                     f"{fmt(r['floor_calls_stdio_spread_ratio'])}; HTTP only "
                     f"{fmt(r['calls_http_spread_ratio'])} of one HTTP server; one HTTP / one stdio "
                     f"{fmt(r['calls_http1_vs_stdio1_ratio'])})")
        if key == "py_main_thread_ratio" and v is None:
            extra = "   (" + PY_NOTE + ")"
        verdict = "ok" if ok else "MISSED" if v is not None else "not measured"
        shown = f"{v:.3f}" if v is not None and abs(v) < 10 else fmt(v)
        print(f"  {key:26} {shown:>9}  {op} {bound:<6}  {verdict}{extra}")
    print(f"  {'connect50_ratio_instant':26} {fmt(r['connect50_ratio_instant']):>9}  (no target; "
          f"floor {fmt(r['floor_connect50_ratio_instant'])})")
    print("  client CPU per call (seq and ask have targets above): ours/floor seq "
          f"{fmt(r['seq_cpu_ratio'])}, 16 in flight {fmt(r['conc_cpu_ratio'])}, ask {fmt(r['ask_cpu_ratio'])}; "
          f"HTTP seq {fmt(r['http_seq_cpu_ratio'])}, 16 in flight {fmt(r['http_conc_cpu_ratio'])}, "
          f"ask {fmt(r['http_ask_cpu_ratio'])};\n    ours/ours: async / sync {fmt(r['async_cpu_ratio'])}, "
          f"spread over all / one server {fmt(r['calls200_cpu_ratio'])}, Python main / worker thread "
          f"{fmt(r['py_main_thread_cpu_ratio'])}")
    print(f"  note: connect50_ratio uses servers that take {startup} ms to start (real ones take longer), so it "
          f"shows whether connecting is parallel; connect50_ratio_instant uses the instant fixture, where {many} "
          f"process creations on {meta.get('cpus', '?')} CPUs are pure CPU that no client can parallelise "
          f"(the floor shows the same)" if startup else
          f"  note: connect50_ratio_instant uses the instant fixture, where {many} process creations on "
          f"{meta.get('cpus', '?')} CPUs are pure CPU that no client can parallelise (the floor shows the same)")

    # ------------------------------------------------------------------ the JSON line
    out = {
        "ratios_from": primary,
        "seq_p50_ratio": rnd(r["seq_p50_ratio"], 3),
        "conc_ratio": rnd(r["conc_ratio"], 3),
        "ask_p50_ratio": rnd(r["ask_p50_ratio"], 3),
        "seq_cpu_ratio": rnd(r["seq_cpu_ratio"], 3),
        "ask_cpu_ratio": rnd(r["ask_cpu_ratio"], 3),
        "rss_kb_per_server": rnd(r["rss_kb_per_server"], 1),
        "connect50_ratio": rnd(r["connect50_ratio"], 2),
        "connect50_ratio_instant": rnd(r["connect50_ratio_instant"], 2),
        "floor_connect50_ratio": rnd(r["floor_connect50_ratio"], 2),
        "floor_connect50_ratio_instant": rnd(r["floor_connect50_ratio_instant"], 2),
        "connect_ratio": rnd(r["connect_ratio"], 3),
        "cold_start_ratio": rnd(r["cold_start_ratio"], 3),
        "disconnect_p50_ms": rnd(r["disconnect_p50_ms"], 3),
        "http_seq_p50_ratio": rnd(r["http_seq_p50_ratio"], 3),
        "http_conc_ratio": rnd(r["http_conc_ratio"], 3),
        "http_ask_p50_ratio": rnd(r["http_ask_p50_ratio"], 3),
        "https_seq_p50_ratio": rnd(r["https_seq_p50_ratio"], 3),
        "https_conc_ratio": rnd(r["https_conc_ratio"], 3),
        "https_ask_p50_ratio": rnd(r["https_ask_p50_ratio"], 3),
        "https_note": HTTPS_NOTE if r["https_seq_p50_ratio"] is None else None,
        "async_conc_ratio": rnd(r["async_conc_ratio"], 3),
        "probe_overhead_ms": rnd(r["probe_overhead_ms"], 3),
        "mrtr_ask_ratio": rnd(r["mrtr_ask_ratio"], 3),
        "mrtr_ask_note": MRTR_NOTE if r["mrtr_ask_ratio"] is None else None,
        "connect200_ratio": rnd(r["connect200_ratio"], 2),
        "connect200_ratio_instant": rnd(r["connect200_ratio_instant"], 2),
        "rss200_kb_per_stdio_server": rnd(r["rss200_kb_per_stdio_server"], 1),
        "rss200_kb_per_http_server": rnd(r["rss200_kb_per_http_server"], 1),
        "calls200_ratio": rnd(r["calls200_ratio"], 3),
        "calls_stdio_spread_vs_floor": rnd(r["calls_stdio_spread_vs_floor"], 3),
        "many_note": MANY_NOTE if not summary[primary]["many_rounds"] else None,
        "py_main_thread_ratio": rnd(r["py_main_thread_ratio"], 3),
        "py_note": PY_NOTE if r["py_main_thread_ratio"] is None else None,
        "startup_ms": startup,
        "targets_met": checks,
        "rounds": meta.get("rounds"),
        "commit": meta.get("commit"),
        "other_cpu_pct": rnd(foreign, 1),
    }
    for p in passes:
        s = summary[p]
        block = {}
        for who in ("ours", "floor"):
            d = {}
            for key, *_ in PERF_KEYS:
                name = key.replace("connectN_", f"connect{many}_")
                nd = 3 if key.endswith("_ms") else 0 if key == "conc_calls_per_s" else 2
                d[name] = rnd(s[who][key]["median"], nd)
            d["rss1_kb"] = rnd(s[who]["rss1_kb"]["median"], 0)
            d[f"rss{many}_kb"] = rnd(s[who][f"rss{many}_kb"]["median"], 0)
            d["rss_kb_per_server"] = rnd(s[who]["rss_kb_per_server"]["median"], 1)
            d["connect50_ratio"] = rnd(s[who]["connect50_ratio"]["median"], 2)
            d["connect50_ratio_instant"] = rnd(s[who]["connect50_ratio_instant"]["median"], 2)
            block[who] = d
        for leg, _ in LEGS:
            block[leg] = {who: {key: rnd(s[leg + "_" + who][key]["median"],
                                         3 if key.endswith("_ms") else 0 if key == "conc_calls_per_s" else 2)
                                for key, *_ in HTTP_KEYS} for who in ("ours", "floor")}
        nd_of = lambda key: 3 if key.endswith("_ms") else 0 if key.endswith("_per_s") or key.startswith("threads") else 2
        if s["many_rounds"]:
            block["many"] = {"servers_stdio": s["fleet_n"], "servers_http": s["fleet_n"],
                             **{key: rnd(s["many"][key]["median"], nd_of(key)) for key, *_ in MANY_KEYS},
                             **{key.replace("_n_", f"{s['fleet_n']}_"): rnd(v["median"], 0)
                                for key, v in s["rss_fleet"].items()}}
        if s["py"]["main_p50_us"]["n"]:
            block["py"] = {key: rnd(s["py"][key]["median"], 2) for key, *_ in PY_KEYS}
        block["ratios"] = {k: rnd(v, 3) for k, v in s["ratios"].items()}
        block["per_round_ratios"] = s["per_round"]
        out[p] = block
    line = json.dumps(out, separators=(",", ":"), ensure_ascii=False)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "last.json"), "w", encoding="utf-8") as fp:
            fp.write(line + "\n")
        with open(os.path.join(out_dir, "ratios.svg"), "w", encoding="utf-8") as fp:
            fp.write(chart(r, checks, primary, meta))
        print(f"\n  written: {os.path.join(out_dir, 'last.json')} (this JSON line), "
              f"{os.path.join(out_dir, 'ratios.svg')} (the chart)")
    print()
    print(line)


if __name__ == "__main__":
    main()
