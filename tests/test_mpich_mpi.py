"""MPI's own algorithms as programs (mpi_programs/native.py), 3, 6 and 8 ranks: every
MPICH algorithm's program delivers MPI's own result, natively and under emulation; the
default HetComm (``auto``) gives mpi4py's results whether it passes a call to MPI or runs
a plan, and under emulation runs MPICH's algorithm where MPI keeps the call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "native.py"
pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module", params=[3, 6, 8], ids=lambda n: f"{n}ranks")
def records(request, tmp_path_factory) -> tuple[int, dict[str, dict]]:
    n = request.param
    out = tmp_path_factory.mktemp("native") / f"native{n}.jsonl"
    proc = run_mpi(n, [PROGRAM, out], module=False, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return n, {r["case"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_every_case_equals_mpi(records):
    _, by_case = records
    failed = [r for r in by_case.values() if not r["ok"]]
    assert not failed, failed[:5]


def test_every_algorithm_ran(records):
    n, by_case = records
    for tag in ("native", "emulated"):
        for algo in ("binomial", "scatter_ring_allgather"):
            assert any(c.startswith(f"{tag} bcast {algo} ") for c in by_case)
        assert (n & (n - 1) == 0) == any(
            c.startswith(f"{tag} bcast scatter_recursive_doubling_allgather") for c in by_case
        )
        for algo in ("recursive_doubling", "reduce_scatter_allgather", "ring"):
            assert any(c.startswith(f"{tag} allreduce {algo} ") for c in by_case)
        assert f"{tag} barrier dissemination" in by_case


def test_mpi_wrapper_passes_every_call(records):
    _, by_case = records
    for tag in ("mpi-native", "mpi-emulated"):
        chosen = {
            r["choice"]
            for c, r in by_case.items()
            if c.startswith(tag) and "choice" in r and isinstance(r["choice"], str)
        }
        assert chosen == {"mpi"}, (tag, chosen)


def test_auto_natively_on_one_host_is_mpi_and_emulated_follows_the_model(records):
    """Every rank on this host, not emulated: MPI's own for every call (no model applies);
    under emulation of the same platform the model's choice, a plan for some calls."""
    _, by_case = records
    native = {
        c: r["choice"] for c, r in by_case.items() if c.startswith("auto-native ") and "choice" in r
    }
    emulated = {
        c: r["choice"]
        for c, r in by_case.items()
        if c.startswith("auto-emulated ") and "choice" in r
    }
    assert native and {v for v in native.values() if isinstance(v, str)} == {"mpi"}
    assert native["auto-native choice"]["source"] == "one host"
    assert emulated["auto-emulated choice"]["source"] == "model"
    assert any(v != "mpi" for v in emulated.values() if isinstance(v, str))


def test_tuning_file_rules_run(records):
    _, by_case = records
    for tag in ("tuned-native", "tuned-emulated"):
        assert by_case[f"{tag} Bcast n=10"]["choice"] == "mpi"
        assert by_case[f"{tag} Bcast n=50000"]["choice"] == "chain"
        assert by_case[f"{tag} barrier"]["choice"] == "blind"
    assert by_case["tuning for another size is refused"]["ok"]
