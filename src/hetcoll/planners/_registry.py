"""The planner registry: names -> implementations with metadata (like scipy.optimize's methods)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import UnknownPlannerError

__all__ = ["PlannerInfo", "REGISTRY", "register", "get_planner"]


@dataclass(frozen=True)
class PlannerInfo:
    """What the registry knows of a planner.

    ``collectives``: operations it plans; ``models``: cost models it is designed for (None =
    any; others still run but use estimates); ``exact_models``: models under which it claims
    the optimum; ``options``: keyword options it accepts; ``max_members``: the largest
    instance it is meant for (``auto`` skips it beyond).
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


#: name -> PlannerInfo, filled by the ``@register`` decorators of the planner modules.
REGISTRY: dict[str, PlannerInfo] = {}


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
