#!/usr/bin/env python3
"""The benchmark's Python leg: a tool call through the toolnexus_c binding (ctypes) made on
Python's main thread against the same call made from a worker threading.Thread.

  python3 bench/py_calls.py --lib target/release/libtoolnexus.so --fixture target/release/tn-fixture-server
      [--blocks 10] [--calls 200] [--warmup 300]
  python3 bench/py_calls.py --lib … --check      # only load the binding and the library; exit 0 if it can

One client, one stdio server (the fixture, as s0); the call is client.call("s0_echo",
{"text":"hello"}) and each result is checked (output "hello", not an error: anything else dies
with exit status 2). On the main thread Client.call starts the call asynchronously and waits in
slices so that Ctrl-C can interrupt it; on another thread it is the plain blocking
tn_call_tool. The blocks alternate (main, worker, main, worker …; --first worker swaps them);
the worker is one threading.Thread that stays alive for the whole run and is handed one block
at a time, the main thread waiting for it outside the timed calls. Latency is
time.perf_counter_ns() around each call; CPU is time.process_time_ns() (the whole process: every
thread's, the library's included) over each block. Prints one JSON line:
  {"mode":"py","main_p50_us":…,"main_p99_us":…,"worker_p50_us":…,"worker_p99_us":…,
   "main_cpu_us_per_call":…,"worker_cpu_us_per_call":…,"calls":…,"blocks":…,"python":"3.x.y"}
Exit status 3 (with a message on stderr) when the binding or the library cannot be loaded.
"""
import argparse
import json
import os
import platform
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BINDING = os.path.normpath(os.path.join(HERE, "..", "bindings", "python"))


def die(msg, code=2):
    print("py_calls: " + msg, file=sys.stderr)
    sys.exit(code)


def pct(xs, p):
    """nearest-rank percentile, as bench/host.c's"""
    v = sorted(xs)
    rank = int(p / 100.0 * len(v) + 0.999999)
    return v[min(max(rank, 1), len(v)) - 1]


def load(lib_path):
    if not os.path.exists(lib_path):
        die("no library at %s (cargo build --release)" % lib_path, 3)
    os.environ["TOOLNEXUS_LIB"] = os.path.abspath(lib_path)
    sys.path.insert(0, BINDING)
    try:
        import toolnexus_c
        from toolnexus_c import _ffi
        _ffi.lib()
        toolnexus_c.version()
    except Exception as e:  # noqa: BLE001 - any failure to load means: skip this leg
        die("cannot load the toolnexus_c binding from %s with %s: %s: %s"
            % (BINDING, lib_path, type(e).__name__, e), 3)
    return toolnexus_c


def one_call(client):
    t0 = time.perf_counter_ns()
    r = client.call("s0_echo", {"text": "hello"})
    t1 = time.perf_counter_ns()
    if r.is_error or r.output != "hello":
        die("unexpected echo result %s" % r.json)
    return t1 - t0


def block(client, n, lat):
    c0 = time.process_time_ns()
    for _ in range(n):
        lat.append(one_call(client))
    return time.process_time_ns() - c0


class Worker(threading.Thread):
    """One thread for the whole run; run_block() hands it a block and waits for it."""

    def __init__(self, client):
        super().__init__(name="bench-worker", daemon=True)
        self.client = client
        self.go = threading.Semaphore(0)
        self.done = threading.Semaphore(0)
        self.n = 0
        self.lat = []
        self.cpu = 0
        self.error = None
        self.quit = False

    def run(self):
        while True:
            self.go.acquire()
            if self.quit:
                return
            try:
                self.cpu += block(self.client, self.n, self.lat)
            except BaseException as e:  # noqa: BLE001 - reported on the main thread
                self.error = e
            finally:
                self.done.release()

    def run_block(self, n):
        self.n = n
        self.go.release()
        self.done.acquire()
        if self.error is not None:
            die("the worker's call failed: %r" % (self.error,))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True, help="libtoolnexus.so (the release build)")
    ap.add_argument("--fixture", help="tn-fixture-server")
    ap.add_argument("--blocks", type=int, default=10, help="blocks per thread (default 10)")
    ap.add_argument("--calls", type=int, default=200, help="calls per block (default 200)")
    ap.add_argument("--warmup", type=int, default=300, help="untimed calls on each thread first")
    ap.add_argument("--first", choices=("main", "worker"), default="main")
    ap.add_argument("--check", action="store_true", help="only load the binding and the library")
    a = ap.parse_args()
    tn = load(a.lib)
    if a.check:
        return
    if not a.fixture or not os.access(a.fixture, os.X_OK):
        die("--fixture PATH (executable) is required")
    if a.blocks < 1 or a.calls < 1 or a.warmup < 0:
        die("--blocks and --calls must be >= 1, --warmup >= 0")
    if threading.current_thread() is not threading.main_thread():
        die("not on the main thread")

    client = tn.Client({"mcpServers": {"s0": {"command": [os.path.abspath(a.fixture)]}}})
    try:
        worker = Worker(client)
        worker.start()
        # warm-up on both threads (not recorded)
        block(client, a.warmup, [])
        worker.run_block(a.warmup)
        worker.lat, worker.cpu = [], 0
        main_lat, main_cpu = [], 0
        for _ in range(a.blocks):
            for who in ((("main", "worker") if a.first == "main" else ("worker", "main"))):
                if who == "main":
                    main_cpu += block(client, a.calls, main_lat)
                else:
                    worker.run_block(a.calls)
        worker.quit = True
        worker.go.release()
        worker.join()
    finally:
        client.close()

    n = a.blocks * a.calls
    if len(main_lat) != n or len(worker.lat) != n:
        die("lost calls: %d and %d of %d" % (len(main_lat), len(worker.lat), n))
    out = {
        "mode": "py",
        "first": a.first,
        "calls": n,
        "blocks": a.blocks,
        "main_p50_us": round(pct(main_lat, 50) / 1e3, 2),
        "main_p99_us": round(pct(main_lat, 99) / 1e3, 2),
        "worker_p50_us": round(pct(worker.lat, 50) / 1e3, 2),
        "worker_p99_us": round(pct(worker.lat, 99) / 1e3, 2),
        "main_cpu_us_per_call": round(main_cpu / 1e3 / n, 2),
        "worker_cpu_us_per_call": round(worker.cpu / 1e3 / n, 2),
        "python": platform.python_version(),
    }
    print(json.dumps(out, separators=(",", ":")))


if __name__ == "__main__":
    main()
