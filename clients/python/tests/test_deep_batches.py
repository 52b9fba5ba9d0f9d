"""A deep queue (the loop logs faster than the server stores) goes in bigger metric batches: order
kept, none larger than DEEP_BATCH_FACTOR x batch_values, and a batch whose answer was lost is
resent under its id and stored once."""

import json
import random

import turnlens
import turnlens.run as run_module
from turnlens import shapes
from turnlens.transport import Transport

from test_client import DropFirstAnswers


def values_in(body) -> int:
    return sum(1 for col in body["values"].values() for v in col if v is not None)


def test_records_cut_a_long_run_of_points_into_near_equal_batches_in_order():
    run = turnlens.init(project="p", mode="offline", batch_values=1000)
    try:
        rng = random.Random(7)
        for _ in range(100):
            items, step = [], 0
            for _ in range(rng.randint(1, 4000)):
                if rng.random() < 0.005:
                    items.append(("s", {"step": step}))
                items.append(("m", shapes.metric_point({f"k{i}": 1.0 for i in range(rng.randint(1, 9))}, step)))
                step += 1
            records = run._records(items)
            # the same calls in the same order: metric points by step, steps where they were logged
            got = []
            for r in records:
                got += [("s", r["body"]["step"])] if r["kind"] == "steps" else [("m", s) for s in r["body"]["steps"]]
            assert got == [(k, b["step"]) for k, b in items]
            sizes = [values_in(r["body"]) for r in records if r["kind"] == "metrics"]
            assert max(sizes) <= run_module.DEEP_BATCH_FACTOR * 1000
            # a run of points that fits one batch is one batch
            runs, n = [], 0
            for k, b in items + [("s", None)]:
                if k == "m":
                    n += len(b["values"])
                elif n:
                    runs.append(n)
                    n = 0
            assert len(sizes) >= len(runs) and (len(sizes) > len(runs) or all(r <= 5000 for r in runs))
            assert sum(sizes) == sum(runs)
    finally:
        run.finish()


def test_a_deep_queue_goes_in_bigger_batches_each_stored_once(server, monkeypatch):
    sizes = []
    real = Transport.request

    def spy(self, method, path, body=None, *a, **k):
        if path.endswith("/metrics"):
            sizes.append(values_in(json.loads(body) if isinstance(body, bytes) else body))
        return real(self, method, path, body, *a, **k)

    monkeypatch.setattr(Transport, "request", spy)
    # the first two metric batches are stored but their answers lost: the client waits and resends
    # them while the loop keeps logging, so the queue is deep when it sends the rest
    proxy = DropFirstAnswers(server.port, b"/metrics", drop=2)
    run = turnlens.init(project="client-tests", name="deep-queue", url=proxy.url, batch_values=1000)
    for step in range(20_000):
        run.log({"a": float(step), "b": -float(step)}, step=step)
    run.log({"a": -1.0}, step=19_999)  # a later call at a step wins
    run.finish()
    assert proxy.left == 0 and run.rejected == []
    assert run.sent["retried_batches"] >= 1, run.sent
    assert max(sizes) > 1000, sizes
    assert max(sizes) <= run_module.DEEP_BATCH_FACTOR * 1000
    got = server.metrics(run.id)
    assert sorted(got["a"]) == sorted(got["b"]) == list(range(20_000))
    assert all(got["b"][s] == -s for s in range(20_000)) and got["a"][19_999] == -1.0
    assert all(got["a"][s] == s for s in range(19_999))
    # stored once: each key's count is its points, not a resent batch's twice
    counts = {k["key"]: k["count"] for k in server.get(f"/api/v1/runs/{run.id}/metrics")["keys"]}
    assert counts == {"a": 20_000, "b": 20_000}
