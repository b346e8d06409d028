"""The shape `make bench` needs from every script under ``benchmarks/``: a ``main`` called
under ``if __name__ == "__main__":``, an argparse command line that runs with no argument
(no positional or required option) and answers ``--help``, and a place in ``make -n
bench``.  Nothing is run or timed: the scripts' own work is `make bench`'s."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import json
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


# -- a failure found is an exit status: `make bench` stops on it --------------------------------


def _script(kind: str, name: str, monkeypatch, **replace) -> ModuleType:
    """The script as a module, with ``replace``'s functions in place of its own."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / kind / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "path", list(sys.path))  # a script may put a path first
    spec.loader.exec_module(module)
    for attr, value in replace.items():
        assert hasattr(module, attr), f"{name}.py has no {attr}"
        monkeypatch.setattr(module, attr, value)
    return module


def _replay_case(model, hetcoll: float, simgrid: float) -> tuple[dict, dict]:
    case = {"platform": "p", "model": model, "planner": "fnf", "nbytes": 1}
    case |= {"hetcoll": {"a": 0.0, "b": hetcoll}, "plan": {}}
    return case, {"arrival": {"a": 0.0, "b": simgrid}}


def _crosscheck(monkeypatch, case: dict, replayed: dict) -> ModuleType:
    """The cross-check with one case, which SimGrid "replays" as ``replayed`` says."""
    return _script(
        "crosscheck",
        "crosscheck_simgrid",
        monkeypatch,
        simgrid_available=lambda python: True,
        _cases=lambda sizes: [dict(case)],
        run_replay=lambda python, plan, timeout: replayed,
    )


@pytest.mark.parametrize(
    ("model", "status"),
    [
        ("tini", 1),
        ("postal", 1),
        ({"name": "postal", "overhead": 1e-3}, 1),
        ({"name": "hockney", "contention": "shared"}, 1),
        ("hockney", 0),  # exclusive links: differs from SimGrid's sharing by design
    ],
)
def test_the_simgrid_cross_check_fails_where_the_models_must_agree(
    model, status, tmp_path, capsys, monkeypatch
):
    case, replayed = _replay_case(model, 2.0, 2.5)
    script = _crosscheck(monkeypatch, case, replayed)
    assert script.main(["--json", str(tmp_path / "x.json")]) == status
    doc = json.loads((tmp_path / "x.json").read_text())
    assert [c["agree"] for c in doc["cases"]] == [False]
    if status:
        assert "disagree" in capsys.readouterr().out


def test_the_simgrid_cross_check_passes_when_every_case_agrees(tmp_path, monkeypatch):
    case, replayed = _replay_case("tini", 2.0, 2.0 * (1 + 1e-12))
    script = _crosscheck(monkeypatch, case, replayed)
    assert script.main(["--json", str(tmp_path / "x.json")]) == 0


def _fuzz_doc(outcome: str) -> dict:
    counts = dict.fromkeys(("valid", "clean error", outcome), 0) | {"valid": 5, outcome: 1}
    return {
        "counts": counts,
        "seconds": 1.0,
        "cpu_seconds": 1.0,
        "slowest": {"cpu_seconds": 0.1, "case": "case 0"},
        "by_group": {"platform": counts},
        "examples": {} if outcome == "clean error" else {outcome: ["case 3 (x.json): what"]},
    }


@pytest.mark.parametrize(
    ("outcome", "status"),
    [("clean error", 0), ("traceback", 1), ("wrong answer", 1), ("bad time", 1),
     ("messy error", 1), ("warning", 1), ("timeout", 1)],
)  # fmt: skip
def test_the_fuzzer_exits_1_when_it_finds_a_defect(outcome, status, tmp_path, monkeypatch):
    doc = _fuzz_doc(outcome)
    script = _script("fuzzing", "fuzz_inputs", monkeypatch, fuzz=lambda *a, **k: doc)
    monkeypatch.setattr(sys, "argv", ["fuzz_inputs.py", "--out", str(tmp_path / "f.json")])
    assert script.main() == status
    assert json.loads((tmp_path / "f.json").read_text())["counts"][outcome] == 1


@pytest.mark.parametrize(("result", "status"), [({"error": "boom"}, 1), ({"timeout": 9.0}, 0)])
def test_the_simulator_benchmark_exits_1_when_a_case_fails(result, status, tmp_path, monkeypatch):
    """A case that raises is a failure; one that runs past --timeout is a measurement."""
    script = _script(
        "simulated",
        "bench_simulator",
        monkeypatch,
        case_specs=lambda quick, small_slopes=False: {"a case": {}},
        spawn=lambda spec, timeout, memory: dict(result),
        reference_loop=lambda: 0.1,
    )
    assert script.main(["--out", str(tmp_path / "s.json")]) == status
    assert "a case" in json.loads((tmp_path / "s.json").read_text())["cases"]


@pytest.mark.parametrize("stage", ["--size-of", "--case"])
@pytest.mark.parametrize(("result", "status"), [({"error": "boom"}, 1), ({"timeout": 9.0}, 0)])
def test_the_cap_benchmark_exits_1_when_a_case_fails(stage, result, status, tmp_path, monkeypatch):
    """A case that raises, sizing it or running it, is a failure; one past --timeout is not."""

    def spawn(args, timeout, memory_gb):
        return dict(result) if args[0] == stage else {"nbytes": 1024}

    one = [("fig1 fnf", "fig1", "fnf", "bcast", None)]
    script = _script("simulated", "bench_cap", monkeypatch, CASES=one, spawn=spawn)
    assert script.main(["--out", str(tmp_path / "c.json")]) == status
    assert "fig1 fnf" in json.loads((tmp_path / "c.json").read_text())["cases"]


def test_a_multi_tree_run_over_the_timetable_cap_is_reported_not_measured(monkeypatch):
    """n = 50, seed 50003 needs 48 periods of 512 slices (1 204 224 messages): the row says
    so and the table's worst ratio counts it, instead of the whole run stopping."""
    from hetcoll import plan
    from hetcoll.errors import ScheduleError

    calls = []

    def capped(*args, **kwargs):
        if kwargs.get("method") == "multi_tree":
            calls.append(kwargs["nbytes"])
        if kwargs.get("method") == "multi_tree" and len(calls) > 1:  # the run, after the probe
            raise ScheduleError("segment_size: ... more than 1048576 per schedule")
        return plan(*args, **kwargs)

    script = _script("simulated", "bench_pipelined", monkeypatch, plan=capped)
    row = script.instance(6, 0.5, 6000, None, True)
    assert len(calls) == 2 and "multi_tree" not in row["ratios"]
    assert "exceeds" in row["multi_tree_unmeasured"]
    measured = script.instance(6, 0.5, 6001, None, False)
    measured["ratios"]["multi_tree"] = 0.99
    cells = script.summary([row, measured], [6])[0]
    assert "99.00% (1 not measured)" in cells


@pytest.mark.parametrize(("argv", "ranks"), [([], [1, 2, 3, 4]), (["--full"], list(range(1, 9)))])
def test_mpi4py_suite_runs_1_to_4_ranks_unless_full(argv, ranks, tmp_path, monkeypatch):
    """`make bench` runs 1..4 ranks (5..8 oversubscribe two cores for over an hour)."""
    import hetcoll.jobs

    script = _script("crosscheck", "mpi4py_suite", monkeypatch, fetch=lambda into, sdist: into)
    started = []

    def run_program(n, program, args, timeout):
        started.append(n)
        calls = dict.fromkeys(script.KINDS, 1)
        return {"run": 1, "failures": 0, "errors": 0, "skipped": 0, "engine_calls": 1} | {
            "calls": calls
        }

    monkeypatch.setattr(hetcoll.jobs, "run_program", run_program)
    monkeypatch.delenv("RANKS", raising=False)
    assert script.main([*argv, "--json", str(tmp_path / "m.json")]) == 0
    assert started == ranks


@pytest.mark.parametrize("wall", [False, True])
def test_the_fuzzer_counts_an_alarm_as_a_case_ends_without_crashing(wall, monkeypatch):
    """The limit's signal may arrive after a case returned, before its timer is cleared."""
    import signal

    script = _script("fuzzing", "fuzz_inputs", monkeypatch)
    monkeypatch.setattr(script._fuzz, "run_case", lambda seed, case, workdir: ("valid", ""))
    setitimer, signum = signal.setitimer, signal.SIGALRM if wall else signal.SIGPROF
    before = signal.getsignal(signum)

    def late(which, seconds, interval=0.0):  # the alarm rings just as the case is done
        if seconds == 0:
            signal.raise_signal(signum)
        return setitimer(which, seconds, interval)

    monkeypatch.setattr(signal, "setitimer", late)
    doc = script.fuzz(3, 0, 20.0, 0, cpu=not wall)
    assert doc["counts"]["valid"] == 3
    assert doc["limit"]["clock"] == ("wall" if wall else "cpu")
    assert signal.getsignal(signum) == before  # the handler is the caller's again


# -- the default is `make bench`'s size; --full the long run the docs quote -----------------------


@pytest.mark.parametrize(
    ("argv", "sizes"),
    [([], [1, 1 << 20]), (["--full"], [1, 1 << 10, 64 << 10, 1 << 20, 8 << 20])],
)
def test_the_simgrid_cross_check_runs_two_sizes_unless_full(argv, sizes, tmp_path, monkeypatch):
    asked = []
    case, replayed = _replay_case("tini", 2.0, 2.0)
    script = _crosscheck(monkeypatch, case, replayed)
    monkeypatch.setattr(script, "_cases", lambda s: asked.append(list(s)) or [dict(case)])
    assert script.main([*argv, "--json", str(tmp_path / "x.json")]) == 0
    assert asked == [sizes]
    assert json.loads((tmp_path / "x.json").read_text())["sizes"] == sizes


@pytest.mark.parametrize(
    ("argv", "limit", "budget", "draws", "largest"),
    [
        ([], 10.0, 60.0, 3, 100_000),
        (["--full"], 60.0, 400.0, 5, 100_000),
        (["--quick"], 5.0, 20.0, 2, 10_000),
        (["--full", "--limit", "7", "--budget", "9"], 7.0, 9.0, 5, 100_000),
    ],
)
def test_bench_planners_limits_by_mode(argv, limit, budget, draws, largest, tmp_path, monkeypatch):
    """`make bench` sweeps ``optimal`` to a 10 s solve and 60 s in all; --full to 60 s / 400 s."""
    seen = {}

    def sweep(sizes, limit, budget, repeat):
        seen["sweep"] = (limit, budget)
        return [], None

    def case_24(repeat, draws):
        seen["draws"] = draws
        return []

    def heuristics(sizes, repeat):
        seen["largest"] = max(sizes)
        return []

    script = _script(
        "simulated",
        "bench_planners",
        monkeypatch,
        sweep_optimal=sweep,
        case_24=case_24,
        sweep_heuristics=heuristics,
    )
    assert script.main([*argv, "--out", str(tmp_path / "p.json")]) == 0
    assert seen == {"sweep": (limit, budget), "draws": draws, "largest": largest}
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["limit_seconds"] == limit


class _Done(Exception):
    """Raised where a stubbed script would print its table: what it ran is recorded."""


class _Any(dict):
    """A result row whose every field is 1.0."""

    def __missing__(self, key):
        return 1.0


def _done(*args, **kwargs):
    raise _Done


def _sizes_run(script, calls):
    return {
        "instance": lambda n, seed, model, slices: calls.append((n, seed)) or [],
        "table": _done,
    }


def _sizes_latency_run(script, calls):
    return {
        "latency_instance": lambda n, seed, model, latency, sizes: (
            calls.append((n, seed, model, latency, sizes)) or []
        ),
        "latency_table": _done,
    }


def _switch_run(script, calls):
    return {
        "measure": lambda n, seed, repeat, flits: (
            calls.append((n, seed, repeat)) or {"workstations": n}
        ),
        "PLANNERS": (),
        "format_table": _done,
    }


def _packing_run(script, calls):
    return {
        "link_graph": lambda n, density, seed: calls.append((n, seed)),
        "one": lambda p, op, block: _Any(),
        "format_table": _done,
    }


def _edge_loads_run(script, calls):
    from types import SimpleNamespace

    solve = SimpleNamespace(steady_problem=lambda *a: None, pack_arborescences=lambda p: None)
    return {
        "random_graph_platform": lambda n, density, seed: calls.append((density, seed)),
        "steady": solve,
        "one": lambda prob, pack, smoothing: calls.append(smoothing) or _Any(),
        "format_table": _done,
    }


def _optimal_run(script, calls):
    return {
        "case": lambda n, k, repeat, full_limit: calls.append((n, k)) or _Any(),
        "from_the_command_line": lambda n, k: calls.append(("cli", n, k)) or (1.0, 1.0),
        "format_table": _done,
    }


def _reductions_run(script, calls):
    return {
        "one_case": lambda n, model, collective, nbytes, seed: calls.append(n) or {},
        "summarise": lambda batch: {},
        "table": _done,
    }


def _per_n(calls):
    return {n: calls.count(n) for n in calls}


def _rows(small: int, at_64: int) -> dict:
    """Cases per member count: 2 models x 5 collectives x the platforms per row."""
    return {4: small, 6: small, 8: small, 16: small, 64: at_64}


@pytest.mark.parametrize(
    ("name", "stubs", "argv", "expect"),
    [
        ("bench_sizes", _sizes_run, [], lambda c: c == [(10, 0), (30, 0), (50, 0)]),
        ("bench_sizes", _sizes_run, ["--full"], lambda c: len(c) == 9 and c[-1] == (50, 2)),
        ("bench_sizes", _sizes_latency_run, ["--latency", "50us", "--model", "multi_port"],
         lambda c: [x[:3] for x in c] == [(10, 0, "multi_port"), (30, 0, "multi_port"),
                                          (50, 0, "multi_port")]
         and all(abs(x[3] - 5e-5) < 1e-15 and x[4][0] == 1024 and x[4][-1] == 2**30 for x in c)),
        ("bench_switch", _switch_run, [], lambda c: c == [(256, 1, 1), (4096, 1, 1)]),
        ("bench_switch", _switch_run, ["--full"], lambda c: len(c) == 6 and c[-1] == (4096, 3, 3)),
        ("bench_packing", _packing_run, [], lambda c: c == [(8, 0), (16, 0), (32, 0)]),
        ("bench_packing", _packing_run, ["--full"], lambda c: [n for n, _ in c] == [8, 16, 32, 64]),
        ("bench_packing", _packing_run, ["--nodes", "64", "--seeds", "0-2,5"],
         lambda c: c == [(64, 0), (64, 1), (64, 2), (64, 5)]),
        ("bench_edge_loads", _edge_loads_run, [], lambda c: len(c) == 2 * 2 * (1 + 2)),
        ("bench_edge_loads", _edge_loads_run, ["--full"], lambda c: len(c) == 2 * 5 * (1 + 6)),
        ("bench_optimal", _optimal_run, [], lambda c: {x[0] for x in c} == {16, 24, 32, 40, "cli"}),
        ("bench_optimal", _optimal_run, ["--full"], lambda c: (64, 8) in c),
        ("bench_reductions", _reductions_run, [], lambda c: _per_n(c) == _rows(50, 20)),
        ("bench_reductions", _reductions_run, ["--full"], lambda c: _per_n(c) == _rows(200, 50)),
    ],
)  # fmt: skip
def test_the_default_is_smaller_than_full(name, stubs, argv, expect, tmp_path, monkeypatch):
    """`make bench` runs the default: fewer platforms (or sizes) than --full, each checked."""
    calls: list = []
    module = _script("simulated", name, monkeypatch)
    for attr, value in stubs(module, calls).items():
        assert hasattr(module, attr), f"{name}.py has no {attr}"
        monkeypatch.setattr(module, attr, value)
    with contextlib.suppress(_Done):
        module.main([*argv, "--out", str(tmp_path / "out.json")])
    assert calls and expect(calls), calls


def test_bench_sizes_latency_sweep_rows(monkeypatch):
    """The per-link latency sweep: every link latency within half to one and a half times
    the one given, and per size auto's time at or above the bound and no slower than the
    best single pipelined tree or multi_tree at their best slices (auto's candidates)."""
    module = _script("simulated", "bench_sizes", monkeypatch)
    base = module.random_graph_platform(6, module.DENSITY, seed=1)
    p = module.with_latency(base, 1e-4, 1)
    assert [(lk.u, lk.v, lk.bandwidth) for lk in p.links] == [
        (lk.u, lk.v, lk.bandwidth) for lk in base.links
    ]
    assert all(5e-5 <= lk.latency <= 1.5e-4 for lk in p.links)
    rows = module.latency_instance(6, 1, "one_port", 1e-4, (1024, 2**20))
    assert [r["nbytes"] for r in rows] == [1024, 2**20]
    for r in rows:
        assert r["bound"] * (1 - 1e-9) <= r["auto_time"]
        for key in ("single_time", "multi_tree_time"):
            assert r[key] is None or r["auto_time"] <= r[key]
    assert rows[0]["segment_size"] is None and rows[1]["single_time"] is not None
    assert rows[1]["bound"] > module.lower_bound(base, "0", 2**20).seconds  # the latency counts
    table = module.latency_table(rows)
    assert [row[:2] for row in table] == [["6", "1 KiB"], ["6", "1 MiB"]]


def test_bench_sizes_auto_rows(monkeypatch):
    """``--auto``: auto's choice at 1 GiB, its time the least of its candidates and at or
    above the bound, one table row per platform."""
    module = _script("simulated", "bench_sizes", monkeypatch)
    (row,) = module.auto_instance(6, 1, "one_port")
    p = module.random_graph_platform(6, module.DENSITY, seed=1)
    s = module.plan(p, "0", method="auto", nbytes=module.AUTO_SIZE)
    assert row["chosen"] == s.params["chosen"] and row["segment_size"] == s.params["segment_size"]
    assert row["auto_time"] == min(s.params["candidates"].values())
    assert row["bound"] * (1 - 1e-9) <= row["auto_time"] and row["auto_cpu"] >= 0
    assert [r[:2] for r in module.auto_table([row])] == [["6", "1"]]
    # --auto --latency: the latency sweep's platform (its links' latencies count)
    (late,) = module.auto_instance(6, 1, "one_port", 1e-4)
    s = module.plan(module.with_latency(p, 1e-4, 1), "0", method="auto", nbytes=module.AUTO_SIZE)
    assert late["auto_time"] == min(s.params["candidates"].values()) > row["auto_time"]
    assert late["latency"] == 1e-4 and row["latency"] is None


def test_packing_summarises_the_seeds(monkeypatch):
    """``bench_packing --seeds``: a count or seeds and ranges; the summary's row per nodes,
    operation and size gives the worst ratio over the seeds, its seed and the mean, and
    counts the seeds whose plan is slower than the best baseline."""
    script = _script("simulated", "bench_packing", monkeypatch)
    assert script.seed_list("3") == [0, 1, 2]
    assert script.seed_list("0-2,5,1") == [0, 1, 2, 5]
    rec = dict(n=64, op="allgather", mib_per_rank=1, plan_cpu_s=1.0, best_baseline_ratio=1.1)
    rows = script.summary([
        {**rec, "seed": 0, "ratio": 1.01}, {**rec, "seed": 5, "ratio": 1.13, "plan_cpu_s": 2.5},
        {**rec, "seed": 0, "op": "reduce_scatter", "ratio": 1.02, "best_baseline_ratio": None},
    ])  # fmt: skip
    assert rows == [
        [64, "allgather", 1, 2, "1.1300", 5, "1.0700", "2.50", 1],
        [64, "reduce_scatter", 1, 1, "1.0200", 0, "1.0200", "1.00", 0],
    ]


def test_packing_measures_an_allreduce_against_its_own_vector(monkeypatch):
    """``bench_packing --ops allreduce``: the bound is the allreduce's of the vector the
    planners are given (it was N times that vector's, so a ratio of 1/N showed as the
    time over the optimum); every baseline's ratio is at least 1 too."""
    script = _script("simulated", "bench_packing", monkeypatch)
    p = script.link_graph(5, 0.5, 0)
    r = script.one(p, "allreduce", 4096)
    assert 1.0 <= r["ratio"] < 2.0
    assert all(v >= 1.0 - 1e-9 for k, v in r.items() if k.endswith("_ratio") and v is not None)


def test_bench_sizes_multi_tree_over_the_cap(monkeypatch):
    """A multi_tree the event loop cannot simulate (``multi_port``, more messages than
    ``MAX_TRANSFERS``) is a row "over the cap", not the end of the sweep."""
    from hetcoll.errors import ScheduleError

    module = _script("simulated", "bench_sizes", monkeypatch)
    real = module.plan

    def capped(p, root, method, **kwargs):
        if method == "multi_tree":
            raise ScheduleError("segment_size: over the cap")
        return real(p, root, method=method, **kwargs)

    monkeypatch.setattr(module, "plan", capped)
    (row,) = module.instance(6, 1, "multi_port", [16])
    assert row["multi_tree_time"] is None and row["multi_tree_trees"] is None
    assert row["single_time"] is not None
    (line,) = module.table([row])
    assert row["bound_whole"] >= row["bound"] > 0  # (the whole-slice bound: none lower)
    assert line[4] == "over the cap" and line[5] == line[6] == "-" and line[7] == "0/1"


def test_packing_two_site_rows(monkeypatch, tmp_path):
    """``bench_packing --two-site``: the two-site platform alone (no random graph), each
    plan's simulated time over the hosts' lower bound, at least 1, ``sites``' the time of
    its own plan; n/a where a planner does not plan the operation."""
    from hetcoll.allbounds import members_bound
    from hetcoll.experiments.allreduce_star import platform
    from hetcoll.generators import hosts
    from hetcoll.planners.sites import sites

    script = _script("simulated", "bench_packing", monkeypatch)
    r = script.two_site("allgather", 4096)
    p = platform("two-site")
    bound = members_bound(p, "allgather", 8 * 4096, hosts(p), packing=True).lower_bound
    assert r["lower_bound"] == bound
    assert r["sites_ratio"] == script.simulate(p, sites(p, nbytes=4096)).makespan / bound
    assert r["site_exchange_ratio"] is None  # an allreduce's planner
    assert all(
        r[f"{name}_ratio"] >= 1 - 1e-9 for name in script.TWO_SITE if name != "site_exchange"
    )
    assert script.two_site("reduce_scatter", 4096)["blind_ratio"] is None
    assert script.two_site("allreduce", 4096)["site_exchange_ratio"] >= 1 - 1e-9

    def no_graph(*args):
        raise AssertionError("--two-site plans no random graph")

    monkeypatch.setattr(script, "link_graph", no_graph)
    monkeypatch.setattr(script, "MiB", 1024)  # KiB per rank: a quick run
    out = tmp_path / "out.json"
    assert script.main(["--two-site", "--sizes", "4", "--ops", "allgather", "--out", str(out)]) == 0
    (rec,) = json.loads(out.read_text())["two_site"]
    assert (rec["op"], rec["mib_per_rank"]) == ("allgather", 4) and rec["sites_ratio"] >= 1


def test_bench_sizes_gap_rows(monkeypatch):
    """``--gap``: per message, the justified list schedule no later than the list schedule
    nor earlier than the bound, the middle's rate and the start-up and drain that add up
    to its span, the critical ports' idle time split into waiting and starved, one table
    row per size; where multi_tree keeps a periodic timetable (here
    the whole message is never list scheduled), its period, its time and its dense
    timetable's; one-port only."""
    module = _script("simulated", "bench_sizes", monkeypatch)
    rows = module.gap_instance(8, 1, [16, 64])
    assert [r["slices"] for r in rows] == [16, 64]
    for r in rows:
        assert r["bound"] * (1 - 1e-9) <= r["justified"] <= r["list"]
        assert r["justified"] == pytest.approx(r["bound"] / r["rate"] + r["start_drain"])
        assert r["ports"] >= 1 and all(r[part] >= 0 for part in module.GAP_PARTS)
        # the idle time split into waiting and starved, each part non-negative
        idle = sum(r[part] for part in module.GAP_PARTS)
        assert r["waiting"] >= 0 and r["starved"] >= -1e-9
        assert r["waiting"] + r["starved"] == pytest.approx(idle)
    table = module.gap_table(rows)
    assert [row[:2] for row in table] == [["8", "16"], ["8", "64"]]
    from hetcoll.planners import multitree

    monkeypatch.setattr(multitree, "MESSAGE_TRANSFERS", 0)
    monkeypatch.setattr(module, "MESSAGE_TRANSFERS", 0)
    (row,) = module.gap_instance(16, 0, [512])
    p = module.random_graph_platform(16, module.DENSITY, seed=0, model="one_port")
    kept = module.plan(p, "0", method="multi_tree", nbytes=512 * 10**6, segment_size=10**6)
    per = row["periodic"]
    assert (
        row["list"] is None and per["slices_per_period"] == 16 == kept.params["slices_per_period"]
    )
    assert per["kept"] == module.simulate(p, kept).makespan >= row["bound"]
    # the kept run split by the packing's prices, the parts adding up to its time
    priced = per["priced"]
    parts = ("steady", "waste", *module.GAP_PARTS)
    assert priced["makespan"] == per["kept"] == pytest.approx(sum(priced[x] for x in parts))
    assert per["lags"] >= 0
    dense = module.plan(
        p,
        "0",
        method="multi_tree",
        nbytes=512 * 10**6,
        segment_size=10**6,
        options={"slices_per_period": 16},
    )
    assert per["dense"] == module.simulate(p, dense).makespan
    assert per["dense"] == pytest.approx(row["bound"] / per["rate"] + per["start_drain"])
    (line,) = module.gap_table([row])
    assert line[3] == line[9] == "-" and line[10] == "16" and line[11].endswith("%")
    assert len(line[14].split(" / ")) == 3
    assert float(line[15]) == pytest.approx(per["lags"], abs=1e-3)
    with pytest.raises(SystemExit) as stop:
        module.main(["--gap", "--model", "multi_port"])
    assert stop.value.code == 2
