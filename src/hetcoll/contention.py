"""Link contention of a schedule on a switch network: which transfers would share a link.

Wormhole routing holds every directed switch-to-switch link of a route while the message's
flits are in the network (Hsu et al. 2005, Sec. 2.1; the ``switch`` model's ``link_hold``
says when: :mod:`hetcoll.models.switch`); a transfer that needs a held link waits for it.
:func:`contention` answers two questions about a schedule:

- **overlaps**: run it with links that never block (``contention="none"``) and list every
  pair of transfers that hold the same directed link at the same time -- the contention
  the schedule *causes*;
- **delays**: run it as hetcoll predicts it (exclusive links) and list, for every transfer
  that waited for a link, the transfer that held it -- who delayed whom.

A schedule is contention-free when it has no overlap; then both runs give the same times.
(:func:`hetcoll.steps.step_conflicts` gives the step-wise view of the papers.)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .errors import ModelError
from .models import get_model
from .platform import Platform
from .schedule import Schedule
from .simulator import Prediction, Transfer, simulate

__all__ = ["Overlap", "Delay", "ContentionReport", "contention", "transfer_records"]


@dataclass(frozen=True)
class Overlap:
    """Transfers ``first`` and ``second`` (indices into :attr:`ContentionReport.transfers`)
    both hold directed link ``link = (from, to)`` during ``[start, end)``."""

    link: tuple[str, str]
    first: int
    second: int
    start: float
    end: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "link": list(self.link),
            "first": self.first,
            "second": self.second,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True)
class Delay:
    """In the predicted run, transfer ``transfer`` waited for ``link``, held by ``by``
    (indices into :attr:`ContentionReport.predicted` transfers)."""

    transfer: int
    by: int
    link: tuple[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"transfer": self.transfer, "by": self.by, "link": list(self.link)}


@dataclass(frozen=True)
class ContentionReport:
    """What :func:`contention` found.

    ``transfers`` are the contention-free run's (with links that never block), ``overlaps``
    the pairs of them that share a directed link in time; ``predicted`` is the run with
    exclusive links and ``delays`` its transfers that waited for a link.
    """

    transfers: list[Transfer]
    overlaps: list[Overlap]
    predicted: Prediction
    delays: list[Delay]

    @property
    def free(self) -> bool:
        """No two transfers ever share a directed link."""
        return not self.overlaps

    def to_dict(self) -> dict[str, Any]:
        def pair(i: int) -> list[str]:
            t = self.transfers[i]
            return [t.sender, t.receiver]

        return {
            "contention_free": self.free,
            "overlaps": [
                {**o.to_dict(), "transfers": [pair(o.first), pair(o.second)]} for o in self.overlaps
            ],
            "delays": [d.to_dict() for d in self.delays],
        }


def _switch_model(platform: Platform, model: Any):
    cost_model = get_model(model) if model is not None else platform.model
    if cost_model.name != "switch":
        raise ModelError(
            f"contention: needs the 'switch' model on a switch platform, got model "
            f"{cost_model.name!r}"
        )
    return cost_model


def contention(platform: Platform, schedule: Schedule, model: Any = None) -> ContentionReport:
    """List the link contention of ``schedule`` on a switch platform (module docstring).

    Parameters
    ----------
    platform : Platform
        A switch platform (``platform.switches``).
    schedule : Schedule
    model : optional
        A ``switch`` model (its route choice is used); the platform's by default.

    Returns
    -------
    ContentionReport

    Raises
    ------
    ModelError
        If the model is not ``switch`` (or the platform has no switches).

    Notes
    -----
    Two simulations and a sweep over each link's transfers sorted by start: O(M log M) plus
    the routes' lengths.

    Examples
    --------
    ``a`` sends to ``c`` and then to ``d``, both on ``x1``: its second worm enters ``x0 -> x1``
    (after ``O_send`` = 110 us) before the first's tail is through (``O_trans`` = 128 us).

    >>> from hetcoll import Platform, Schedule, Tree, Flow
    >>> p = Platform.from_dict({"model": "switch",
    ...     "switches": [{"id": "x0"}, {"id": "x1"}], "switch_links": [["x0", "x1"]],
    ...     "nodes": [{"id": "a", "switch": "x0", "type": 1},
    ...               {"id": "b", "switch": "x0", "type": 1},
    ...               {"id": "c", "switch": "x1", "type": 1},
    ...               {"id": "d", "switch": "x1", "type": 1}]})
    >>> tree = Tree("a", {"a": ("c", "d", "b")})
    >>> s = Schedule("bcast", "hand", 1000, (Flow(tree, 1000),))
    >>> report = contention(p, s)
    >>> [(o.link, report.transfers[o.first].receiver, report.transfers[o.second].receiver)
    ...  for o in report.overlaps]
    [(('x0', 'x1'), 'c', 'd')]
    """
    cost_model = _switch_model(platform, model)
    free_model = dataclasses.replace(cost_model, contention="none")
    free_run = simulate(platform, schedule, free_model)
    bound = free_model.bind(platform)
    index = platform.index
    users: dict[int, list[int]] = {}
    transfers = free_run.transfers
    held = [held_window(bound, index, t) for t in transfers]
    for i, t in enumerate(transfers):
        if held[i][1] > held[i][0]:
            for link in bound.links(index(t.sender), index(t.receiver)):
                users.setdefault(link, []).append(i)
    overlaps: list[Overlap] = []
    for link, ids in users.items():
        ids.sort(key=lambda i: (held[i][0], i))
        active: list[int] = []
        for i in ids:
            begin, end_i = held[i]
            active = [j for j in active if held[j][1] > begin]
            for j in active:
                end = min(held[j][1], end_i)
                if end > begin:
                    overlaps.append(Overlap(bound.resource_name(link), j, i, begin, end))
            active.append(i)
    overlaps.sort(key=lambda o: (o.start, o.first, o.second, o.link))
    predicted = simulate(platform, schedule, cost_model)
    delays = [
        Delay(i, t.blocked_by, t.blocked_link)
        for i, t in enumerate(predicted.transfers)
        if getattr(t, "blocked_on", None) == "link"
    ]
    return ContentionReport(transfers, overlaps, predicted, delays)


def held_window(bound, index, t: Transfer) -> tuple[float, float]:
    """``[from, to)``: when transfer ``t`` holds the links of its route (the model's
    :meth:`~hetcoll.models.BoundModel.link_window`; the whole transfer when it has none)."""
    window = bound.link_window(index(t.sender), index(t.receiver), t.nbytes)
    if window is None:
        return t.start, t.arrival
    return t.start + window[0], t.start + window[0] + window[1]


def transfer_records(
    platform: Platform, prediction: Prediction, model: Any = None
) -> list[dict[str, Any]]:
    """The transfers of a prediction on a switch platform as ``hetcoll plan --json`` gives
    them: ``sender``, ``receiver``, ``start``, ``arrival`` (seconds), ``hold`` (``[from,
    to]``: when the route's links are held, by the model's ``link_hold``) and ``route``
    (the switch ids crossed, from the sender's switch to the receiver's)."""
    bound = _switch_model(platform, model).bind(platform)
    index = platform.index
    out = []
    for t in prediction.transfers:
        record = t.to_dict()
        record["hold"] = list(held_window(bound, index, t))
        record["route"] = bound.route_ids(index(t.sender), index(t.receiver))
        out.append(record)
    return out
