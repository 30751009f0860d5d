"""``benchmarks/results/gpu-tests.json`` records a run of the gpu tests on a GPU: the commit that ran
is in this checkout's history and nothing failed (GPU code reaches main only after such a run)."""
import json
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
RECORD = ROOT / "benchmarks" / "results" / "gpu-tests.json"
FIELDS = {"git_sha", "date", "device", "driver", "cupy", "passed", "failed", "skipped", "seconds"}


def record():
    return json.loads(RECORD.read_text())


def test_record_names_a_passing_run_on_an_h200():
    run = record()
    assert FIELDS <= set(run), sorted(FIELDS - set(run))
    assert run["failed"] == 0 and run["passed"] > 700, run
    assert "H200" in run["device"]


def test_record_names_a_commit_in_this_history():
    run = record()
    assert len(run["git_sha"]) == 40 and int(run["git_sha"], 16) >= 0
    inside = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-inside-work-tree"], capture_output=True)
    if inside.returncode != 0:
        pytest.skip("not a git checkout (an installed copy): the history cannot be read")
    shallow = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True).stdout.strip() == "true"
    ancestor = subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", run["git_sha"], "HEAD"],
                              capture_output=True)
    if ancestor.returncode != 0 and shallow:
        pytest.skip("a shallow clone: the recorded commit may lie beyond its history")
    assert ancestor.returncode == 0, f"{run['git_sha']} is not an ancestor of HEAD"
