"""The Python package gives the command line's numbers and messages. Run with pytest after
`pip install ./python`; the CLI (`SCHEDLAB_BIN`, default `schedlab` on PATH or the
workspace's release build) is the reference where a test compares."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import schedlab

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli():
    for c in (
        os.environ.get("SCHEDLAB_BIN"),
        shutil.which("schedlab"),
        os.path.join(ROOT, "target", "release", "schedlab"),
        os.path.join(ROOT, "target", "debug", "schedlab"),
    ):
        if c and os.path.exists(c):
            return c
    pytest.skip("no schedlab binary to compare with (set SCHEDLAB_BIN)")


def test_run_returns_the_same_report_as_the_cli():
    args = dict(machine="piii700-1m", cpus=2, policy="o1-2.6", workload="lat_pipe:rounds=2000", seed=3)
    got = schedlab.run(**args)
    out = subprocess.run(
        [cli(), "run", "--machine", "piii700-1m", "--cpus", "2", "--policy", "o1-2.6",
         "--workload", "lat_pipe:rounds=2000", "--seed", "3", "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert got == json.loads(out)
    assert got["result"]["metric"] and got["result"]["value"] > 0
    assert got["seed"] == 3 and got["cpus"] == 2


def test_run_takes_a_sched_ext_scheduler_as_the_cli_does():
    got = schedlab.run(machine="piii700-1m", cpus=2, policy="scx:@vtime",
                       workload="hackbench:groups=1,loops=5", seed=1)
    out = subprocess.run(
        [cli(), "run", "--machine", "piii700-1m", "--cpus", "2", "--policy", "scx:@vtime",
         "--workload", "hackbench:groups=1,loops=5", "--seed", "1", "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert got == json.loads(out)
    assert got["policy"]["name"] == "scx" and got["policy"]["options"]["src"] == "@vtime"


def test_bad_input_raises_input_error_with_the_cli_message():
    with pytest.raises(schedlab.InputError) as e:
        schedlab.run(machine="piii700-1m", policy="nosuch", workload="reflex")
    out = subprocess.run(
        [cli(), "run", "--machine", "piii700-1m", "--policy", "nosuch", "--workload", "reflex"],
        capture_output=True, text=True,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == "schedlab: " + str(e.value)
    assert isinstance(e.value, ValueError)
    with pytest.raises(schedlab.InputError, match="cpus"):
        schedlab.run(machine="piii700-1m", cpus=64, policy="o1-2.6", workload="reflex")


SPEC = {
    "machine": "piii700-1m",
    "cpus": [2, 4],
    "policy": ["fifo", "o1-2.6"],
    "workload": "lat_pipe:rounds=2000",
    "seeds": [1, 2],
}


def test_sweep_returns_one_row_per_cell_with_the_runs_values(tmp_path):
    df = schedlab.sweep(SPEC, jobs=2)
    assert len(df) == 8
    assert list(df.columns[:10]) == [
        "id", "machine", "cpus", "policy", "workload", "seed", "metric", "value", "unit", "error"
    ]
    first = df.iloc[0]
    assert (first["policy"], first["cpus"], first["seed"]) == ("fifo", 2, 1)
    one = schedlab.run(machine="piii700-1m", cpus=2, policy="fifo", workload="lat_pipe:rounds=2000")
    assert first["value"] == one["result"]["value"]
    assert df["error"].isna().all()


def test_sweep_equals_the_cli_merge_and_resumes_from_its_directory(tmp_path):
    toml = tmp_path / "spec.toml"
    toml.write_text(
        'machine = "piii700-1m"\ncpus = [2, 4]\npolicy = ["fifo", "o1-2.6"]\n'
        'workload = "lat_pipe:rounds=2000"\nseeds = [1, 2]\n'
    )
    out = tmp_path / "out"
    df = schedlab.sweep(str(toml), out=out)
    subprocess.run([cli(), "sweep", str(toml), "--out", str(out), "--merge"], check=True,
                   capture_output=True)
    import pandas as pd
    csv = pd.read_csv(out / "results.csv")
    assert list(csv.columns) == list(df.columns)
    assert list(csv["id"]) == list(df["id"])
    assert (csv["value"] - df["value"]).abs().max() < 1e-9
    # The same directory again: nothing is re-run, the rows are the same.
    before = {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}
    again = schedlab.sweep(SPEC, out=out)
    assert {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()} == before
    assert list(again["value"]) == list(df["value"])


def test_bad_sweeps_raise_input_error_naming_the_problem():
    with pytest.raises(schedlab.InputError, match="unknown field `room`"):
        schedlab.sweep({"machine": "piii700-1m", "policy": "fifo", "workload": "reflex", "room": 1})
    with pytest.raises(schedlab.InputError, match="nosuch"):
        schedlab.sweep({"machine": "piii700-1m", "policy": ["fifo", "nosuch"], "workload": "reflex"})
    with pytest.raises(schedlab.InputError, match="spec line"):
        schedlab.sweep('machine = "piii700-1m"\npolicy = \n')
    with pytest.raises(schedlab.InputError):
        schedlab.sweep(42)


def test_the_lists_name_what_the_cli_accepts():
    policies = {p["name"]: p for p in schedlab.list_policies()}
    assert {"linux-2.4", "o1-d1", "o1-2.6", "mq", "hamq", "fifo"} <= set(policies)
    hz = [o for o in policies["o1-2.6"]["options"] if o["name"] == "hz"]
    assert hz and hz[0]["accepted"].startswith("an integer in")
    workloads = {w["name"]: w for w in schedlab.list_workloads()}
    assert {"reflex", "chat", "hackbench"} <= set(workloads)
    assert workloads["chat"]["metric"]
    machines = {m["name"]: m for m in schedlab.list_machines()}
    assert machines["piii700-1m"]["cpus"] == 8
    tables = {t["id"] for t in schedlab.list_tables()}
    assert "V2-chat-2002" in tables


def test_the_matplotlib_example_plots_a_sweep(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "chat.png"
    done = subprocess.run(
        [sys.executable,
         os.path.join(ROOT, "examples", "plot_sweep.py"), "--rooms", "1", "--messages", "5",
         "--cpus", "1", "2", "--results", str(tmp_path / "res"), "--out", str(png)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Three policies at two CPU counts.
    assert len(list((tmp_path / "res" / "cells").iterdir())) == 6
