"""A client that writes a request's whole body before it reads anything, as Python's http.client,
requests and the TurnLens Python client do: each request on its own connection, all at once.

    python3 test/e2e/write-first.py '{"port": 3100, "timeout": 25, "requests": [
        {"method": "POST", "path": "/api/v1/...", "headers": {...}, "size": 20971520}]}'

prints a JSON list, one entry per request in order: {"status", "connection", "body", "seconds"}
or {"error", "seconds"} (a timeout, a reset).
"""

import http.client
import json
import sys
import threading
import time

spec = json.loads(sys.argv[1])
bodies = {}
out = [None] * len(spec["requests"])


def body(size):
    if size not in bodies:
        bodies[size] = b"x" * size
    return bodies[size]


def one(i, r):
    t0 = time.monotonic()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", spec["port"], timeout=spec["timeout"])
        conn.request(r["method"], r["path"], body=body(r["size"]), headers=r["headers"])
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        out[i] = {
            "status": resp.status,
            "connection": resp.getheader("connection"),
            "body": text,
            "seconds": time.monotonic() - t0,
        }
        conn.close()
    except Exception as e:  # what went wrong is the answer
        out[i] = {"error": f"{type(e).__name__}: {e}", "seconds": time.monotonic() - t0}


for r in spec["requests"]:
    body(r["size"])  # built before the clock starts
threads = [threading.Thread(target=one, args=(i, r)) for i, r in enumerate(spec["requests"])]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(out))
