"""The ``hetcoll`` command line.

Exit codes: 0 success; 1 an operation ran and failed (e.g. data mismatch after a collective);
2 bad input, with one line ``hetcoll: error: ...`` on stderr and nothing written.
With ``--json`` one JSON document goes to stdout and everything for humans to stderr.

The commands live by concern: :mod:`.planning` (planners, plan, simulate, export, compare),
:mod:`.reproduce` and :mod:`.runtime` (run, probe, demo); :mod:`._base` holds the group.
"""

from __future__ import annotations

import os
import sys

import click

from ..errors import HetcollError
from . import analysis, export, planning, reproduce, runtime, tune  # noqa: F401  (registers)
from ._base import cli

__all__ = ["main", "cli"]


# -- entry point ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Console entry point: click, with every user error as one line and exit code 2."""
    try:
        rv = cli.main(args=argv, prog_name="hetcoll", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # bare `hetcoll`: help, not an error
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except click.UsageError as exc:
        return _fail(exc.format_message())
    except click.ClickException as exc:
        return _fail(exc.format_message())
    except HetcollError as exc:
        from ..errors import CommunicationError

        # a communication error may be one rank's own: every rank says it
        return _fail(str(exc), everywhere=isinstance(exc, CommunicationError))
    except click.exceptions.Abort:
        click.echo("hetcoll: aborted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    code = rv if isinstance(rv, int) else 0
    return code


def _fail(message: str, everywhere: bool = False) -> int:
    first = " ".join(str(message).split())
    if everywhere or _mpi_rank() == 0:
        click.echo(f"hetcoll: error: {first}", err=True)
    return 2


def _mpi_rank() -> int:
    """This process's rank under mpiexec once MPI is initialised (0 otherwise).

    Under mpiexec every rank parses the same arguments and hits the same bad input: only
    rank 0 prints it, every rank exits 2."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        return mpi.COMM_WORLD.rank
    # before MPI is initialised: what the launcher told this process (MPICH, Open MPI, PMIx)
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
