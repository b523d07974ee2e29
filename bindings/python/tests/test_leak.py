"""No string is leaked: 10,000 calls (each returns a 4 KiB result and hands 4 KiB in) plus
10,000 pure-function calls and 2,000 error paths, while RSS stays flat.

Bound: RSS may grow by at most 8 MiB between the end of a 1,000-call warm-up and the end of
the run. Leaking only the 4 KiB result strings of the 10,000 calls would be 40 MiB (a leaked
elicitation_to_request output another 40 MiB), so the bound catches any per-call leak of an
out-string.
"""

import os

import toolnexus_c as tn
from tn_support import config

CALLS = 10_000
WARMUP = 1_000
BOUND = 8 * 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def test_rss_stays_flat_over_10000_calls():
    text = "x" * 4096
    params = '{"message":"%s"}' % text
    with tn.connect(config()) as c:
        def one(i):
            r = c.call("fx_echo", {"text": text})
            assert len(r.output) == 4096
            assert len(tn.elicitation_to_request(params)) > 4096
            if i % 5 == 0:
                try:
                    c.call("fx_nope_%d" % (i % 3), {})
                except tn.NotFound:
                    pass

        for i in range(WARMUP):
            one(i)
        before = rss()
        for i in range(CALLS):
            one(i)
        after = rss()
    growth = after - before
    print("RSS before %.1f MiB, after %.1f MiB, growth %.2f MiB (bound %.0f MiB) over %d calls"
          % (before / 2**20, after / 2**20, growth / 2**20, BOUND / 2**20, CALLS))
    assert growth < BOUND, "RSS grew by %.2f MiB over %d calls" % (growth / 2**20, CALLS)
