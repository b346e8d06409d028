"""Nothing of hetcoll outlives its communicator (runtime/lifecycle.py): a program that never
closes its wrappers prints exactly its own output, 1..8 ranks, also after a caught timeout
or with its own ``MPI.Finalize()``; hetcoll's exit handler runs before MPI is finalized.

Before the change, each wrapper left its notices' receive posted at ``MPI_Finalize`` and
MPICH's UCX module printed one ``UCX WARN object ... was not returned to mpool
ucp_requests`` line per wrapper and rank on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "lifecycle.py"
pytestmark = pytest.mark.mpi


def expected_total(n: int, mode: str) -> int:
    total = sum(4950 + r % n + 1 for r in range(3)) + 4950 + n  # three wrappers, one dropped
    total += 70  # the persistent and nonblocking broadcasts
    return total + (4950 + 1 if mode == "timeout" else 0)


@pytest.mark.parametrize(
    ("mode", "n"),
    [("plain", k) for k in range(1, 9)] + [("timeout", 2), ("timeout", 5), ("finalize", 5)],
)
def test_a_program_that_never_closes_its_wrappers_prints_only_its_own_line(mode, n, tmp_path):
    out = tmp_path / "seen"
    proc = run_mpi(n, [PROGRAM, mode, out], module=False, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == json.dumps({"ranks": n, "total": expected_total(n, mode)}) + "\n"
    assert proc.stderr == ""
    seen = [json.loads(Path(f"{out}.{r}").read_text()) for r in range(n)]
    for r, s in enumerate(seen):
        assert s["open after the collector"] == 0, s  # the dropped wrapper released itself
        if mode == "finalize":  # the program finalized MPI: the COMM_SELF callback released
            assert s["finalized at exit"] is True, s
        else:  # hetcoll's atexit handler ran while MPI was still up, and released them all
            assert s["finalized at exit"] is False, s
        assert s["open at exit"] == 0, s
        if mode == "timeout":
            assert s["caught"] == (1 if r != 0 and n > 1 else 0), s
            assert s["late message unexpected"] is True, s  # no receive of it still posted
