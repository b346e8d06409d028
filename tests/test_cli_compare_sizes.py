"""hetcoll compare --sizes: per message size, each planner's best time over the slice sizes
auto tries (the simulator's time of that very plan), the fastest, the lower bound and the
gap to it; --plot draws time / bound over size; bad combinations are one line, exit 2;
``plan`` prints a broadcast's or multicast's bound and gap too."""

from __future__ import annotations

import json

import pytest

from _cli import one_line_error, run
from hetcoll import plan, simulate
from hetcoll.bounds import lower_bound
from hetcoll.compare import slice_choices
from hetcoll.generators import random_graph_platform
from hetcoll.platform import save_platform
from hetcoll.units import format_time

SIZES = (1024, 2**20, 64 * 2**20)
ALGOS = "fnf,binomial,chain,throughput_tree,multi_tree,grow_tree"


@pytest.fixture(scope="module")
def platform_file(tmp_path_factory):
    p = random_graph_platform(6, 0.5, seed=3)
    path = tmp_path_factory.mktemp("sizes") / "p.json"
    save_platform(p, path)
    return p, path


def test_every_printed_time_is_the_simulators_and_the_chosen_is_the_fastest(platform_file, capsys):
    p, path = platform_file
    sizes = ",".join(str(s) for s in SIZES)
    code, out, _ = run(
        capsys, "compare", path, "--root", "0", "--sizes", sizes, "--algos", ALGOS, "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert [r["nbytes"] for r in doc["sizes"]] == list(SIZES)
    for r in doc["sizes"]:
        size = r["nbytes"]
        bound = lower_bound(p, "0", size).seconds
        assert r["lower_bound"] == pytest.approx(bound, rel=1e-12)
        # brute force: every planner at every slice size auto tries
        brute = {}
        for name in ALGOS.split(","):
            for seg in slice_choices(size):  # (planners named by --algos: every slice size)
                t = simulate(p, plan(p, "0", method=name, nbytes=size, segment_size=seg))
                brute[name] = min(brute.get(name, float("inf")), t.makespan)
        # a planner's row: its best over the slice sizes where it was simulated (as auto
        # prunes: at least its best, and above it only when that best could not win)
        assert set(r["planners"]) <= set(brute)
        for name, got in r["planners"].items():
            t = got["predicted_time"]
            assert t >= brute[name] * (1 - 1e-12), name
            assert t == pytest.approx(brute[name], rel=1e-12) or brute[name] > min(
                brute.values()
            ), name
            again = plan(p, "0", method=name, nbytes=size, segment_size=got["segment_size"])
            assert simulate(p, again).makespan == pytest.approx(got["predicted_time"], rel=1e-12)
        assert r["predicted_time"] == pytest.approx(min(brute.values()), rel=1e-12)
        assert brute[r["chosen"]] == pytest.approx(min(brute.values()), rel=1e-12)
        assert r["gap"] == pytest.approx(r["predicted_time"] / bound, rel=1e-12)
        assert r["gap"] >= 1 - 1e-9  # no schedule beats the bound


def test_the_table_prints_the_bound_and_the_gap_and_the_plot_is_a_png(
    platform_file, capsys, tmp_path
):
    p, path = platform_file
    png = tmp_path / "gap.png"
    code, out, _ = run(
        capsys,
        "compare",
        path,
        "--root",
        "0",
        "--sizes",
        "1KiB,64MiB",
        "--algos",
        ALGOS,
        "--plot",
        png,
    )
    assert code == 0
    lines = out.splitlines()
    bound_row = next(line for line in lines if line.startswith("lower bound"))
    gap_row = next(line for line in lines if line.startswith("gap (chosen / bound)"))
    bounds = [format_time(lower_bound(p, "0", size).seconds) for size in (1024, 64 * 2**20)]
    assert bound_row.split() == ["lower", "bound", *" ".join(bounds).split()]
    gaps = [float(x) for x in gap_row.split()[-2:]]
    for size, gap in zip((1024, 64 * 2**20), gaps, strict=True):
        best = min(
            simulate(p, plan(p, "0", method=n, nbytes=size, segment_size=seg)).makespan
            for n in ALGOS.split(",")
            for seg in slice_choices(size)
        )
        assert gap == pytest.approx(best / lower_bound(p, "0", size).seconds, abs=5e-4)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "members"),
    [
        (("--size", "1MiB", "--segment-size", "64KiB", "--algo", "chain"), None),
        (("--op", "multicast", "--members", "2,4", "--size", "4KiB", "--algo", "fnf"), ["2", "4"]),
    ],
)
def test_plan_prints_the_lower_bound_and_the_gap(platform_file, capsys, args, members):
    p, path = platform_file
    code, out, _ = run(capsys, "plan", path, "--root", "0", *args, "--json")
    assert code == 0
    doc = json.loads(out)
    bound = lower_bound(p, "0", doc["nbytes"], members).seconds
    assert bound > 0
    assert doc["lower_bound"] == pytest.approx(bound, rel=1e-12)
    assert doc["gap"] == pytest.approx(doc["predicted_time"] / bound, rel=1e-12)
    assert doc["gap"] >= 1 - 1e-9
    code, out, _ = run(capsys, "plan", path, "--root", "0", *args)
    line = next(x for x in out.splitlines() if x.startswith("lower bound"))
    assert line.split() == [
        "lower",
        "bound:",
        *format_time(bound).split(),
        "gap",
        "(time",
        "/",
        "bound):",
        f"{doc['gap']:.3f}",
    ]


def test_plan_gives_no_bound_where_it_has_none(platform_file, capsys):
    # a reduce has no broadcast bound; a 0-byte broadcast has nothing to gap
    _p, path = platform_file
    for args in (
        ("fig1", "--root", "1", "--op", "reduce", "--size", "4KiB"),
        (path, "--root", "0"),
    ):
        code, out, _ = run(capsys, "plan", *args, "--json")
        assert code == 0
        doc = json.loads(out)
        assert doc.get("gap") is None
        code, out, _ = run(capsys, "plan", *args)
        assert code == 0 and "lower bound" not in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--op", "reduce", "--sizes", "1KiB"), "--sizes"),
        (("--plot", "x.png"), "--plot"),
        (("--sizes", "1KiB,,2KiB"), "--sizes"),
        (("--sizes", "1KiB", "--size", "4KiB"), "--sizes"),
    ],
)
def test_bad_combinations_are_one_line(platform_file, capsys, args, needle):
    _p, path = platform_file
    one_line_error(*run(capsys, "compare", path, "--root", "0", *args), needle)
