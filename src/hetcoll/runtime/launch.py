"""Find the environment's ``mpiexec`` and start hetcoll jobs with it (no MPI in this process).

Always the launcher installed next to the running Python (the ``mpich`` wheel puts it in
the virtual environment's ``bin``): a foreign ``mpiexec`` on ``PATH`` would start N
separate singleton jobs.  Ranks run ``python -m mpi4py``, so that an exception on one rank
aborts the whole job instead of leaving the others waiting.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import HetcollError

__all__ = ["mpiexec", "mpi_command", "run_mpi"]


def mpiexec() -> Path:
    """The ``mpiexec`` of this Python environment; :class:`HetcollError` if there is none."""
    here = Path(sys.executable).with_name("mpiexec")
    if here.exists():
        return here
    found = shutil.which("mpiexec", path=str(Path(sys.executable).parent))
    if found:
        return Path(found)
    raise HetcollError(
        f"no mpiexec next to {sys.executable}: install the 'mpich' wheel in this environment "
        "(pip install mpich)"
    )


def mpi_command(nprocs: int, args: Sequence[str], *, module: bool = True) -> list[str]:
    """``[mpiexec, -n, N, python, -m, mpi4py, (-m) args...]``.

    With ``module`` the first of ``args`` is a module name (``hetcoll``), else a script path.
    """
    if nprocs < 1:
        raise HetcollError(f"number of ranks must be >= 1, got {nprocs}")
    head = [str(mpiexec()), "-n", str(nprocs), sys.executable, "-m", "mpi4py"]
    return head + (["-m"] if module else []) + [str(a) for a in args]


def run_mpi(
    nprocs: int,
    args: Sequence[str],
    *,
    timeout: float,
    module: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run a job to completion (``subprocess.run``, text output captured).

    :class:`HetcollError` if it does not finish within ``timeout`` seconds (the job is
    killed), so a caller never hangs on a stuck job.
    """
    cmd = mpi_command(nprocs, args, module=module)
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    if env:
        full_env.update(env)
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)
    except subprocess.TimeoutExpired:
        raise HetcollError(
            f"MPI job did not finish within {timeout:g} s: {' '.join(cmd)}"
        ) from None
