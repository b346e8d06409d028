"""What a job measures: :class:`Run`, plain data that crosses the process boundary as JSON."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..errors import HetcollError

__all__ = ["CUBE_OPERATIONS", "DEFAULT", "Run", "runs_from_spec"]

CUBE_OPERATIONS = ("allreduce", "allgather", "barrier")
#: the name of what a default ``HetComm`` runs per call (no ``algo``: its choice)
DEFAULT = "default"


@dataclass(frozen=True)
class Run:
    """One platform and operation measured by every rank of a job: one result document per
    message size (:mod:`hetcoll.jobs.document`).

    Attributes
    ----------
    platform
        A platform dict, file or built-in name (a :class:`~hetcoll.platform.Platform` when
        the ranks build the run themselves, as ``hetcoll run`` does).
    operation : str
        ``bcast`` (latency as Banikazemi et al. 1998, Sec. 7.1.2, measure it), or a
        hypercube ``allreduce`` (int64 sum), ``allgather`` or ``barrier`` (every rank
        starts at an agreed time; the call lasts until the last rank returns).
    algorithm : str, optional
        The planner measured (default ``fnf``; ``eff_cube`` for a hypercube).  For a
        hypercube operation :data:`DEFAULT` (``"default"``, here or among the baselines)
        measures what a default ``HetComm`` runs, each call without ``algo`` (its choice,
        :func:`hetcoll.choice.choose`: a plan or MPI's algorithm); its entry names the plan
        it ran (``chosen``).
    baselines : tuple of str
        Other planners measured the same way, next to it.
    options : dict, optional
        Planner options (``hetcoll planners NAME`` lists them); each planner measured gets
        those it accepts.
    native : bool
        Also measure MPI's own collective: the communicator's (``native``) and, under
        emulation, MPICH's algorithm for the call emulated (``mpi``, the fair baseline).
    root : str, optional
        A broadcast's source (default: the first node).
    sizes : tuple of int, optional
        Message sizes (a hypercube: each rank's contribution); default 4 B for a broadcast,
        8 B for an allreduce or allgather, 0 for a barrier.  Empty: measure nothing (a run
        that only probes).
    segment_size : int, optional
        A broadcast's pipelining.
    repeat : int
        Timed repetitions (the least is reported).
    rounds : int
        A hypercube operation: measure every algorithm ``repeat`` times per round, the
        algorithms in turn and their order reversed from one round to the next, so that
        a slow spell of the host falls on all of them alike; each entry's ``per_round``
        holds its least time of each round (paired ratios, round by round).
    loop : int
        A hypercube: also time that many calls back to back (0: not).
    settle : float, optional
        Seconds between agreeing on a start time and the start.
    emulate, time_scale, timeout
        As :class:`~hetcoll.runtime.HetComm` takes them.
    probe : dict, optional
        Probe the (emulated) platform first with these options
        (:func:`~hetcoll.runtime.probe.probe`) and report how the probed platform compares
        with the true one.
    """

    platform: Any
    operation: str = "bcast"
    algorithm: str | None = None
    baselines: tuple[str, ...] = ()
    options: dict[str, Any] | None = None
    native: bool = True
    root: str | None = None
    sizes: tuple[int, ...] | None = None
    segment_size: int | None = None
    repeat: int = 5
    rounds: int = 1
    loop: int = 0
    settle: float | None = None
    emulate: bool = True
    time_scale: float = 1.0
    timeout: float = 60.0
    probe: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.operation not in ("bcast", *CUBE_OPERATIONS):
            raise HetcollError(
                f"operation: expected bcast, {', '.join(CUBE_OPERATIONS)}, got {self.operation!r}"
            )
        if self.repeat < 1:
            raise HetcollError(f"repeat: must be >= 1, got {self.repeat}")
        if self.rounds < 1:
            raise HetcollError(f"rounds: must be >= 1, got {self.rounds}")
        if self.loop < 0:
            raise HetcollError(f"loop: must be >= 0, got {self.loop}")
        object.__setattr__(self, "baselines", tuple(self.baselines))
        if not self.cube and DEFAULT in (self.algorithm, *self.baselines):
            raise HetcollError(f"{DEFAULT}: measured for {', '.join(CUBE_OPERATIONS)} only")
        if self.sizes is not None:
            object.__setattr__(self, "sizes", tuple(int(n) for n in self.sizes))

    @property
    def cube(self) -> bool:
        return self.operation in CUBE_OPERATIONS

    @property
    def planner(self) -> str:
        """The planner measured: ``algorithm`` or the operation's default."""
        return self.algorithm or ("eff_cube" if self.cube else "fnf")

    @property
    def message_sizes(self) -> tuple[int, ...]:
        if self.sizes is not None:
            return self.sizes
        return ((0,) if self.operation == "barrier" else (8,)) if self.cube else (4,)

    @property
    def settle_time(self) -> float:
        if self.settle is not None:
            return self.settle
        return 5e-3 if self.cube else 2e-3

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if not isinstance(out["platform"], dict | str):
            out["platform"] = self.platform.to_dict()
        out["probe"] = None if self.probe is None else dict(self.probe)
        out["baselines"] = list(self.baselines)
        out["sizes"] = None if self.sizes is None else list(self.sizes)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise HetcollError(
                f"job spec: unknown run key(s) {', '.join(unknown)}; expected: "
                + ", ".join(sorted(known))
            )
        if "platform" not in data:
            raise HetcollError("job spec: a run needs a 'platform'")
        return cls(**data)


def runs_from_spec(spec: dict[str, Any]) -> list[Run]:
    """The runs of a job spec ``{"runs": [RUN, ...]}``."""
    if not isinstance(spec, dict) or not isinstance(spec.get("runs"), list):
        raise HetcollError('job spec: expected {"runs": [...]}')
    return [Run.from_dict(r) for r in spec["runs"]]
