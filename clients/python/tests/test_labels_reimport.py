"""A label survives a re-import: a chat JSONL imported, a trajectory and a turn of it labelled, the
same file imported again (the run found, nothing stored twice) and the labels still on the same
trajectories, found by run.trajectories(label=...) and run.labels()."""

import json
import urllib.request

import turnlens
from turnlens.importers import run_import


def _post(url, path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def test_labels_survive_a_reimport(server, tmp_path):
    f = tmp_path / "rollouts.jsonl"
    lines = [{"messages": [{"role": "user", "content": f"level {k}"}, {"role": "assistant", "content": a},
                           {"role": "user", "content": "board"}, {"role": "assistant", "content": "up"}],
              "reward": r, "step": s, "group": f"level-{k}"}
             for s in (0, 1) for k, (a, r) in enumerate([("left", 1.0), ("down", 0.0)])]
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    [rep] = run_import("chat", str(f), project="labels-reimport", url=server.url)
    run = turnlens.Api(server.url).run(rep.run_id)
    trajs = run.trajectories(pandas=False)
    assert len(trajs) == 4
    first, second = trajs[0], trajs[3]
    loops = _post(server.url, "/api/v1/labels", {"project": "labels-reimport", "name": "loops"})
    _post(server.url, f"/api/v1/trajectories/{first['id']}/labels", {"labelId": loops["id"], "note": "same move twice"})
    _post(server.url, f"/api/v1/trajectories/{second['id']}/labels", {"labelId": loops["id"], "turn": 1})
    before = run.labels(pandas=False)

    [again] = run_import("chat", str(f), project="labels-reimport", url=server.url)
    assert again.run_id == rep.run_id and again.imported == 0 and again.already > 0
    assert [t["id"] for t in run.trajectories(label="loops", pandas=False)] == [first["id"], second["id"]]
    assert run.labels(pandas=False) == before
    assert [(r["step"], r["task"], r["index"], r["turn"], r["note"]) for r in before] == [
        (first["step"], first["uid"], first["index"], None, "same move twice"), (second["step"], second["uid"], second["index"], 1, "")]
