"""Which answers the transport retries: a 408 (the server gave up waiting for the body, e.g. a slow
link) and 429/5xx are retried, as the same request again; any other 4xx is the caller's error."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from turnlens.transport import ApiError, Transport


def serve(statuses):
    """A server answering the given statuses in turn (the last one for ever); returns (url, calls, stop)."""
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            status = statuses[min(len(calls), len(statuses) - 1)]
            calls.append(status)
            body = json.dumps({"ok": True} if status < 400 else {"error": f"status {status}"}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}", calls, srv.shutdown


@pytest.mark.parametrize("first", [408, 429, 503])
def test_a_timed_out_or_busy_answer_is_retried(first):
    url, calls, stop = serve([first, 200])
    try:
        status, payload = Transport(url).request("POST", "/api/v1/x", {"a": 1}, base_delay=0.01)
        assert (status, payload, calls) == (200, {"ok": True}, [first, 200])
    finally:
        stop()


def test_a_client_error_is_not_retried():
    url, calls, stop = serve([400, 200])
    try:
        with pytest.raises(ApiError) as e:
            Transport(url).request("POST", "/api/v1/x", {"a": 1}, base_delay=0.01)
        assert e.value.status == 400 and calls == [400]
    finally:
        stop()
