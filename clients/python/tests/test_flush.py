"""Run.flush(): it returns once every earlier call is stored (readable at once, no polling), or
refused and kept, and gives up at its timeout when the server cannot be reached, never raising."""

import socket
import time

import turnlens
from test_client import metric_values, rollout_groups


def test_flush_returns_once_every_earlier_call_is_stored(server):
    run = turnlens.init(project="client-tests", name="flush", url=server.url)
    for step in range(20):
        run.log(metric_values(step), step=step)
        run.log_rollouts(step, rollout_groups(step))
        assert run.flush(timeout=60)
        # readable the moment flush returns: the server answers a step once it is committed
        assert server.get(f"/api/v1/runs/{run.id}/steps?pageSize=1")["total"] == step + 1
    assert run.flush()  # nothing waiting: at once
    run.finish()
    assert run.rejected == []


def test_a_refused_call_counts_as_handled(server):
    run = turnlens.init(project="client-tests", name="flush-refused", url=server.url)
    run.log_rollouts(0, rollout_groups(0))
    run.log_rollouts(0, rollout_groups(1))  # step 0 again with other content: 409, kept in the spool
    assert run.flush(timeout=60)
    assert len(run.rejected) == 1 and run.pending_in_spool() == 1
    run.finish(timeout=5)


def test_flush_gives_up_at_its_timeout_when_the_server_cannot_be_reached():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = turnlens.init(project="client-tests", name="unreachable", url=f"http://127.0.0.1:{port}", init_timeout=0.2)
    run.log_rollouts(0, rollout_groups(0))
    t0 = time.monotonic()
    assert run.flush(timeout=0.5) is False
    assert time.monotonic() - t0 < 5
    run.finish(timeout=0.5)
    assert run.pending_in_spool() >= 1
