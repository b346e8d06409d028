"""The shape `make bench` needs from every script under ``benchmarks/``: a ``main`` called
under ``if __name__ == "__main__":``, an argparse command line that runs with no argument
(no positional or required option) and answers ``--help``, and a place in ``make -n
bench``.  Nothing is run or timed: the scripts' own work is `make bench`'s."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
#: the rank side of MPI benchmarks: started by them under mpiexec, not by make
RANK_SIDE = BENCH / "mpi" / "ranks"
SCRIPTS = sorted(p for p in BENCH.rglob("*.py") if RANK_SIDE not in p.parents)


def _ids(paths):
    return [str(p.relative_to(BENCH)) for p in paths]


def _main_guard_calls(tree: ast.Module) -> set[str]:
    """The functions called in the module's ``if __name__ == "__main__":`` blocks."""
    called = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                    called.add(sub.func.id)
    return called


def _arguments(tree: ast.Module) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "add_argument"
    ]


def test_there_are_scripts_of_every_kind():
    kinds = {p.relative_to(BENCH).parts[0] for p in SCRIPTS}
    assert kinds == {"simulated", "crosscheck", "fuzzing", "mpi"}


@pytest.mark.parametrize("script", SCRIPTS, ids=_ids(SCRIPTS))
def test_a_main_run_under_the_main_guard_with_argparse(script):
    tree = ast.parse(script.read_text())
    top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "main" in top, f"{script.name}: no top-level main()"
    assert "main" in _main_guard_calls(tree), f"{script.name}: __main__ does not call main()"
    text = script.read_text()
    assert "ArgumentParser(" in text, f"{script.name}: no argparse command line"
    assert not re.search(r"in sys\.argv\b|sys\.argv\[[1-9]\d*\]", text), (
        f"{script.name}: reads sys.argv by hand (argparse rejects a mistyped option)"
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=_ids(SCRIPTS))
def test_runs_with_no_argument(script):
    """`make bench` passes none: every positional must be optional, no option required."""
    for call in _arguments(ast.parse(script.read_text())):
        names = [a.value for a in call.args if isinstance(a, ast.Constant)]
        kw = {k.arg: ast.unparse(k.value) for k in call.keywords}
        where = f"{script.name}: add_argument({', '.join(map(repr, names))})"
        assert kw.get("required") != "True", f"{where} is required"
        if names and not names[0].startswith("-"):
            assert kw.get("nargs") in ("'?'", "'*'"), f"{where} is a positional argument"


@pytest.mark.parametrize("script", SCRIPTS, ids=_ids(SCRIPTS))
def test_answers_help_without_running(script, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    monkeypatch.setattr(sys, "path", list(sys.path))  # a script may put a path first
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
        runpy.run_path(str(script), run_name="__main__")
    assert stop.value.code in (0, None)
    assert out.getvalue().startswith("usage:"), out.getvalue()[:200]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_bench_lists_every_script_and_no_rank_side():
    dry = subprocess.run(
        ["make", "-n", "bench"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert dry.returncode == 0, dry.stderr
    words = {w.rstrip(";") for w in dry.stdout.split()}
    listed = {w for w in words if w.startswith("benchmarks/") and w.endswith(".py")}
    assert listed == {str(p.relative_to(ROOT)) for p in SCRIPTS}


def test_the_simgrid_cross_check_without_simgrid_prints_a_table_and_writes_json(
    tmp_path, monkeypatch
):
    """Where SimGrid's bindings are missing it skips, and says so in its table and JSON."""
    script = BENCH / "crosscheck" / "crosscheck_simgrid.py"
    out = tmp_path / "x.json"
    no_python = str(tmp_path / "no-python")
    monkeypatch.setattr(
        sys, "argv", [str(script), "--simgrid-python", no_python, "--json", str(out)]
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as stop:
        runpy.run_path(str(script), run_name="__main__")
    assert stop.value.code == 0
    assert "skipped: SimGrid's Python bindings are not importable" in printed.getvalue()
    assert "skipped" in json.loads(out.read_text())
