"""A HetComm that gives every call to MPI (natively on one host) has mpi4py's collectives
as a plain communicator has them (mpi_programs/plain_methods.py, 2 ranks): each is the
C-level ``MPI.Intracomm`` method, its class's attribute, and its class has no
``__getattr__``.  Before, they were bound methods of a plain communicator stored on the
instance, and ``ScheduleComm`` defined ``__getattr__`` for every wrapper: a call of one
cost the look-up of an attribute through the hook, then the call of a bound method object
(``benchmarks/mpi/bench_plain_methods.py`` prints the cost).  The data are mpi4py's;
a user's subclass's own attributes are still served, and a call that names its plan
still plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "plain_methods.py"
N = 2


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict[int, dict]:
    out = tmp_path_factory.mktemp("plain_methods") / "out"
    proc = run_mpi(N, [PROGRAM, out], module=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r: json.loads(Path(f"{out}.{r}").read_text())["checks"] for r in range(N)}


PLAIN = {"wrong": {}, "getattr hook": False, "name": "HetComm", "isinstance": True}


@pytest.mark.mpi
@pytest.mark.parametrize("wrapper", ["default", "split", "tuned"])
def test_every_collective_is_the_c_level_method_of_the_class(ranks, wrapper):
    for r, c in ranks.items():
        assert c[wrapper] == PLAIN, (r, c[wrapper])
        assert c[f"{wrapper} data"], r


@pytest.mark.mpi
def test_the_tuned_wrappers_forcing_methods_are_its_classs_one_step_methods(ranks):
    for r, c in ranks.items():
        assert c["tuned forced"] in ([True, True], [False, True]), r


@pytest.mark.mpi
def test_a_users_subclass_keeps_its_attributes_and_gets_the_plain_methods(ranks):
    for r, c in ranks.items():
        got = dict(c["user"])
        assert got.pop("getattr hook") is True, r  # serves the subclass's own attributes
        assert got == {k: v for k, v in PLAIN.items() if k != "getattr hook"}, r
        assert c["user greeting"] and c["user data"], r


@pytest.mark.mpi
def test_a_call_that_names_its_plan_still_plans(ranks):
    for r, c in ranks.items():
        assert c["named"] == [True, "binomial"], r
