"""Runtime speed without emulation (4 ranks): pipelined 8 MiB Bcast vs native, 1-byte cost,
a persistent 1-byte Bcast, how a Bcast scales with its number of segments, and the calls a
HetComm passes to MPI.

Targets: a 1-byte Bcast within 2x native per call, ``check="always"`` within 2x of the
default, a planned persistent 1-byte Bcast (``Start`` + ``Wait``) within 1.1x of native
``Bcast`` and ``Bcast_init`` (also per rank: each rank's median cost of a start, paired
with MPI's, beside a hand-written floor), 8 MiB in 256 KiB segments within 1.5x native,
a chain Bcast linear in its number of segments (1-byte segments: the time per segment at 16 384
segments within 1.2x of that at 1 024, repeated calls), and calls a HetComm passes to
MPI (``Ibcast``, ``Iallreduce``, a sub-communicator's ``Allreduce``) as fast with an
active HetComm as without (paired), and small blocking calls a default HetComm passes to
MPI (an 8-byte ``Bcast`` and ``Allreduce``, ``Barrier``, an object ``allreduce``) within
noise of mpi4py's own, per call.  Measured side by side (rounds alternate the
variants; the median of the round-by-round ratios is reported next to the best values).
Prints tables, writes ``results/bench_runtime.json``.
Run: ``.venv/bin/python benchmarks/mpi/bench_runtime.py [--only PART] [--repeat K]
[--rounds R] [--big-rounds B] [--busy L] [--calls C] [--up-to M]`` with PART one of
bcast_8MiB, one_byte, persistent, segments, passthrough: ``--repeat`` runs the job K times
(a busy host varies from run to run) and prints each run's ratios and their medians;
``--rounds`` sets the 1-byte, persistent and pass-through rounds, ``--big-rounds`` the 8 MiB
rounds, ``--busy`` starts L Python busy loops beside each job (ended after it: the load of
another program), ``--calls`` the calls per case of the segment scaling (the first plans),
``--up-to`` its most segments (64 MiB in 4 KiB segments runs only with 16 384).  ``RANKS``
in the environment sets the ranks (4 by default; at most one per core: 2 on two cores).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from hetcoll.jobs import run_program
from hetcoll.report import format_table

HERE = Path(__file__).parent
PARTS = ("bcast_8MiB", "one_byte", "persistent", "segments", "passthrough")


def print_big(data: dict, ranks: int) -> None:
    big = data["bcast_8MiB"]
    rows = [
        [
            k,
            f"{v['value'] * 1e3:.2f} ms",
            f"{v['value'] / big['native']['value']:.2f}",
            f"{v['ratio_median']:.2f}",
        ]
        for k, v in sorted(big.items())
    ]
    print(
        format_table(
            ["8 MiB Bcast", "best latency", "best / native best", "median of paired ratios"],
            rows,
            title=f"{ranks} ranks, no emulation (correct: {data['bcast_8MiB_correct']})",
        )
    )
    piped = {
        k: v["ratio_median"]
        for k, v in big.items()
        if "seg=" in k and "floor" not in k and "spin" not in k
    }
    best = min(piped, key=piped.get)
    data["best_pipelined"] = best
    seg256 = min(v for k, v in piped.items() if "seg=256KiB" in k)
    spun = big["chain seg=256KiB spin=1ms"]["ratio_median"]
    naps = big["chain seg=256KiB spin=0"]["ratio_median"]
    print(
        f"best pipelined ({best}) / native: {piped[best]:.2f}; 256 KiB segments: {seg256:.2f}"
        f" with the defaults (the pace), {naps:.2f} napping (spin=0), {spun:.2f} with"
        f" spin=1ms (target <= 1.5)"
    )
    data["chain_256KiB_paired"] = paired = {
        "default / spin=0": _paired(big, "chain seg=256KiB", "chain seg=256KiB spin=0"),
        "default / spin=1ms": _paired(big, "chain seg=256KiB", "chain seg=256KiB spin=1ms"),
    }
    periods = ", ".join(f"{y}/{n + y}" for n, y in data["bcast_8MiB_pace"])
    print(
        "256 KiB segments, paired round by round: default / spin=0 "
        f"{paired['default / spin=0']:.2f}, default / spin=1ms {paired['default / spin=1ms']:.2f}"
        f"; the default's periods yielding, per rank: {periods}"
    )
    floor = big["floor: mpi4py chain seg=256KiB"]["ratio_median"]
    rest = big["floor: mpi4py chain seg=256KiB, spin=1ms"]["ratio_median"]
    pace = big["floor: mpi4py chain seg=256KiB, pace"]["ratio_median"]
    chain = big["chain seg=256KiB"]["ratio_median"]
    print(
        f"256 KiB segments, hand-written mpi4py chain (no engine, no header) / native: "
        f"{floor:.2f} napping (zero sleeps), {rest:.2f} looking again at once for 1 ms "
        f"(Rest), {pace:.2f} through a Pace; hetcoll chain / the last: {chain / pace:.2f}, "
        f"with spin=0 / the first: {naps / floor:.2f}"
    )


def _paired(big: dict, a: str, b: str) -> float:
    """The median of the round-by-round ratios of variant ``a`` to variant ``b``."""
    pairs = zip(big[a]["samples"], big[b]["samples"], strict=True)
    return statistics.median(x / y for x, y in pairs)


def one_byte_ratios(data: dict) -> dict[str, float]:
    """The 1-byte figures of one run: the targets' ratios (medians of paired ratios)."""
    one = data["one_byte"]
    return {
        "hetcoll / native": one["hetcoll"]["ratio_median"],
        "always / default": data["one_byte_always_over_default"],
        "floor binomial / native": one["floor: mpi4py binomial"]["ratio_median"],
        "floor: round / no round": data["one_byte_floor_round_over_no_round"],
        "always / floor with round": one["hetcoll check=always"]["value"]
        / one["floor: engine's messages + round"]["value"],
        "always / (native Bcast + Allreduce)": one["hetcoll check=always"]["value"]
        / one["native Bcast + Allreduce(32 B)"]["value"],
        "native Barrier / default": data["one_byte_barrier_over_default"],
    }


def print_one(data: dict) -> None:
    one = data["one_byte"]
    rows = [[k, f"{v['value'] * 1e6:.1f} us", f"{v['ratio_median']:.2f}"] for k, v in one.items()]
    print(format_table(["1-byte Bcast", "per call (median)", "/ native (median of pairs)"], rows))
    r = one_byte_ratios(data)
    print(
        f"1-byte: hetcoll / native {r['hetcoll / native']:.2f} (target <= 2); "
        f"check='always' / default {r['always / default']:.2f} (target <= 2, median of paired "
        f"ratios); hand-written mpi4py binomial / native {r['floor binomial / native']:.2f}"
    )
    print(
        "the engine's messages by hand: with the round / without "
        f"{r['floor: round / no round']:.2f} (the floor of check='always' / default); "
        "check='always' / that floor "
        f"{r['always / floor with round']:.2f}"
    )
    print(
        f"check='always' / (native Bcast + native 32-byte Allreduce) "
        f"{r['always / (native Bcast + Allreduce)']:.2f}: the agreement synchronises every "
        "rank, which MPI's own calls pay too"
    )
    print(
        f"MPI's own Barrier alone / hetcoll's default Bcast {r['native Barrier / default']:.2f} "
        "(median of paired ratios): the least any call costs after which every rank knows "
        "every rank entered it"
    )


def print_persistent(data: dict) -> None:
    p = data["persistent"]
    rows = [
        [
            k,
            f"{v['value'] * 1e6:.1f} us",
            f"{v['ratio_median']:.2f}",
            f"{v['ratio_init_median']:.2f}",
        ]
        for k, v in p.items()
    ]
    print(
        format_table(
            ["1-byte Bcast", "per call (median)", "/ native Bcast", "/ native Bcast_init"],
            rows,
            title="persistent (Start + Wait): medians of paired ratios",
        )
    )
    worst = max(
        max(v["ratio_median"], v["ratio_init_median"])
        for k, v in p.items()
        if k.endswith("Bcast_init") and k.startswith("hetcoll") and "auto" not in k
    )
    print(
        "planned persistent Bcast / native Bcast or Bcast_init: at most "
        f"{worst:.2f} (target <= 1.1)"
    )
    if "hetcoll auto Bcast_init" in p:
        auto = p["hetcoll auto Bcast_init"]["ratio_init_median"]
        data["persistent_auto_over_native_init"] = auto
        print(f"default (auto) Bcast_init / native Bcast_init {auto:.2f} (MPI's own request)")
    ranks = data.get("persistent_per_rank")
    if ranks:
        rows = [
            [name]
            + [
                f"{r[name]['median_ns']:.0f} ns {r[name]['over_native']:.2f}/"
                f"{r[name]['over_native_init']:.2f}"
                for r in ranks
            ]
            for name in ranks[0]
        ]
        print(
            format_table(
                ["1-byte Bcast", *(f"rank {k}" for k in range(len(ranks)))],
                rows,
                title="each rank's own cost per call (median of 1000 calls timed one by one, "
                "median of the rounds) and / native Bcast / native Bcast_init (medians of "
                "paired rounds); the floor: mpi4py's persistent requests of the binomial tree "
                "and the start's message to the rank itself, by hand",
            )
        )
    for algo in ("binomial", "fnf"):
        started, blocking = p[f"hetcoll {algo} Bcast_init"], p[f"hetcoll {algo} Bcast"]
        pairs = zip(started["samples"], blocking["samples"], strict=True)
        ratio = statistics.median(a / b for a, b in pairs)
        data[f"persistent_over_blocking_{algo}"] = ratio
        print(f"{algo}: persistent / the planned blocking Bcast {ratio:.2f}")


def print_segments(data: dict) -> None:
    rows, base = [], None
    for case in data["segments"]:
        later = case["later"]
        per = (later if later is not None else case["first"]) / case["segments"]
        if case["segment_size"] == 1 and base is None:
            base = per
        rows.append(
            [
                f"{case['nbytes']} B in {case['segment_size']} B",
                case["segments"],
                f"{case['first']:.3f} s",
                "-" if later is None else f"{later:.3f} s",
                f"{per * 1e6:.1f} us",
                f"{per / base:.2f}" if case["segment_size"] == 1 else "-",
                case["correct"],
            ]
        )
    print(
        format_table(
            [
                "chain Bcast, 4 ranks",
                "segments",
                "first call",
                "later calls (median)",
                "per segment",
                "/ per segment at 1024",
                "correct",
            ],
            rows,
            title="segment scaling (first call: plans, compiles and runs)",
        )
    )
    ones = [c for c in data["segments"] if c["segment_size"] == 1]
    top = ones[-1]
    ratio = (top["later"] or top["first"]) / top["segments"] / base
    data["segments_per_segment_ratio"] = ratio
    print(
        f"time per segment at {top['segments']} 1-byte segments / at {ones[0]['segments']}: "
        f"{ratio:.2f} (target <= 1.2: linear within 20 %)"
    )


def print_passthrough(data: dict) -> None:
    rows = []
    for name, v in data["passthrough"].items():
        skew = name.endswith("(skew)")
        rows.append(
            [
                name,
                f"{v['without'] * 1e6:.0f} us",
                f"{v['with'] * 1e6:.0f} us",
                "-" if skew else f"{v['ratio_with']:.2f}",
                f"{v['through'] * 1e6:.0f} us",
                "-" if skew else f"{v['ratio_through']:.2f}",
            ]
        )
    print(
        format_table(
            [
                "call passed to MPI",
                "without hetcoll",
                "after a planned HetComm",
                "ratio",
                "through a default HetComm",
                "ratio",
            ],
            rows,
            title="calls HetComm does not plan, after heavy calls run by MPI or by a planned "
            "HetComm, or made through a default HetComm (cost: after an untimed barrier, last "
            "entry to last exit; seen: right after the heavy calls, each rank's own timer; "
            "skew: first to last entry then)",
        )
    )
    own = {
        k: max(v["ratio_with"], v["ratio_through"])
        for k, v in data["passthrough"].items()
        if k.endswith("(cost)")
    }
    worst = max(own, key=own.get)
    print(
        f"pass-through calls' own cost with / without hetcoll: at most {own[worst]:.2f} "
        f"({worst}; target: 1 within noise)"
    )


def print_passthrough_small(data: dict) -> None:
    def ns(v) -> str:
        return "-" if v is None else f"{v:.0f} ns"

    rows = [
        [
            name,
            f"{v['native'] * 1e6:.2f} us",
            f"{v['hetcoll'] * 1e6:.2f} us",
            f"{v['ratio_hetcoll']:.3f} ({v['ratio_hetcoll_min']:.2f}-{v['ratio_hetcoll_max']:.2f})",
            f"{v['front'] * 1e6:.2f} us",
            f"{v['ratio_front']:.3f} ({v['ratio_front_min']:.2f}-{v['ratio_front_max']:.2f})",
            f"{ns(v['path_ns_hetcoll'])} / {ns(v['path_ns_front'])}",
        ]
        for name, v in data["passthrough_small"].items()
    ]
    print(
        format_table(
            [
                "small blocking call",
                "mpi4py",
                "default HetComm",
                "ratio (min-max)",
                'HetComm "mpi"',
                "ratio (min-max)",
                "hetcoll's path alone",
            ],
            rows,
            title="small blocking calls a HetComm passes to MPI, per call (loops of 300 calls, "
            "paired rounds; ratio: HetComm / mpi4py, median of the rounds'; the default "
            "HetComm natively on one host binds mpi4py's methods, one made with "
            'algo="mpi" keeps its own; the path alone: what runs between the call and '
            "MPI's, MPI's call replaced by a C function that does nothing, rank 0)",
        )
    )


@contextlib.contextmanager
def busy_loops(k: int):
    """``k`` Python processes that never sleep, running while the block runs (the load of
    another program's work on the host), ended after it."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=PARTS, help="run one part only")
    parser.add_argument("--repeat", type=int, default=1, help="run the job this many times")
    parser.add_argument("--rounds", type=int, default=11, help="1-byte rounds per job")
    parser.add_argument("--big-rounds", type=int, default=15, help="8 MiB rounds per job")
    parser.add_argument(
        "--busy", type=int, default=0, help="busy loops (Python processes) beside each job"
    )
    parser.add_argument("--calls", type=int, default=3, help="calls per segment-scaling case")
    parser.add_argument(
        "--up-to", type=int, default=16384, help="most segments of the segment scaling"
    )
    args = parser.parse_args()
    ranks = int(os.environ.get("RANKS", "4"))
    os.environ["BENCH_PARTS"] = args.only or ",".join(PARTS)
    os.environ["BENCH_ROUNDS"] = str(args.rounds)
    os.environ["BENCH_BIG_ROUNDS"] = str(max(1, args.big_rounds))
    os.environ["BENCH_SEG_CALLS"] = str(max(1, args.calls))
    os.environ["BENCH_SEG_MAX"] = str(args.up_to)
    runs = []
    for k in range(max(1, args.repeat)):
        before = os.getloadavg()
        with busy_loops(args.busy):
            data = run_program(ranks, HERE / "ranks" / "runtime.py", timeout=1800)
        data["load_average"] = before, os.getloadavg()
        data["busy_loops"] = args.busy
        if args.repeat > 1:
            print(f"-- run {k + 1} of {args.repeat}")
        if "bcast_8MiB" in data:
            print_big(data, ranks)
        if "one_byte" in data:
            print_one(data)
        if "persistent" in data:
            print_persistent(data)
        if "segments" in data:
            print_segments(data)
        if "passthrough" in data:
            print_passthrough(data)
        if "passthrough_small" in data:
            print_passthrough_small(data)
        print(f"load average before / after the run: {data['load_average']}")
        runs.append(data)
    result = runs[0] if len(runs) == 1 else {"runs": runs}
    if len(runs) > 1 and all("one_byte" in d for d in runs):
        each = [one_byte_ratios(d) for d in runs]
        result["one_byte_medians"] = {k: statistics.median(e[k] for e in each) for k in each[0]}
        rows = [
            [k, " ".join(f"{e[k]:.2f}" for e in each), f"{v:.2f}"]
            for k, v in result["one_byte_medians"].items()
        ]
        print(format_table(["1-byte ratio", "per run", "median of runs"], rows))
    if len(runs) > 1 and all("persistent" in d for d in runs):
        names = [k for k in runs[0]["persistent"] if k.endswith("Bcast_init")]
        rows, result["persistent_medians"] = [], {}
        for k in names:
            for over, key in (
                ("native Bcast", "ratio_median"),
                ("Bcast_init", "ratio_init_median"),
            ):
                each = [d["persistent"][k][key] for d in runs]
                median = result["persistent_medians"][f"{k} / native {over}"] = statistics.median(
                    each
                )
                rows.append(
                    [f"{k} / native {over}", " ".join(f"{e:.2f}" for e in each), f"{median:.2f}"]
                )
        print(format_table(["persistent 1-byte ratio", "per run", "median of runs"], rows))
    Path("results").mkdir(exist_ok=True)
    Path("results/bench_runtime.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
