"""``python -m hetcoll.launch``: an unchanged mpi4py program runs with ``MPI.COMM_WORLD`` a
HetComm (mpi_programs/launched.py, 4 ranks, under the environment's ``mpiexec``); an
exception on one rank ends the job; a bad platform is one line and exit code 2; ``-c``
and ``-m`` programs work as with ``python -m mpi4py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hetcoll.platform import Platform, nodes_from_costs, save_platform
from hetcoll.runtime.launch import mpiexec

SCRIPT = Path(__file__).with_name("mpi_programs") / "launched.py"
N = 4
pytestmark = pytest.mark.mpi


def launch(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    platform = tmp_path / "p.json"
    save_platform(Platform(nodes_from_costs([1e-6 * (1 + r) for r in range(N)])), platform)
    cmd = [str(mpiexec()), "-n", str(N), sys.executable, "-m", "hetcoll.launch"]
    cmd += [a.replace("P.json", str(platform)) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_an_unchanged_program_gets_a_hetcomm_as_comm_world(tmp_path):
    out = tmp_path / "out"
    proc = launch(
        tmp_path, "--platform", "P.json", "--algo", "binomial", str(SCRIPT), str(out), "ok"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "" and proc.stderr == ""  # hetcoll prints nothing
    for r in range(N):
        got = json.loads(Path(f"{out}.{r}").read_text())
        assert got == {
            "type": "HetComm",
            "intracomm": True,
            "argv": [str(out), "ok"],
            "Bcast": True,
            "algorithm": "binomial",
            "Allreduce": True,
            "bcast": True,
            "gather": True,
            "Split": "HetComm",
            "sub Bcast": True,
        }, (r, got)


def test_a_command_and_its_arguments_after_the_launchers_options(tmp_path):
    """``-c`` (and ``-m``) start the program, as for ``python -m mpi4py``."""
    out = tmp_path / "c"
    code = (
        "from mpi4py import MPI; import json, sys; c = MPI.COMM_WORLD; "
        "json.dump([type(c).__name__, c.algo, sys.argv[1:]], open(f'{sys.argv[1]}.{c.rank}', 'w'))"
    )
    proc = launch(tmp_path, "--platform", "P.json", "--algo", "chain", "-c", code, str(out), "-m")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in range(N):
        got = json.loads(Path(f"{out}.{r}").read_text())
        assert got == ["HetComm", "chain", [str(out), "-m"]], (r, got)


def test_an_exception_on_one_rank_ends_the_job(tmp_path):
    proc = launch(tmp_path, "--platform", "P.json", str(SCRIPT), str(tmp_path / "o"), "raise")
    assert proc.returncode != 0
    assert "rank 1 fails" in proc.stderr


def test_a_platform_that_cannot_be_read_is_one_line_and_exit_2(tmp_path):
    proc = launch(tmp_path, "--platform", str(tmp_path / "none.json"), str(SCRIPT), "x", "ok")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hetcoll: error: "), proc.stderr


def test_the_launchers_tuning_option_reaches_the_wrapper():
    from hetcoll.launch import _parser, _settings, _split

    options, program = _split(["--platform", "p.json", "--tuning", "t.json", "x.py", "--tuning"])
    assert program == ["x.py", "--tuning"]  # the program's own options stay its own
    assert _settings(_parser().parse_args(options)) == {"tuning": "t.json"}


def test_a_bad_tuning_file_is_one_line_and_exit_2(tmp_path):
    proc = launch(tmp_path, "--platform", "P.json", "--tuning", str(tmp_path / "no.json"),
                  "-c", "pass")  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("hetcoll: error:")]
    assert len(errors) == 1 and "cannot read the tuning file" in errors[0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"message_cost": -1e-4}, "message_cost: expected seconds per message"),
        ({"emulated": "false", "message_cost": 1e-4}, "emulated: expected true or false"),
    ],
)
def test_a_bad_message_cost_in_the_tuning_file_is_one_line_and_exit_2(tmp_path, change, message):
    tuning = tmp_path / "t.json"
    doc = {"format": "hetcoll-tuning", "version": 1, "ranks": N, "rules": {}}
    tuning.write_text(json.dumps({**doc, **change}))
    proc = launch(tmp_path, "--platform", "P.json", "--tuning", str(tuning), "-c", "pass")
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("hetcoll: error:")]
    assert len(errors) == 1 and message in errors[0]
    assert "Traceback" not in proc.stderr
