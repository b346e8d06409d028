"""The planner registry: names -> implementations with metadata (like scipy.optimize's methods)."""

from __future__ import annotations

import inspect
import math
import types
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from ..errors import ArgumentError, PlannerError, PlannerWarning, UnknownPlannerError
from ..units import check_quantity

__all__ = [
    "Option",
    "PlannerInfo",
    "REGISTRY",
    "register",
    "get_planner",
    "warn_unused_options",
]


@dataclass(frozen=True)
class Option:
    """How an option's value is checked, beyond its type: ``Annotated[int, Option(most=4096)]``
    in a planner's signature.

    ``kind`` is :func:`~hetcoll.units.check_quantity`'s (default ``count`` for ``int``,
    ``factor`` for ``float``); the value must be ``>= least`` (default 1 for ``int``, 0 for
    ``float``), ``> above`` and ``<= most`` when given.
    """

    kind: str | None = None
    least: float | None = None
    above: float | None = None
    most: float | None = None


@dataclass(frozen=True)
class PlannerInfo:
    """What the registry knows of a planner.

    ``collectives``: operations it plans; ``models``: cost models it is designed for (None =
    any; under others it still runs on the model's estimates, and the simulator judges the
    result); ``exact_models``: models under which it claims the optimum; ``options``: keyword
    options it accepts; ``max_members``: the largest instance it is meant for; ``kind``:
    ``tree`` (one rooted tree per request), ``exact`` (exhaustive search), ``joint``
    (several multicasts at once), ``hypercube`` (no root) or ``select`` (chooses among the
    others, like ``auto``); ``pipelined``: it plans for the rate of a message cut into
    slices (Beaumont et al.'s planners), not one message's latency; ``own_slices``: given
    no slice size, it cuts the message itself (``forest`` chooses its segment size), so
    it is a candidate for a message given whole too.  :meth:`unfit` is the one rule that
    decides whether a planner is a candidate for a request (``auto``, ``hetcoll compare``,
    the demo).
    """

    name: str
    func: Callable[..., Any]
    collectives: tuple[str, ...]
    paper: str
    complexity: str
    summary: str
    models: tuple[str, ...] | None = None
    exact_models: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    max_members: int | None = None
    kind: str = "tree"
    extra: dict[str, Any] = field(default_factory=dict)
    pipelined: bool = False
    own_slices: bool = False
    single_tree: bool = False

    def serves(self, operation: str) -> bool:
        """Whether this planner plans ``operation`` (a multicast with a broadcast planner on
        the members, a multiple multicast with a multicast planner per group, a rooted
        collective with a broadcast tree planner's tree run backwards:
        :func:`hetcoll.planners.rooted.from_broadcast`)."""
        if operation in self.collectives:
            return True
        if operation == "multicast":
            return "bcast" in self.collectives
        if operation in ROOTED_OPERATIONS:
            return self.reverses()
        return operation == "multi_multicast" and "multicast" in self.collectives

    def reverses(self) -> bool:
        """Whether its broadcast trees serve the rooted collectives (run backwards): a
        planner of one tree per request, for messages in one piece."""
        return self.kind == "tree" and "bcast" in self.collectives and not self.pipelined

    def unfit(
        self, operation: str, model: str, members: int, pipelined: bool | None = None
    ) -> str | None:
        """Why this planner is no candidate for ``operation`` on ``members`` nodes under
        cost model ``model``, or None when it is one: the one applicability rule.

        A candidate plans the operation, is not a selector itself, admits that many members
        (``max_members``) and, when it is an exhaustive search, runs only under the models
        where it is exact (elsewhere it costs exponential time for a heuristic's answer).
        ``models`` do not exclude: a planner designed for another model still gives a
        schedule, and the simulator ranks it on the real one (``gap_aware``, designed for
        the postal model, is often the best under Hockney's).  A ``pipelined`` planner is
        no candidate for a message sent in one piece (``pipelined=False``: its trees
        optimise a steady-state rate there is none of), unless it cuts a message given
        whole itself (``own_slices``).
        """
        if self.kind == "select":
            return f"{self.name} chooses among the others"
        if not self.serves(operation):
            return f"does not plan a {operation}"
        if self.max_members is not None and members > self.max_members:
            return f"at most {self.max_members} members, the request has {members}"
        if self.pipelined and pipelined is False and not self.own_slices:
            return "plans pipelined messages; this one goes in one piece (give a slice size)"
        if self.kind == "exact" and model not in self.exact_models:
            return (
                f"an exhaustive search, exact only under {', '.join(self.exact_models)}, "
                f"not {model}"
            )
        return None

    def known_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The ``options`` this planner accepts; a :class:`~hetcoll.errors.PlannerWarning`
        for each other one, which is then ignored (as scipy's ``minimize`` does with unknown
        solver options)."""
        if options is not None and not isinstance(options, Mapping):
            raise PlannerError(
                f"options: must be a mapping of option names to values, got {options!r}"
            )
        opts = dict(options or {})
        for key in sorted(set(opts) - set(self.options), key=str):
            warnings.warn(
                f"planner {self.name!r} ignores unknown option {key!r} "
                f"(it accepts: {', '.join(self.options) or 'none'})",
                PlannerWarning,
                stacklevel=3,
            )
            del opts[key]
        hints = typing.get_type_hints(self.func, include_extras=True)
        return {key: _checked(f"{self.name}: {key}", v, hints.get(key)) for key, v in opts.items()}

    def option_defaults(self) -> dict[str, Any]:
        """Each option's default value (from the planner's signature)."""
        params = inspect.signature(self.func).parameters
        return {o: params[o].default if o in params else None for o in self.options}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "collectives": list(self.collectives),
            "models": list(self.models) if self.models else None,
            "optimal_under": list(self.exact_models),
            "paper": self.paper,
            "complexity": self.complexity,
            "summary": self.summary,
            "options": list(self.options),
        }


#: The rooted collectives (:data:`hetcoll.schedule.ROOTED_COLLECTIVES`).
ROOTED_OPERATIONS = ("reduce", "gather", "scatter", "allreduce", "allgather", "reduce_scatter")

#: name -> PlannerInfo, filled by the ``@register`` decorators of the planner modules.
REGISTRY: dict[str, PlannerInfo] = {}


def _checked(where: str, value: Any, hint: Any) -> Any:
    """``value`` checked against the type ``hint`` of a planner's parameter (the one check of
    every planner option, from the Python API and the command line alike)."""
    optional, base, rule = _unpack(hint)
    if value is None:
        if optional:
            return None
        raise PlannerError(f"{where}: must be given, got none")
    if base is bool:
        if isinstance(value, bool):
            return value
        raise PlannerError(f"{where}: must be true or false, got {value!r}")
    if base in (int, float):
        return _number(where, value, base, rule or Option())
    if typing.get_origin(base) is Literal:
        choices = typing.get_args(base)
        if isinstance(value, str) and value in choices:
            return value
        raise PlannerError(f"{where}: must be {' or '.join(map(repr, choices))}, got {value!r}")
    if base is str and not isinstance(value, str):
        raise PlannerError(f"{where}: must be text, got {value!r}")
    return value


def _number(where: str, value: Any, base: type, rule: Option) -> int | float:
    whole = base is int
    least = rule.least if rule.least is not None else (1 if whole else 0)
    kind = rule.kind or ("count" if whole else "factor")
    noun = {"count": "an integer", "time": "a time in seconds"}.get(kind, "a number")
    expected = f"{noun} >= {least:g}"
    if rule.above is not None:
        expected = f"{noun} > {rule.above:g}"
    if rule.most is not None:
        expected += f" and <= {rule.most:g}"
    try:
        number = check_quantity(value, kind, where, error=PlannerError)
    except (ArgumentError, PlannerError):
        raise PlannerError(f"{where}: must be {expected}, got {value!r}") from None
    low = number < least or (rule.above is not None and not number > rule.above)
    if low or (rule.most is not None and number > rule.most) or not math.isfinite(number):
        raise PlannerError(f"{where}: must be {expected}, got {value!r}")
    return number


def _unpack(hint: Any) -> tuple[bool, Any, Option | None]:
    """``(None allowed, the base type, its Option)`` of ``Annotated[T, Option] | None``."""
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        optional = type(None) in args
        rest = [a for a in args if a is not type(None)]
        hint = rest[0] if len(rest) == 1 else Any
    rule = None
    if typing.get_origin(hint) is Annotated:
        rule = next((m for m in hint.__metadata__ if isinstance(m, Option)), None)
        hint = typing.get_args(hint)[0]
    return optional, hint, rule


def register(
    name: str,
    *,
    collectives: tuple[str, ...],
    paper: str,
    complexity: str,
    summary: str,
    models: tuple[str, ...] | None = None,
    exact_models: tuple[str, ...] = (),
    options: tuple[str, ...] = (),
    max_members: int | None = None,
    kind: str = "tree",
    pipelined: bool = False,
    own_slices: bool = False,
    single_tree: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator adding a planner function to :data:`REGISTRY` under ``name``."""

    def deco(func: Callable[..., Any]) -> Callable[..., Any]:
        if name in REGISTRY:
            raise RuntimeError(f"planner {name!r} registered twice")
        REGISTRY[name] = PlannerInfo(
            name,
            func,
            collectives,
            paper,
            complexity,
            summary,
            models,
            exact_models,
            options,
            max_members,
            kind,
            pipelined=pipelined,
            own_slices=own_slices,
            single_tree=single_tree,
        )
        return func

    return deco


def get_planner(name: str) -> PlannerInfo:
    """The registry entry for ``name``; :class:`UnknownPlannerError` listing the choices."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        choices = ", ".join(sorted(REGISTRY))
        raise UnknownPlannerError(f"unknown planner {name!r}; choose from: {choices}") from None


def warn_unused_options(
    options: Mapping[str, Any], names: Sequence[str], who: str = "compared planner"
) -> None:
    """One :class:`~hetcoll.errors.PlannerWarning` naming the ``options`` that none of the
    planners ``names`` takes (each planner is then given only those it accepts)."""
    known = {o for n in names if n in REGISTRY for o in REGISTRY[n].options}
    unused = sorted(set(options) - known, key=str)
    if unused:
        warnings.warn(
            f"no {who} takes option(s) {', '.join(map(repr, unused))}; ignored",
            PlannerWarning,
            stacklevel=3,
        )
