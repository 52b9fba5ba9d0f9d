"""Steps queued together go as one POST /steps/batch: stored complete and in order against a real
server, refusals sorted out step by step, and single steps for a server without the route."""

import json
import threading
from http.server import ThreadingHTTPServer

import turnlens
from turnlens.transport import Transport

from test_columns import OldServer


def groups(step, reward=1.0):
    return {"g": [[{"observation": f"o{step}", "action": "a", "reward": reward}, {"observation": f"p{step}", "action": "b", "reward": 0.0}]]}


def test_queued_steps_go_in_batches_in_order_and_a_clash_is_named_per_step(server, monkeypatch):
    paths = []
    real = Transport.request
    monkeypatch.setattr(Transport, "request", lambda self, method, path, *a, **k: paths.append(path) or real(self, method, path, *a, **k))
    run = turnlens.init(project="client-tests", name="step-batches", url=server.url)
    # step 5 is already stored with other content: its batch is refused, then sent step by step
    tr = Transport(server.url)
    body = {"step": 5, "groups": [{"uid": "g", "envId": "external", "trajectories": [{"turns": [{"observation": "other", "action": "a", "reward": 0.5}]}]}]}
    tr.request("POST", f"/api/v1/runs/{run.id}/steps", body, write_key=run.write_key)
    for s in range(30):
        run.log_rollouts(s, groups(s))
    run.finish()
    assert any(p.endswith("/steps/batch") for p in paths), "30 steps queued at once should go in batches"
    assert len(run.rejected) == 1 and "409" in run.rejected[0] and "step 5 " in run.rejected[0]
    assert run.sent["turns"] == 29 * 2
    turns = server.get(f"/api/v1/runs/{run.id}/turns?limit=1000")["turns"]
    assert [t["observation"] for t in turns] == ["other"] + [x for s in range(30) if s != 5 for x in (f"o{s}", f"p{s}")]


class NoBatchServer(OldServer):
    """Answers like a server that predates POST /steps/batch (404); keeps the single steps it stores."""

    steps: list = []

    def do_POST(self):
        if self.path.endswith("/steps/batch"):
            self.rfile.read(int(self.headers["content-length"]))
            return self._json(404, {"error": "not found"})
        if self.path.endswith("/steps"):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            NoBatchServer.steps.append(body)
            return self._json(201, {"stepId": f"s{body['step']}", "turns": 2})
        return super().do_POST()


def test_a_server_without_step_batches_gets_single_steps():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), NoBatchServer)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        run = turnlens.init(project="p", url=f"http://127.0.0.1:{srv.server_address[1]}")
        for s in range(40):
            run.log_rollouts(s, groups(s))
        run.finish()
        assert run.rejected == [] and run.sent["turns"] == 80
        assert [b["step"] for b in NoBatchServer.steps] == list(range(40))  # complete, in order, once
        assert all(b["batchId"] for b in NoBatchServer.steps)
        assert run._step_batches is False
    finally:
        srv.shutdown()


class OrderServer(OldServer):
    """Refuses a steps/batch out of order or repeated as the server does (400); keeps what it stores."""

    stored: list = []
    batches: list = []

    def do_POST(self):
        if self.path.endswith("/steps/batch") or self.path.endswith("/steps"):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            steps = body["steps"] if self.path.endswith("/batch") else [body]
            if self.path.endswith("/batch"):
                OrderServer.batches.append([s["step"] for s in steps])
                for i in range(1, len(steps)):
                    if steps[i]["step"] <= steps[i - 1]["step"]:
                        return self._json(400, {"error": "out of order", "issues": [{"path": f"body.steps.{i}.step", "message": "out of order"}]})
            OrderServer.stored.extend(s["step"] for s in steps)
            answers = [{"stepId": f"s{s['step']}", "turns": 2} for s in steps]
            return self._json(201, {"steps": answers} if self.path.endswith("/batch") else answers[0])
        return super().do_POST()


def test_a_batch_never_carries_steps_out_of_order_or_repeated():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), OrderServer)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        run = turnlens.init(project="p", url=f"http://127.0.0.1:{srv.server_address[1]}")
        records = [{"kind": "steps", "batchId": f"b{k}", "body": {"step": s, "groups": []}} for k, s in enumerate([0, 1, 2, 2, 5, 3, 4, 10])]
        assert [[r["body"]["step"] for r in recs] for _, recs in run._units(records)] == [[0, 1, 2], [2, 5], [3, 4, 10]]
        logged = [0, 1, 2, 2, 5, 3, 4, 10, 11, 11, 7] * 3
        for s in logged:
            run.log_rollouts(s, groups(s))
        run.finish()
        assert run.rejected == []
        assert all(b == sorted(set(b)) for b in OrderServer.batches), OrderServer.batches
        assert OrderServer.stored == logged  # every call arrives, in the order logged
    finally:
        srv.shutdown()
