"""Every command of the README runs as written on a fresh copy of the repository.

The shell blocks run line by line (continuations joined) with the virtual environment on
PATH, as the README says to set it up, in a copy of the repository's files (tracked and
new, not ignored: what a fresh clone has) with ``.venv`` linked in; the Python blocks run
as scripts there, under ``mpiexec -n 8`` when they use MPI.  A few commands cannot run in
CI; :data:`ILLUSTRATIVE` names them and why.  The transcript the README shows for the
example is the example's own (``examples/training_loop.out``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
pytestmark = pytest.mark.mpi

#: commands that do not run in CI, by a pattern they contain, and why
ILLUSTRATIVE = {
    "make demo": "16 ranks (more than the 8 a test may start), ~30 s",
    "make test": "runs this very suite",
    "source .venv/bin/activate": "the test puts .venv/bin on PATH itself",
    "-n 16": "16 ranks, more than the 8 a test may start",
    "-f hosts": "a hostfile of real machines",
    "hetcoll demo": "16 ranks, more than the 8 a test may start",
}


def blocks(text: str) -> list[tuple[str, str]]:
    """The README's fenced blocks: ``(language, body)``."""
    return [(m[1], m[2]) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def commands(body: str) -> list[str]:
    """A shell block's commands: continuation lines joined, comment lines dropped."""
    out, line = [], ""
    for raw in body.splitlines():
        line += raw.rstrip()
        if line.endswith("\\"):
            line = line[:-1] + " "
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip())
        line = ""
    return out


def skipped(cmd: str) -> str | None:
    return next((why for pat, why in ILLUSTRATIVE.items() if pat in cmd), None)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's files as a fresh clone has them, with the virtual environment."""
    dest = tmp_path_factory.mktemp("clone")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    (dest / ".venv").symlink_to(Path(sys.executable).parents[1])
    return dest


def _env(clone: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{clone / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(clone / ".venv")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


SHELL = [
    (k, cmd)
    for k, (lang, body) in enumerate(blocks(README.read_text()))
    if lang == "sh"
    for cmd in commands(body)
]
PYTHON = [
    (k, body) for k, (lang, body) in enumerate(blocks(README.read_text())) if lang == "python"
]


def test_every_block_is_seen():
    assert len(SHELL) >= 20 and len(PYTHON) >= 3
    assert any("examples/training_loop.py" in c for _, c in SHELL)
    assert any("hetcoll tune" in c for _, c in SHELL)
    assert any("hetcoll probe" in c for _, c in SHELL)


def test_shell_commands_run_as_written(clone):
    """In README order (later commands use the files earlier ones write)."""
    ran = 0
    for k, cmd in SHELL:
        if skipped(cmd):
            continue
        proc = subprocess.run(
            ["bash", "-c", cmd],
            cwd=clone,
            env=_env(clone),
            capture_output=True,
            text=True,
            timeout=600,
        )
        # a rank's own error line comes first: mpiexec's abort report fills the tail
        said = [line for line in proc.stderr.splitlines() if "hetcoll:" in line][:5]
        assert proc.returncode == 0, (k, cmd, said, proc.stderr[-2000:])
        ran += 1
    assert ran >= 20


@pytest.mark.parametrize(("k", "body"), PYTHON, ids=lambda x: str(x) if isinstance(x, int) else "")
def test_python_blocks_run(clone, k, body):
    script = clone / f"readme_block_{k}.py"
    script.write_text(body)
    cmd = [str(clone / ".venv" / "bin" / "python"), str(script)]
    if "mpi4py" in body:
        cmd = [str(clone / ".venv" / "bin" / "mpiexec"), "-n", "8", cmd[0], "-m", "mpi4py", cmd[1]]
    proc = subprocess.run(
        cmd, cwd=clone, env=_env(clone), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_transcript_shown_is_the_examples():
    text = README.read_text()
    want = (ROOT / "examples" / "training_loop.out").read_text()
    shown = [body for lang, body in blocks(text) if lang == "" and "results equal" in body]
    assert shown == [want]


def test_illustrative_commands_are_few_and_named():
    skipped_cmds = [c for _, c in SHELL if skipped(c)]
    assert len(skipped_cmds) <= 8, skipped_cmds
