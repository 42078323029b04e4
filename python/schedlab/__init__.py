"""schedlab from Python: the 2001-2003 Linux schedulers (and their successors) on a
modelled multiprocessor.

    >>> import schedlab
    >>> r = schedlab.run(machine="piii700-1m", cpus=8, policy="linux-2.4",
    ...                  workload="chat:rooms=10,messages=50")
    >>> r["result"]["value"]          # the same numbers as `schedlab run --format json`
    >>> df = schedlab.sweep({"machine": "piii700-1m", "cpus": [2, 4, 8],
    ...                      "policy": ["linux-2.4", "o1-2.6"], "workload": "reflex:tasks=2"})

Errors carry the command line's message: `InputError` (a `ValueError`) when what was asked
is wrong and nothing ran, `RunError` (a `RuntimeError`) when a run started and failed.
"""
import json
import os
import tempfile

from . import _native
from ._native import InputError, RunError

__all__ = [
    "run",
    "sweep",
    "list_policies",
    "list_workloads",
    "list_machines",
    "list_tables",
    "InputError",
    "RunError",
]


def run(machine, policy, workload, cpus=None, seed=1):
    """Simulate one workload under one policy on one machine; the report as a dict
    (`schedlab run --format json`)."""
    return json.loads(_native.run(str(machine), str(policy), str(workload), cpus, int(seed)))


def sweep(spec, out=None, jobs=None):
    """Run the product of a spec's lists and return one DataFrame row per cell.

    `spec` is a dict with the keys of a sweep file (machine, cpus, policy, workload, each
    a value or a list; seeds or seed), TOML text, or the path of a TOML file. With `out`,
    results are kept in that directory (as `schedlab sweep --out`): cells already there are
    not run again. Columns: as `schedlab sweep --merge` writes them to results.csv.
    """
    import pandas as pd

    if isinstance(spec, dict):
        text, is_json = json.dumps(spec), True
    elif isinstance(spec, (str, os.PathLike)) and os.path.isfile(spec):
        with open(spec) as f:
            text, is_json = f.read(), False
    elif isinstance(spec, str):
        text, is_json = spec, False
    else:
        raise InputError(
            f"spec: a dict, TOML text or the path of a TOML file, not {type(spec).__name__}"
        )
    if out is None:
        with tempfile.TemporaryDirectory(prefix="schedlab-sweep-") as d:
            rows = _native.sweep(text, is_json, d, jobs)
    else:
        rows = _native.sweep(text, is_json, os.fspath(out), jobs)
    return pd.DataFrame(json.loads(rows))


def list_policies():
    """Every policy: name, one line about it, and its options (default, accepted values,
    unit, help, source of the default)."""
    return json.loads(_native.list("policies"))


def list_workloads():
    """Every workload: name, about, the metric it reports, and its options."""
    return json.loads(_native.list("workloads"))


def list_machines():
    """Every machine preset: name, description, CPUs."""
    return json.loads(_native.list("machines"))


def list_tables():
    """The published tables and our own: id, title, source, number of cells."""
    return json.loads(_native.list("tables"))
