"""Fuzz hetcoll's inputs: N mutated platform and schedule files through the command line,
counted by outcome.  Prints a table and writes ``results/fuzz_inputs.json``.

The mutations and the verdicts are those of the suite's property test (``tests/_fuzz.py``):
``valid`` (exit 0, finite times >= 0), ``clean error`` (exit 2, one line, nothing written),
and the defects ``traceback``, ``bad time``, ``messy error``, ``warning``, ``timeout``.
Every case is a pure function of ``(--seed, its index)``.  Exit status 1 when it found a
defect.

    python benchmarks/fuzzing/fuzz_inputs.py                 # 10 000 files
    python benchmarks/fuzzing/fuzz_inputs.py -n 500 --show 5 # a quick look, 5 examples per defect

(About 12 ms of CPU per file: 10 000 files take a few CPU minutes; elapsed time grows with
the host's load.)

It ends with a table per generator (``tests/_fuzz.py``: platform files, schedules, switch
platforms, directed graphs, planner options, pipelined schedules): inputs, tracebacks,
hangs (over ``--limit`` CPU seconds of the process), wrong answers, other defects, and the
slowest input.  The limit counts CPU seconds because on a shared, loaded machine elapsed
time calls slow but finite cases hangs, while a loop that never ends still burns CPU;
``--wall`` counts elapsed seconds instead.

To count another version of hetcoll (e.g. main before a change), put its ``src`` first::

    PYTHONPATH=/path/to/other/src python benchmarks/fuzzing/fuzz_inputs.py
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

import _fuzz  # the shared fuzzer lives with the tests


class _Timeout(TimeoutError):  # run_case lets a TimeoutError through
    pass


def fuzz(n: int, seed: int, limit: float, show: int, cpu: bool = True) -> dict:
    """``n`` mutated files through the CLI, each stopped after ``limit`` seconds (of CPU,
    else elapsed); the counts by outcome, seed and generator, with examples."""
    timer, signum = (
        (signal.ITIMER_PROF, signal.SIGPROF) if cpu else (signal.ITIMER_REAL, signal.SIGALRM)
    )
    armed = [False]  # the limit's signal may arrive after its case returned: then ignored

    def alarm(signum, frame):
        if armed[0]:
            raise _Timeout

    previous = signal.signal(signum, alarm)
    try:
        return _fuzz_cases(n, seed, limit, show, cpu, timer, armed)
    finally:
        signal.signal(signum, previous)


def _fuzz_cases(n, seed, limit, show, cpu, timer, armed) -> dict:
    """The cases of :func:`fuzz`, under the timer ``timer`` while ``armed[0]``."""
    seeds = _fuzz.seeds()
    counts: collections.Counter[str] = collections.Counter()
    by_seed: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    by_group: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    examples: dict[str, list[str]] = collections.defaultdict(list)
    slowest = (0.0, "")
    t0 = time.perf_counter()
    for i in range(n):
        rng = random.Random(seed * 1_000_003 + i)
        s = seeds[rng.randrange(len(seeds))]
        case = _fuzz.mutate(s, rng)
        with tempfile.TemporaryDirectory() as tmp:
            c0 = time.process_time()
            try:
                armed[0] = True
                signal.setitimer(timer, limit)
                try:
                    outcome, detail = _fuzz.run_case(s, case, Path(tmp))
                finally:  # disarmed first: a signal from here on is ignored
                    armed[0] = False
                    signal.setitimer(timer, 0)
            except _Timeout:
                outcome, detail = "timeout", f"over {limit:g} {'CPU ' if cpu else ''}s"
        spent = time.process_time() - c0
        if spent > slowest[0]:
            slowest = (spent, f"case {i} ({s.name}{case.suffix} {' '.join(case.options)})")
        counts[outcome] += 1
        by_seed[s.name][outcome] += 1
        by_group[s.group][outcome] += 1
        if outcome not in ("valid", "clean error") and len(examples[outcome]) < show:
            opts = " ".join(case.options)
            examples[outcome].append(f"case {i} ({s.name}{case.suffix} {opts}): {detail}")
        if (i + 1) % 1000 == 0:
            print(f"{i + 1} files, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return {
        "files": n,
        "seed": seed,
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time(),
        "limit": {"seconds": limit, "clock": "cpu" if cpu else "wall"},
        "slowest": {"cpu_seconds": slowest[0], "case": slowest[1]},
        "counts": {k: counts[k] for k in _fuzz.OUTCOMES},
        "by_seed": {k: dict(v) for k, v in sorted(by_seed.items())},
        "by_group": {k: dict(v) for k, v in sorted(by_group.items())},
        "examples": dict(examples),
    }


def _group_table(by_group: dict) -> str:
    """Inputs, tracebacks, hangs, wrong answers (a wrong or bad time) and other defects
    (a messy error, a warning) per generator."""
    head = ["generator", "inputs", "tracebacks", "hangs", "wrong answers", "other defects"]
    rows = []
    total: collections.Counter[str] = collections.Counter()
    for v in by_group.values():
        total.update(v)
    for group, counts in [*by_group.items(), ("all", total)]:
        c = collections.Counter(counts)
        rows.append(
            [group, sum(c.values()), c["traceback"], c["timeout"],
             c["wrong answer"] + c["bad time"], c["messy error"] + c["warning"]]
        )  # fmt: skip
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)), *lines])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10_000, help="files to fuzz (default 10 000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=20.0, help="seconds per file")
    ap.add_argument(
        "--wall", action="store_true", help="count --limit in elapsed seconds (default: CPU)"
    )
    ap.add_argument("--show", type=int, default=3, help="examples printed per defect")
    ap.add_argument("--out", type=Path, default=Path("results/fuzz_inputs.json"))
    args = ap.parse_args()
    import hetcoll

    try:  # an old hetcoll has no files module
        from hetcoll.files import make_output_dir, write_atomic
    except ImportError:

        def make_output_dir(path):
            path.mkdir(parents=True, exist_ok=True)

        def write_atomic(path, text):
            path.write_text(text)

    doc = fuzz(args.n, args.seed, args.limit, args.show, not args.wall)
    doc["hetcoll"] = str(Path(hetcoll.__file__).parent)
    width = max(len(k) for k in _fuzz.OUTCOMES)
    print(f"{args.n} fuzzed files, seed {args.seed}, hetcoll from {doc['hetcoll']}")
    for k, v in doc["counts"].items():
        print(f"  {k:{width}s}  {v:6d}")
    print(f"({doc['seconds']:.0f} s, {doc['cpu_seconds']:.0f} CPU s; limit {args.limit:g} "
          f"{'' if args.wall else 'CPU '}s per file; the slowest file "
          f"{doc['slowest']['cpu_seconds']:.1f} CPU s: {doc['slowest']['case']})")  # fmt: skip
    print(_group_table(doc["by_group"]))
    for outcome, lines in doc["examples"].items():
        print(f"{outcome}:")
        for line in lines:
            print(f"  {line}")
    make_output_dir(args.out.parent)
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    defects = sum(v for k, v in doc["counts"].items() if k not in ("valid", "clean error"))
    if defects:
        print(f"{defects} defect(s) found")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main())
