"""``python -m hetcoll.launch``: run an unchanged mpi4py program with hetcoll's collectives.

.. code-block:: sh

    mpiexec -n 8 python -m hetcoll.launch --platform p.json script.py [arg ...]
    mpiexec -n 8 python -m hetcoll.launch --platform p.json --algo binomial -m pkg.mod [arg ...]

Before the program runs, ``MPI.COMM_WORLD`` (the attribute of the ``mpi4py.MPI`` module)
becomes a :class:`hetcoll.HetComm` over the world communicator with the given settings, so
every ``MPI.COMM_WORLD.Bcast``/``Allreduce``/... of the program, and of the libraries it
calls from Python, runs hetcoll's schedules, and every communicator made from it
(``Split``, ``Dup``, ``Create``, ...) is a ``HetComm`` too.  The program then runs as
``python -m mpi4py`` runs it (``mpi4py.run``: a script, ``-m module`` or ``-c command``;
an unhandled exception on one rank aborts the job), and the wrapper is closed when it
returns.  ``HETCOLL_PLATFORM`` gives the platform when ``--platform`` is not given.

Limits: only what reads ``MPI.COMM_WORLD`` from Python after the launcher set it sees
the wrapper: compiled code (C, C++, Fortran extensions) calls MPI on ``MPI_COMM_WORLD``
directly, and an object that holds the world communicator from before (none in a fresh
interpreter) keeps it; communicators made from ``MPI.COMM_SELF`` or by
``Comm.Create_from_group`` are plain; ``MPI.COMM_WORLD.Idup`` returns a plain communicator
(a wrapper is made collectively); the program must not ``Free`` the world communicator (as
in MPI).  Bad settings end the job with one line on rank 0's stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hetcoll.launch",
        description="Run an mpi4py program with MPI.COMM_WORLD a hetcoll.HetComm.",
    )
    parser.add_argument(
        "--platform",
        default=os.environ.get("HETCOLL_PLATFORM"),
        help="platform file or built-in name (default: $HETCOLL_PLATFORM)",
    )
    parser.add_argument("--algo", help="planner of the rooted collectives (Bcast, ...)")
    parser.add_argument("--cube-algo", help="planner of Allreduce, Allgather, Barrier")
    parser.add_argument("--segment-size", type=int, help="default Bcast segment size (bytes)")
    parser.add_argument("--check", choices=("data", "always", "never"), help="agreement check")
    parser.add_argument("--timeout", type=float, help="seconds each collective may take")
    parser.add_argument("--emulate", action="store_true", help="impose the platform's costs")
    parser.add_argument("--tuning", help="a tuning file written by hetcoll tune")
    parser.usage = f"{parser.prog} [options] (script.py | -m module | -c command) [arg ...]"
    return parser


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The launcher's options and the program (from its script, ``-m``, ``-c`` or ``-``
    on: ``-m`` and ``-c`` belong to the program, as for ``python -m mpi4py``)."""
    valued = {
        "--platform",
        "--algo",
        "--cube-algo",
        "--segment-size",
        "--check",
        "--timeout",
        "--tuning",
    }
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c", "-"):
        i += 2 if argv[i] in valued else 1
    return list(argv[:i]), list(argv[i:])


def _settings(args: argparse.Namespace) -> dict:
    given = {
        "algo": args.algo,
        "cube_algo": args.cube_algo,
        "segment_size": args.segment_size,
        "check": args.check,
        "timeout": args.timeout,
        "tuning": args.tuning,
    }
    out = {k: v for k, v in given.items() if v is not None}
    if args.emulate:
        out["emulate"] = True
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Make ``MPI.COMM_WORLD`` a :class:`~hetcoll.HetComm`, run the program, close it."""
    options, program = _split(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(options)
    if not program or (program[0] in ("-m", "-c") and len(program) < 2):
        _parser().error("give the program: script.py, -m module or -c command")
    if not args.platform:
        _parser().error("give --platform (or set HETCOLL_PLATFORM)")
    from mpi4py import MPI
    from mpi4py.run import run_command_line, set_abort_status

    from .errors import HetcollError
    from .hetcomm import HetComm

    world = MPI.COMM_WORLD
    try:
        hc = HetComm(world, args.platform, **_settings(args))
    except HetcollError as exc:  # the same input on every rank: every rank ends here
        if world.rank == 0:
            print(f"hetcoll: error: {exc}", file=sys.stderr, flush=True)
        return 2
    MPI.COMM_WORLD = hc
    # As mpi4py.run.main does: an unhandled exception on one rank aborts the job.
    try:
        run_command_line(program)
        hc.close()
    except SystemExit as exc:
        set_abort_status(exc)
        if exc.code in (None, 0):
            hc.close()
        raise
    except KeyboardInterrupt as exc:
        set_abort_status(exc)
        raise
    except BaseException:
        set_abort_status(1)
        raise
    finally:
        MPI.COMM_WORLD = world
    return 0


if __name__ == "__main__":
    sys.exit(main())
