"""mpi4py's own collective tests with ``HetComm`` in place of the communicator, 1..4 ranks.

Takes ``test_cco_obj.py``, ``test_cco_buf.py``, ``test_cco_vec.py``, the nonblocking
``test_cco_nb_buf.py``, ``test_cco_nb_vec.py`` and the persistent ``test_cco_pr_buf.py``,
``test_cco_pr_vec.py`` (and the helpers they import) from mpi4py's source distribution at
run time - ``pip download mpi4py==<installed> --no-binary :all: --no-deps`` into a temporary
directory, nothing of it is kept - and runs them under the environment's ``mpiexec`` for
1..4 ranks (``--full``: 1..8) with every test's communicator (``COMM_SELF``, ``COMM_WORLD``
and their duplicates) wrapped in a ``HetComm`` with ``algo="binomial"``: what hetcoll plans
(``Bcast``, ``bcast``, ``Allreduce``, ``allreduce``, ``Allgather``, ``allgather``,
``Allgatherv``, ``Barrier``, ``barrier``, their nonblocking and persistent forms, and with
``rooted_algo`` then ``rooted_ls``: ``Reduce``, ``reduce``, ``Gather(v)``, ``gather``,
``Scatter(v)``, ``scatter``, ``Reduce_scatter(_block)``) runs hetcoll's schedules, the rest
reaches the communicator unchanged.  Prints pass/fail counts per rank count and what the
tests' collective calls did, counted on every rank (a call inside another one, such as
the size broadcast of a ``Gatherv``, is not counted): *planned* (hetcoll's engine ran a
schedule for it), *to MPI* (passed to the communicator: ``last_call`` None), *local*
(nothing to move between ranks: one rank, or no data) and *started* (a nonblocking or
persistent call, which runs when it is waited for: *planned* when its request is hetcoll's,
whose every run is the blocking call's schedule, *to MPI* when it is MPI's own request),
and how many schedules the engine ran; writes ``results/mpi4py_suite.json``; exit status 1
if any test failed.

Run: ``.venv/bin/python benchmarks/crosscheck/mpi4py_suite.py`` for 1, 2, 3 and 4 ranks
(what ``make bench`` runs: odd, even and power-of-two counts), ``--full`` for 1..8 ranks
(longer than an hour on two shared cores: every rank polls), ``--ranks 1,4`` or
``RANKS=1,4`` for other counts, ``--sdist path.tar.gz`` or ``MPI4PY_SDIST=path.tar.gz`` to
use a source distribution already downloaded, ``--modules test_cco_buf,test_cco_vec`` or
``MODULES=...`` for some of the files, ``--algo auto`` (or ``ALGO=auto``) to wrap in the
default ``HetComm`` instead: natively on one host its collectives are then mpi4py's own
methods, bound on the instance, and the run checks that the wrapper still behaves as the
communicator it wraps).  Only mpi4py itself is taken as source: its build
requirements come as wheels (``--no-binary :all:`` compiled Cython from source just to read
the package's metadata, minutes on two cores).  Offline, it prints a one-row table saying
it skipped and writes that in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

MODULES = (
    "test_cco_obj",
    "test_cco_buf",
    "test_cco_vec",
    "test_cco_nb_buf",
    "test_cco_nb_vec",
    "test_cco_pr_buf",
    "test_cco_pr_vec",
)
HELPERS = ("arrayimpl.py", "dlpackimpl.py", "mpiunittest.py", "mpitestutil.py", "main.py")


def fetch(into: Path, sdist: str | None = None) -> Path | None:
    """mpi4py's test directory (from ``sdist``, else its source distribution downloaded
    with pip); None when it cannot be downloaded (no network, no index)."""
    import mpi4py

    if not sdist:
        pip = [sys.executable, "-m", "pip", "download", f"mpi4py=={mpi4py.__version__}"]
        # the sdist of mpi4py only: its build requirements (Cython) as wheels
        subprocess.run([*pip, "--no-binary", "mpi4py", "--no-deps", "--quiet", "-d", str(into)])
        sdist = next(into.glob("mpi4py-*.tar.gz"), None)
        if sdist is None:
            return None
    wanted = {f"{m}.py" for m in MODULES} | set(HELPERS)
    tests = into / "test"
    tests.mkdir()
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) == 3 and parts[1] == "test" and parts[2] in wanted:
                member.name = parts[2]
                tar.extract(member, tests, filter="data")
    return tests


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--ranks",
        default=os.environ.get("RANKS"),
        help="comma-separated rank counts (default 1..4, --full 1..8, or $RANKS)",
    )
    ap.add_argument("--full", action="store_true", help="1..8 ranks")
    ap.add_argument(
        "--sdist",
        default=os.environ.get("MPI4PY_SDIST"),
        help="mpi4py's source distribution (.tar.gz) instead of downloading it ($MPI4PY_SDIST)",
    )
    ap.add_argument(
        "--modules",
        default=os.environ.get("MODULES", ""),
        help="comma-separated test files to run (default all, or $MODULES)",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds each rank count's job may take (default 1800: 6..8 ranks may need more)",
    )
    ap.add_argument(
        "--algo",
        default=os.environ.get("ALGO", "binomial"),
        help="the HetComm's algo (default binomial: hetcoll plans; auto: the default wrapper)",
    )
    ap.add_argument("--json", type=Path, default=Path("results/mpi4py_suite.json"))
    ap.add_argument("--rank-side", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rank_side:  # under mpiexec, started by run_program below
        rank_side(*args.rank_side)
        return 0
    if args.modules:
        os.environ["MODULES"] = args.modules  # the ranks read it (_modules)
    if args.algo != "binomial":
        os.environ["ALGO"] = args.algo  # the ranks read it (rank_side)
    _modules()
    from hetcoll.errors import HetcollError
    from hetcoll.jobs import run_program
    from hetcoll.report import format_table

    args.ranks = args.ranks or ",".join(map(str, range(1, 9 if args.full else 5)))
    ranks = [int(x) for x in args.ranks.split(",")]
    rows, results = [], {}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tests = fetch(Path(tmp), args.sdist)
        if tests is None:
            why = "mpi4py's source distribution could not be downloaded (offline?)"
            print(format_table(["ranks", "result"], [[args.ranks, f"skipped: {why}"]]))
            print("(--sdist path.tar.gz runs it from a file)")
            args.json.write_text(json.dumps({"skipped": why}, indent=1) + "\n")
            return 0
        for n in ranks:
            try:
                r = run_program(n, Path(__file__), ["--rank-side", tests], timeout=args.timeout)
            except HetcollError as exc:  # the job failed: its message ends with its stderr
                print(exc, file=sys.stderr)
                results[n] = {"error": str(exc)}
                rows.append([n, "-", "-", "-", "-", "-", "-", "-", "-", "-", "job failed"])
                continue
            results[n] = r
            c = r["calls"]
            started = [c["started planned"], c["started mpi"]]
            counts = [c["planned"], c["mpi"], c["local"], *started, r["engine_calls"]]
            rows.append([n, r["run"], r["failures"], r["errors"], r["skipped"], *counts])
    print(
        format_table(
            [
                *("ranks", "tests run", "failures", "errors", "skipped"),
                *("planned", "to MPI", "local", "started planned", "started to MPI"),
                "engine runs",
            ],
            rows,
            title=f"mpi4py's {', '.join(_modules())} with HetComm",
        )
    )
    bad = any("error" in r or r["failures"] or r["errors"] for r in results.values())
    print("all passed" if not bad else "FAILURES (see above)")
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 1 if bad else 0


def _modules() -> tuple[str, ...]:
    """The test modules to run: ``MODULES`` (comma-separated names), else all of them."""
    chosen = os.environ.get("MODULES")
    if not chosen:
        return MODULES
    names = tuple(m.strip().removesuffix(".py") for m in chosen.split(","))
    unknown = [m for m in names if m not in MODULES]
    if unknown:
        sys.exit(f"mpi4py_suite: unknown module {unknown[0]!r}; choose from {', '.join(MODULES)}")
    return names


# -- on every rank --------------------------------------------------------------------------------


def rank_side(tests: Path, out: Path) -> None:
    """Load the test modules, wrap each test's communicator in a HetComm, run them."""
    import importlib
    import unittest

    from mpi4py import MPI

    from hetcoll import HetComm
    from hetcoll.platform import Platform, nodes_from_costs

    sys.path.insert(0, str(tests))
    calls = [0]
    kinds = count_calls(HetComm)

    def wrap(cls: type) -> None:
        setup, teardown = cls.setUp, cls.tearDown

        def setUp(self) -> None:
            setup(self)
            comm = self.COMM
            flat = Platform(nodes_from_costs([1e-6] * comm.Get_size()), name="flat")
            algo = os.environ.get("ALGO", "binomial")
            self._hetcomm = self.COMM = HetComm(comm, flat, algo, timeout=120)

        def tearDown(self) -> None:
            hc = self._hetcomm
            calls[0] += hc._seq
            teardown(self)  # a duplicate's tearDown calls self.COMM.Free(): HetComm's Free
            hc.close()  # COMM_WORLD/COMM_SELF: only hetcoll's private copy is freed

        cls.setUp, cls.tearDown = setUp, tearDown

    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for name in _modules():
        module = importlib.import_module(name)
        for attr in dir(module):
            cls = getattr(module, attr)
            if (
                isinstance(cls, type)
                and issubclass(cls, unittest.TestCase)
                and isinstance(getattr(cls, "COMM", None), MPI.Comm)
            ):
                wrap(cls)
                suite.addTests(loader.loadTestsFromTestCase(cls))
    with open(os.devnull, "w") as quiet:
        result = unittest.TextTestRunner(stream=quiet, verbosity=0).run(suite)
    world = MPI.COMM_WORLD
    totals = world.gather(
        (result.testsRun, len(result.failures), len(result.errors), len(result.skipped), calls[0])
    )
    every = world.gather(kinds)
    problems = world.gather([str(t) + "\n" + tb for t, tb in result.failures + result.errors])
    if world.rank == 0:
        summary = {
            "run": totals[0][0],
            "failures": max(t[1] for t in totals),
            "errors": max(t[2] for t in totals),
            "skipped": max(t[3] for t in totals),
            "engine_calls": sum(t[4] for t in totals),
            "calls": {k: sum(c[k] for c in every) for k in KINDS},
            "by_method": {
                f"{name} {k}": v
                for name in sorted({m for c in every for m in c.get("by_method", {})})
                for k, v in sorted(_merge(every, name).items())
            },
            "problems": [p for rank in problems for p in rank][:20],
        }
        out.write_text(json.dumps(summary))


KINDS = ("planned", "mpi", "local", "started planned", "started mpi")


def count_calls(cls: type) -> dict:
    """Count what each collective call of mpi4py's names on ``cls`` (a ``HetComm``) does:
    ``planned`` (the engine's call count grew), ``mpi`` (passed to the communicator),
    ``local`` (neither), ``started planned`` / ``started mpi`` (a nonblocking or persistent
    call whose request is hetcoll's / MPI's own); per method too."""
    import functools

    from hetcoll.runtime.nonblocking import RaisesOnCompletion
    from hetcoll.runtime.rooted import PASSED

    kinds: dict = {**dict.fromkeys(KINDS, 0), "by_method": {}}
    depth = [0]

    def counted(name: str, method):
        started = name[0] == "I" or name.endswith("_init")

        @functools.wraps(method)
        def call(self, *args, **kwargs):
            if depth[0]:  # a call made by another one (a Gatherv's size broadcast)
                return method(self, *args, **kwargs)
            seq, self._passed_at = self._seq, -1
            depth[0] += 1
            result = None
            try:
                result = method(self, *args, **kwargs)
                return result
            finally:
                depth[0] -= 1
                if started:  # hetcoll's requests: a nonblocking call's, a persistent one's
                    mine = isinstance(result, RaisesOnCompletion)
                    kind = "started planned" if mine else "started mpi"
                elif self._seq > seq:
                    kind = "planned"
                elif self._passed_at == self._seq and self.last_call is None:
                    kind = "mpi"
                else:
                    kind = "local"
                kinds[kind] += 1
                per = kinds["by_method"].setdefault(name, {})
                per[kind] = per.get(kind, 0) + 1

        return call

    for name in PASSED:
        method = getattr(cls, name, None)
        if method is not None:
            setattr(cls, name, counted(name, method))
    return kinds


def _merge(every: list[dict], name: str) -> dict:
    out: dict = {}
    for c in every:
        for k, v in c.get("by_method", {}).get(name, {}).items():
            out[k] = out.get(k, 0) + v
    return out


if __name__ == "__main__":
    sys.exit(main())
