#!/usr/bin/env python3
"""A stand-in for a browser (the bindings' examples open login URLs with $BROWSER): GETs the
URL given as the only argument, following redirects, as a browser would when the person is
already signed in. Exits 0 when the last page answered 2xx."""
import sys
import urllib.request

opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with opener.open(sys.argv[1], timeout=10) as r:
    r.read()
    sys.exit(0 if 200 <= r.status < 300 else 1)
