"""Cost models: how one point-to-point transfer occupies the sender, the path and the receiver.

=========  ================================================================================
name       model
=========  ================================================================================
tini       sender-only ``t_ini + n t_byte`` (Banikazemi et al. 1998)
hockney    ``alpha + n / beta`` per route, one-port, link contention (exclusive or shared)
postal     pairwise latency, non-blocking sends, LogP overhead/gap (Park et al. eq. 2)
one_port   bidirectional one-port on the links' digraph (Beaumont et al. 2004)
one_port_uni  unidirectional one-port on the links' digraph
multi_port sender busy send_u, links in parallel (Bar-Noy et al.; Beaumont et al. 3.2)
switch     Hsu et al. eq. (1)-(5): node overheads + per-hop switch costs, wormhole contention
nic        a star: per-node full-duplex NICs into one switch, max-min fair sharing
=========  ================================================================================

``get_model("postal")``, ``get_model({"name": "postal", "gap": 2e-6})`` or a model instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ModelError
from .base import BoundModel, CostModel, TransferCosts
from .graph import MultiPortModel, OnePortModel, OnePortUniModel
from .hockney import HockneyModel
from .nic import NicModel
from .postal import PostalModel
from .switch import SwitchModel
from .tini import TiniModel

__all__ = [
    "MODELS",
    "BoundModel",
    "CostModel",
    "HockneyModel",
    "MultiPortModel",
    "NicModel",
    "OnePortModel",
    "OnePortUniModel",
    "PostalModel",
    "SwitchModel",
    "TiniModel",
    "TransferCosts",
    "get_model",
]

MODELS: dict[str, type[CostModel]] = {
    cls.name: cls
    for cls in (
        TiniModel,
        HockneyModel,
        PostalModel,
        SwitchModel,
        OnePortModel,
        OnePortUniModel,
        MultiPortModel,
        NicModel,
    )
}


def get_model(spec: Any) -> CostModel:
    """A :class:`CostModel` from a name, a ``{"name": ..., **params}`` mapping or an instance."""
    if isinstance(spec, CostModel):
        return spec
    if isinstance(spec, str):
        name, params = spec, {}
    elif isinstance(spec, Mapping):
        if "name" not in spec:
            raise ModelError('model: a model object needs a \'name\' (e.g. {"name": "postal"})')
        name, params = spec["name"], {k: v for k, v in spec.items() if k != "name"}
    else:
        raise ModelError(f"model: expected a name or an object, got {_kind(spec)}")
    if not isinstance(name, str):
        raise ModelError(f"model: name must be a string, got {_kind(name)}")
    if name not in MODELS:
        raise ModelError(f"unknown model {name!r}; choose from: {', '.join(sorted(MODELS))}")
    bad_key = next((k for k in params if not isinstance(k, str)), None)
    if bad_key is not None:
        raise ModelError(f"model {name!r}: parameter names are strings, got {bad_key!r}")
    return MODELS[name].from_params(params)


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else type(value).__name__
