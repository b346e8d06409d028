"""``benchmarks/mpi/bench_plain_methods.py``: its table on synthetic timings, its arguments
checked before any launch, and one short job on 2 ranks (every variant's results right,
every figure there, the ``bound`` variant rebuilt as it says: a plain communicator's bound
methods on the instance and a class with a ``__getattr__``)."""

from __future__ import annotations

import doctest
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load("_bench_plain_methods", ROOT / "benchmarks" / "mpi" / "bench_plain_methods.py")


def test_the_doctests():
    assert doctest.testmod(bench).failed == 0


@pytest.mark.parametrize(
    "argv", [["--ranks", "5"], ["--rounds", "0"], ["--sizes", "0"], ["--sizes", "x"]]
)
def test_bad_arguments_stop_before_a_launch(argv):
    with pytest.raises(SystemExit):
        bench._args(argv)


@pytest.mark.mpi
def test_a_short_job_times_every_variant_with_right_results(tmp_path, capsys):
    out = tmp_path / "plain.json"
    argv = ["--ranks", "2", "--rounds", "2", "--calls", "5", "--sizes", "8,64", "--json"]
    assert bench.main([*argv, str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["ok"] and doc["variants"] == ["world", "hetcomm", "view", "bound"]
    for key in ("times", "alone"):
        for collective in ("allreduce", "allgather", "bcast"):
            per = doc[key][collective]
            assert all(len(per[v]) == 2 and all(len(r) == 2 for r in per[v]) for v in per)
    printed = capsys.readouterr().out
    assert "each rank alone on COMM_SELF" in printed and "bound" in printed


def test_the_bound_variant_is_the_python_layer_it_names():
    from mpi4py import MPI

    from hetcoll import HetComm
    from hetcoll.platform import Platform, nodes_from_costs

    ranks = _load(
        "_plain_methods_ranks", ROOT / "benchmarks" / "mpi" / "ranks" / "plain_methods.py"
    )
    one = Platform(nodes_from_costs([5e-6], 1e-9), name="one")
    with HetComm(MPI.COMM_SELF, one, timeout=60) as hc:
        ranks._bound(hc)
        assert hasattr(type(hc), "__getattr__") and "Allgather" in vars(hc)
        assert vars(hc)["Allgather"].__self__ is not hc  # a plain communicator's
