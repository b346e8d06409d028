"""Experiment registry, configuration, results and the parallel trial runner."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..errors import HetcollError

__all__ = [
    "Config",
    "Result",
    "Experiment",
    "EXPERIMENTS",
    "experiment",
    "get_experiment",
    "run_trials",
]


@dataclass(frozen=True)
class Config:
    """What the user chose: ``trials`` (None = the paper's count), ``seed``, ``workers``,
    ``progress`` (show a bar on stderr), experiment-specific ``params``, and ``executor``:
    a ``concurrent.futures`` executor the trials run through instead of local processes
    (``mpi4py.futures.MPIPoolExecutor`` across machines: ``hetcoll reproduce --executor
    mpi``); pass it on to :func:`run_trials`.  The results do not depend on it."""

    trials: int | None = None
    seed: int = 0
    workers: int | None = None
    progress: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    executor: Executor | None = None


@dataclass
class Result:
    """An experiment's output: ``data`` (JSON), ``tables`` (text), ``figures`` (names)."""

    name: str
    data: dict[str, Any]
    tables: list[str]
    figures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Experiment:
    name: str
    func: Callable[[Config], Result]
    paper: str
    summary: str
    #: it starts an MPI job of its own (emulated ranks): it cannot run inside another
    launches_mpi: bool = False
    #: the ``config.params`` it takes from the command line's options (``"sizes"``:
    #: ``hetcoll reproduce NAME --sizes``); the command refuses the others
    takes: tuple[str, ...] = ()


#: name -> Experiment, filled by ``@experiment`` in the experiment modules.
EXPERIMENTS: dict[str, Experiment] = {}


def experiment(
    name: str,
    *,
    paper: str,
    summary: str,
    launches_mpi: bool = False,
    takes: tuple[str, ...] = (),
):
    """Decorator registering ``func(config) -> Result`` as ``hetcoll reproduce NAME``
    (``launches_mpi``: it starts its own MPI job, so ``--executor mpi`` is refused;
    ``takes``: the ``config.params`` it reads from the command's options, e.g.
    ``("sizes",)``)."""

    def deco(func: Callable[[Config], Result]) -> Callable[[Config], Result]:
        EXPERIMENTS[name] = Experiment(name, func, paper, summary, launches_mpi, takes)
        return func

    return deco


def get_experiment(name: str) -> Experiment:
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise HetcollError(
            f"unknown experiment {name!r}; choose from: {', '.join(sorted(EXPERIMENTS))}"
        ) from None


def run_trials(
    func: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    workers: int | None = None,
    progress: bool = False,
    description: str = "trials",
    executor: Executor | None = None,
    chunksize: int | None = None,
) -> list[Any]:
    """``[func(t) for t in tasks]``, spread over processes, in task order.

    ``func`` must be a module-level function and each task picklable (so that
    ``mpi4py.futures.MPIPoolExecutor`` can be passed as ``executor`` on a cluster).  With
    ``workers=1`` everything runs in this process.  A progress bar goes to stderr.
    """
    tasks = list(tasks)
    # never more processes than tasks: a worker with nothing to do only costs a fork
    workers = min(len(tasks), workers if workers is not None else os.cpu_count() or 1)
    if chunksize is None:
        chunksize = max(1, len(tasks) // (8 * max(workers, 1)))
    if executor is None and workers <= 1:
        return list(_progress(map(func, tasks), len(tasks), progress, description))
    own = executor is None
    pool = executor or ProcessPoolExecutor(max_workers=workers)
    try:
        results = pool.map(func, tasks, chunksize=chunksize)
        return list(_progress(results, len(tasks), progress, description))
    finally:
        if own:
            pool.shutdown(cancel_futures=True)


def _progress(it: Iterable[Any], total: int, show: bool, description: str) -> Iterable[Any]:
    if not show:
        return it
    from rich.console import Console
    from rich.progress import track

    return track(
        it, total=total, description=description, console=Console(stderr=True), transient=True
    )
