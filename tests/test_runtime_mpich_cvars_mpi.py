"""MPICH's allreduce and allgather algorithms forced per call through their control
variables (hetcoll.runtime.mpich_cvars), natively: every algorithm written and read back,
the write in effect at the call and undone after it, a HetComm given a tuning file whose
rules name them forcing them per size (results bit-identical to mpi4py's, floats the same
on every rank, nothing printed for a name MPICH does not know; mpi_programs/mpich_cvars.py,
4 ranks), the names' values checked against MPICH reading them from the environment, and
``hetcoll tune --mpich-algorithms`` measuring them and writing their rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _mpi import run_checks
from hetcoll.errors import HetcollError
from hetcoll.platform import Platform, nodes_from_costs, save_platform
from hetcoll.runtime.launch import run_mpi
from hetcoll.tuning import load_tuning

PROGRAM = Path(__file__).with_name("mpi_programs") / "mpich_cvars.py"
N = 4
pytestmark = pytest.mark.mpi


def test_forced_per_call_and_by_a_tuning_file():
    proc = run_checks(PROGRAM, N, timeout=300, env={"MPIR_CVAR_COLLECTIVE_FALLBACK": "error"})
    assert proc.stderr == ""  # a name MPICH lacks falls back to its selection silently


_READ = """
import json, sys
from hetcoll.runtime.mpich_cvars import algorithms
found = algorithms()
print(json.dumps([found.current(c)[0] for c in ("allreduce", "allgather")]))
"""


def test_each_name_is_the_value_mpich_gives_it_from_the_environment():
    """The values written are the names' positions in the variables' descriptions: MPICH,
    given each name in the environment, reads back that name."""
    from mpi4py import MPI  # noqa: F401  (the names: this process's MPICH)

    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    reduce, gather = found.names("allreduce"), found.names("allgather")
    for k in range(max(len(reduce), len(gather))):
        want = [reduce[k % len(reduce)], gather[k % len(gather)]]
        env = {
            "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": want[0],
            "MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM": want[1],
        }
        proc = subprocess.run(
            [sys.executable, "-c", _READ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert json.loads(proc.stdout) == want


@pytest.mark.parametrize(
    ("rule", "collective", "says"),
    [
        ({"from_bytes": 0, "algorithm": "fnf", "mpich": "ring"}, "allreduce", "only on an 'mpi'"),
        ({"from_bytes": 0, "algorithm": "mpi", "mpich": "ring"}, "bcast", "only on an 'mpi'"),
        ({"from_bytes": 0, "algorithm": "mpi", "mpich": "Ring!"}, "allgather", "algorithm's name"),
        ({"from_bytes": 0, "algorithm": "mpi", "mpich": 3}, "allreduce", "algorithm's name"),
    ],
)
def test_a_tuning_rule_names_mpich_algorithms_of_mpi_allreduce_allgather_only(
    rule, collective, says
):
    doc = {"format": "hetcoll-tuning", "version": 1, "ranks": 2, "rules": {collective: [rule]}}
    with pytest.raises(HetcollError, match=says):
        load_tuning(doc)


def test_tune_measures_the_mpich_algorithms_and_writes_the_winners_rules(tmp_path):
    platform, out = tmp_path / "flat.json", tmp_path / "tuning.json"
    save_platform(Platform(nodes_from_costs([5e-6] * N, 1e-9), name="flat"), platform)
    args = ["hetcoll", "tune", "--platform", platform, "--collectives", "allreduce,allgather"]
    args += ["--sizes", "512", "--rounds", "2", "--candidates", "0", "--mpich-algorithms"]
    proc = run_mpi(N, [*args, "-o", out, "--json"], timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from hetcoll.runtime.mpich_cvars import algorithms

    tuning = load_tuning(out)
    for row in tuning.measurements:
        plans = row["plans"]
        assert [p.get("mpich") for p in plans] == [None, *algorithms().names(row["collective"])]
        rule = tuning.lookup(row["collective"], row["nbytes"])
        assert (rule.algorithm, rule.mpich) == ("mpi", row["winner"].get("mpich"))
    assert json.loads(proc.stdout)["rules"].keys() == {"allreduce", "allgather"}


def test_a_failed_write_leaves_the_call_to_mpichs_own_selection(capfd):
    """A write MPI refuses: the call still runs (MPICH's own selection, the variables
    put back), its result right, nothing printed."""
    import copy

    import numpy as np
    from mpi4py import MPI

    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    start = found.current("allreduce")
    broken = copy.copy(found)
    broken.direct = False  # writes through MPI_T (a store into memory cannot fail)
    tried = []
    broken._write = lambda handle, ref: tried.append(handle) or 1  # MPI_T's error code
    forced = broken.forcing("allreduce", "ring", MPI.COMM_SELF.Allreduce)
    send, recv = np.arange(5, dtype=np.int64), np.zeros(5, dtype=np.int64)
    forced(send, recv)
    assert recv.tolist() == send.tolist() and found.current("allreduce") == start
    assert len(tried) == 3  # the refused write, then both variables put back
    assert capfd.readouterr() == ("", "")


def test_a_forced_call_writes_only_the_variables_that_change():
    """Through MPI_T (``direct`` off): the allgather's shared-memory variable starts at
    mpir, so forcing its algorithm writes one variable and puts it back (2 writes); the
    allreduce's starts at auto (4 writes)."""
    import copy

    import numpy as np
    from mpi4py import MPI

    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    assert found.current("allgather")[1] == "mpir" and found.current("allreduce")[1] == "auto"
    counting = copy.copy(found)
    counting.direct = False
    writes = []
    counting._write = lambda handle, ref: writes.append(handle) or found._write(handle, ref)
    buf, out = np.arange(4, dtype=np.int64), np.zeros(4, dtype=np.int64)
    counting.forcing("allgather", "ring", MPI.COMM_SELF.Allgather)(buf, out)
    assert len(writes) == 2 and out.tolist() == buf.tolist()
    counting.forcing("allreduce", "ring", MPI.COMM_SELF.Allreduce)(buf, out)
    assert len(writes) == 6 and out.tolist() == buf.tolist()


@pytest.mark.parametrize("collective", ["allreduce", "allgather"])
def test_a_forced_call_stores_into_the_variables_memory_not_through_mpi_t(collective):
    """Where the variables' memory is found (this MPICH), forcing makes no MPI_T write: the
    values MPI_T reads during the call are the forced ones, the start ones after it, for
    every algorithm."""
    import copy

    from mpi4py import MPI  # noqa: F401  (the process's MPICH)

    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    assert found.direct
    counting = copy.copy(found)
    writes = []
    counting._write = lambda handle, ref: writes.append(handle) or found._write(handle, ref)
    start = found.current(collective)
    seen = []
    for name in found.names(collective):
        forced = counting.forcing(
            collective, name, lambda *a: seen.append(found.current(collective))
        )
        forced(1, 2)
        assert seen.pop() == (name, "mpir") and found.current(collective) == start
    assert writes == []


def test_the_variables_memory_is_only_searched_in_writable_memory():
    """No writable mapping to find the address in: every write goes through MPI_T."""
    from mpi4py import MPI  # noqa: F401

    from hetcoll.runtime import mpich_cvars

    var = mpich_cvars.algorithms()._vars["allreduce"][0]
    assert mpich_cvars._cell(var, []) is None
    cell = mpich_cvars._cell(var, mpich_cvars._writable())
    assert cell is not None and cell.value == var.read() == var.start


@pytest.mark.parametrize(("again", "kept"), [(0.5, True), (2.0, False)])
def test_tunes_winner_is_confirmed_in_fresh_rounds_against_mpi_alone(monkeypatch, again, kept):
    """The winner of the paired rounds runs as many again against MPI's own alone and stays
    the winner only if it wins those too (a lucky pick among seven is not kept)."""
    from types import SimpleNamespace

    from mpi4py import MPI

    from hetcoll.jobs import tune

    plans = [{"algorithm": "mpi", "segment_size": None}]
    plans += [{"algorithm": "mpi", "segment_size": None, "mpich": n} for n in ("ring", "tree")]
    seen = []

    def timed(comm, one, plan, calls):  # ring wins the rounds, then (again) its confirmation
        seen.append(plan.get("mpich"))
        per = {None: 1.0, "tree": 1.5, "ring": 0.5 if len(seen) <= 1 + 3 * 3 else again}
        return per[plan.get("mpich")] * calls

    monkeypatch.setattr(tune, "_timed", timed)
    monkeypatch.setattr(tune, "_call", lambda hc, collective, nbytes: lambda algo, seg: None)
    forced = {"ring": lambda: None, "tree": lambda: None}
    monkeypatch.setattr(tune, "_forced_calls", lambda collective, plans, call: forced)
    row = tune.measure_calls(SimpleNamespace(base=MPI.COMM_SELF), "allreduce", 8, plans, 3, 0.01)
    assert seen[10:] == [None, "ring", "ring", None, None, "ring"]  # paired, order alternated
    assert row["confirmed"] == [2.0 if kept else 0.5] * 3
    assert row["winner"] == ({**plans[1]} if kept else plans[0])
