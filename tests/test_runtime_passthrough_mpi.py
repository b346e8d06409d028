"""Calls a HetComm passes to MPI cost what they cost without hetcoll (mpi_programs/
passthrough.py, 4 ranks, natively on one host, where every call is MPI's own): on the
default HetComm (and the sub-communicator it splits) every collective *is* mpi4py's method,
its class's attribute, so a call enters no Python function at all (it entered one, the
wrapper's method, before); a call that names its plan goes through the class's method,
and a bound call leaves ``last_call`` as it was.  A wrapper made with ``algo="mpi"`` keeps
its methods (per-call ``algo=``): a repeated call there is one Python method call before
mpi4py's own, for the blocking and the nonblocking collectives (a nonblocking call parsed
its buffers and asked for its choice at every call before: 5-17 Python calls), and no
progress thread runs until a nonblocking call is planned.  What a passed call remembers
is keyed by its size, root and operator: under a tuning file that plans 64-byte calls and
passes 8-byte ones, alternating calls each run their own choice.  ``Reduce``, ``Gather``
and ``Scatter`` under ``auto`` too (they bound their arguments to a signature and parsed
their buffers at every call to ask for their choice: 53 Python calls for a repeated
``Reduce``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "passthrough.py"
N = 4


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict[int, dict]:
    out = tmp_path_factory.mktemp("passthrough") / "out"
    proc = run_mpi(N, [PROGRAM, out], module=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r: json.loads(Path(f"{out}.{r}").read_text())["checks"] for r in range(N)}


CALLS = (
    "Bcast", "Allreduce", "allreduce", "allgather", "Barrier", "Ibcast", "Iallreduce",
    "Iallgather", "Ibarrier", "Ireduce", "Igather", "Reduce", "Gather", "Scatter", "Alltoall",
    "sub Allreduce", "Allgather", "Allgather in place", "Reduce_scatter_block", "Reduce_scatter",
    "Allgatherv",
)  # fmt: skip


@pytest.mark.mpi
@pytest.mark.parametrize("name", CALLS)
def test_a_call_of_the_default_wrapper_is_mpi4pys_own(ranks, name):
    for r, c in ranks.items():
        got = c["default"][name]
        assert got["same"] and got["passed"], (r, got)
        assert got["frames"] == [], (r, got["frames"])


@pytest.mark.mpi
@pytest.mark.parametrize("name", CALLS)
def test_a_repeated_call_passed_to_mpi_is_one_method_call(ranks, name):
    for r, c in ranks.items():
        got = c["mpi"][name]
        assert got["same"] and got["passed"], (r, got)
        assert len(got["frames"]) == 1, (r, got["frames"])


@pytest.mark.mpi
def test_only_the_default_wrapper_binds_mpi4pys_methods(ranks):
    for r, c in ranks.items():
        assert c["bound"] == {"default": [True, True], "mpi": [False, False]}, r


@pytest.mark.mpi
def test_a_call_naming_its_plan_on_the_default_wrapper(ranks):
    for r, c in ranks.items():
        got = c["named call"]
        assert got["ok"], r
        assert got["after plan"] == ["Bcast", "binomial", 0], (r, got)
        assert got["after bound"] is True, r  # a bound call leaves last_call as it was
        assert got["keyword"] is True, r  # mpi4py's method takes no algo=: TypeError


@pytest.mark.mpi
def test_no_progress_thread_until_a_nonblocking_call_is_planned(ranks):
    for r, c in ranks.items():
        assert c["no thread"], r
        assert c["tuned"]["thread only once planned"], r


@pytest.mark.mpi
def test_what_a_passed_call_remembers_is_its_own_size(ranks):
    want = [["binomial", "blind", [False, False], True], ["mpi", "mpi", [True, True], True]] * 3
    for r, c in ranks.items():
        assert c["tuned"]["ran"] == want, (r, c["tuned"]["ran"])


@pytest.mark.mpi
@pytest.mark.parametrize("wrapper", ["mpi", "mpi sub", "fnf", "fnf sub", "tuned", "tuned sub"])
def test_a_repeated_call_on_one_rank_is_one_method_call(ranks, wrapper):
    """On one rank (COMM_SELF, and the one-rank communicator a wrapper of it splits) a
    wrapper that keeps its methods runs a repeated Allreduce as one Python call before
    mpi4py's, whatever its planner (it parsed its buffers at every call: 38 Python calls),
    and a repeated Bcast, which moves nothing, as that call alone (3 before), with mpi4py's
    bytes for every operator and IN_PLACE; Reduce too where ``rooted_algo`` is ``mpi``."""
    for r, c in ranks.items():
        got = c["one rank"][wrapper]
        assert len(got) == (38 if wrapper.startswith("mpi") else 30), r
        for name, (same, frames, passed) in got.items():
            assert same, (r, name)
            assert len(frames) == 1, (r, name, frames)
            assert passed, (r, name)


@pytest.mark.mpi
@pytest.mark.parametrize("name", ["Bcast", "Allreduce", "Allgather", "Barrier", "first Bcast"])
def test_a_remembered_call_after_a_planned_one_says_it_passed(ranks, name):
    """``last_call`` is None after a repeated call given to MPI, also when the call before
    it was one hetcoll planned (it kept naming that call)."""
    for r, c in ranks.items():
        assert c["after planned"][name] == [True, True], (r, c["after planned"][name])
