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
"""
import json
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

TARGETS = [
    # key, op, bound
    ("seq_p50_ratio", "<=", 1.25),
    ("conc_ratio", ">=", 0.8),
    ("ask_p50_ratio", "<=", 1.5),
    ("rss_kb_per_server", "<=", 1024),
    ("connect50_ratio", "<=", 3),
    # issue 18
    ("connect_ratio", "<=", 1.1),
    ("cold_start_ratio", "<=", 1.2),
    ("disconnect_p50_ms", "<=", 0.5),
    ("http_seq_p50_ratio", "<=", 1.5),
    ("http_conc_ratio", ">=", 0.7),
    ("http_ask_p50_ratio", "<=", 1.5),
    # the same bounds for the HTTPS run of the HTTP leg
    ("https_seq_p50_ratio", "<=", 1.5),
    ("https_conc_ratio", ">=", 0.7),
    ("https_ask_p50_ratio", "<=", 1.5),
    ("probe_overhead_ms", "<=", 100),
    ("mrtr_ask_ratio", "<=", 1.3),
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
    if unit in ("KB", "KiB"):
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    return f"{v:.2f}"


def rnd(v, nd=2):
    if v is None:
        return None
    return int(round(v)) if nd == 0 else round(v, nd)


def main():
    args = sys.argv[1:]
    primary = "pinned"
    if args and args[0] == "--primary":
        primary, args = args[1], args[2:]
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
                      and r["data"]["servers"] == n]
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

        o = lambda k: s["ours"][k]["median"]
        f = lambda k: s["floor"][k]["median"]
        div = lambda a, b: a / b if a is not None and b else None
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
        }
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
          f"clients interleaved in blocks (A B A B …, first one alternating by round), then 4 RSS processes")
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
        verdict = "ok" if ok else "MISSED" if v is not None else "not measured"
        print(f"  {key:23} {fmt(v):>10}  {op} {bound:<6}  {verdict}{extra}")
    print(f"  {'connect50_ratio_instant':23} {fmt(r['connect50_ratio_instant']):>10}  (no target; "
          f"floor {fmt(r['floor_connect50_ratio_instant'])})")
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
        block["ratios"] = {k: rnd(v, 3) for k, v in s["ratios"].items()}
        block["per_round_ratios"] = s["per_round"]
        out[p] = block
    print()
    print(json.dumps(out, separators=(",", ":"), ensure_ascii=False))


if __name__ == "__main__":
    main()
