"""The engine: run hetcoll schedules over mpi4py, emulate heterogeneity, probe and measure.

The engine receives :class:`~hetcoll.schedule.Schedule` objects and runs them; it never
plans or predicts.  Importing a submodule that needs MPI (``comm``, ``transport``, ...)
initialises MPI; ``import hetcoll.runtime`` alone does not.

- :mod:`.executor`: one rank's part of a program, an object with the simulator's steps
  (post, start a send, arrive, complete), native or emulated timing, any transport;
- :mod:`.transport`: the MPI transport (tags, headers with the call's digest);
  :mod:`.notices`: a rank that finds a disagreement tells the others;
- :mod:`.buffers`: mpi4py buffer specs, derived datatypes, ``IN_PLACE``;
- :mod:`.comm`: :class:`ScheduleComm`, schedules on a private communicator (planning
  injected); :mod:`.collectives`: mpi4py's collectives on it; :mod:`.reduce`: the data
  handlers of the hypercube collectives;
- :mod:`.emulation`: a platform's costs imposed on a homogeneous machine;
- :mod:`.measure`, :mod:`.probe`, :mod:`.forecast`, :mod:`.launch`: measuring, probing and
  starting ``mpiexec``.

``HetComm`` — the engine with hetcoll's planners plugged in — lives one layer up, in
:mod:`hetcoll.hetcomm`; ``from hetcoll.runtime import HetComm`` still works.  What the
engine runs is measured next to the simulator's prediction in :mod:`hetcoll.jobs`.
"""

from __future__ import annotations

import importlib

__all__ = [
    "BarrierHandler",
    "ByteRanges",
    "Collectives",
    "CubeHandler",
    "DataHandler",
    "Emulator",
    "Executor",
    "GatherHandler",
    "HetComm",
    "ReduceHandler",
    "ScheduleComm",
    "as_bytes",
    "message",
    "rank_plan",
    "typed_buffer",
]

_WHERE = {
    "BarrierHandler": ".reduce",
    "ByteRanges": ".executor",
    "Collectives": ".collectives",
    "CubeHandler": ".reduce",
    "DataHandler": ".executor",
    "Emulator": ".emulation",
    "Executor": ".executor",
    "GatherHandler": ".reduce",
    "ReduceHandler": ".reduce",
    "ScheduleComm": ".comm",
    "as_bytes": ".buffers",
    "message": ".buffers",
    "rank_plan": ".executor",
    "typed_buffer": ".buffers",
}


def __getattr__(name: str):
    # Lazily, so that importing the package (for launch, say) does not initialise MPI.
    if name == "HetComm":  # the front door, one layer up (the engine does not plan)
        return importlib.import_module("hetcoll.hetcomm").HetComm
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module 'hetcoll.runtime' has no attribute {name!r}")
