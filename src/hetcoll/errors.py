"""Exception hierarchy.

Every error a user can cause derives from :class:`HetcollError`; the CLI turns
it into one line on stderr and exit code 2.  Messages name the culprit and what
was expected, e.g. ``platform.json: links[3].bandwidth: must be > 0, got -1``.
"""

from __future__ import annotations

__all__ = [
    "HetcollError",
    "PlatformError",
    "UnknownNodeError",
    "ScheduleError",
    "PlannerError",
    "UnknownPlannerError",
    "ModelError",
    "CommunicationError",
    "MismatchError",
    "CollectiveTimeoutError",
    "ArgumentError",
    "OutputError",
    "PlannerWarning",
    "KnobWarning",
]


class HetcollError(Exception):
    """Base class of every error caused by bad input to hetcoll."""


class PlatformError(HetcollError, ValueError):
    """A platform description is malformed or inconsistent."""


class UnknownNodeError(HetcollError, KeyError):
    """A node id (root, member) that the platform does not have."""

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return str(self.args[0]) if self.args else ""


class ScheduleError(HetcollError, ValueError):
    """A schedule is invalid: a member misses data, a send precedes its data, a deadlock."""


class ModelError(HetcollError, ValueError):
    """Unknown cost model, bad model parameters, or a model the platform cannot feed."""


class PlannerError(HetcollError, ValueError):
    """A planner cannot handle the request (operation, model, size of instance)."""


class UnknownPlannerError(PlannerError):
    """A planner name that is not registered."""


class ArgumentError(HetcollError, ValueError):
    """A bad value for an argument of a public function or a command-line option (a
    negative seed, a size that is not a size, a non-finite scale factor)."""


class OutputError(HetcollError):
    """A file or directory to write that cannot be written: an empty path, a directory
    where a file goes, a missing or read-only directory, a socket."""


class CommunicationError(HetcollError):
    """The MPI runtime could not run a collective (see the subclasses)."""


class MismatchError(CommunicationError):
    """Ranks disagree on what to run: different platforms, planners or arguments."""


class CollectiveTimeoutError(CommunicationError, TimeoutError):
    """An operation of a collective did not complete before its deadline."""


class PlannerWarning(UserWarning):
    """A planner option that was ignored: an unknown name (like scipy's ``OptimizeWarning``
    for unknown solver options); or part of an answer that nothing certifies (the LP
    optimum's loads past its time limit).  The command line prints it as
    ``hetcoll: warning: ...``."""


class KnobWarning(UserWarning):
    """A tuning knob the user set (``segment_size``, ``spin``) that a tuning file's
    measurements or the model say is slower than hetcoll's default (:mod:`hetcoll.knobs`);
    the knob is obeyed.  Filter it like any warning."""
