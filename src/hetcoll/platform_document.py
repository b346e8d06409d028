"""A platform document (the JSON or YAML form of :mod:`hetcoll.platform`) read into the
parts of a :class:`~hetcoll.platform.Platform`, every field checked where it is, so that a
bad file gets one error naming the field (``links[2].bandwidth: ...``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import PlatformError
from .sizecurve import SizeCurve
from .star import NIC_FIELDS, check_star_document
from .switches import NODE_FIELDS as _SWITCH_NODE_FIELDS
from .switches import TOP_FIELDS as _SWITCH_TOP_FIELDS
from .switches import SwitchNetwork, switch_network_from_dict
from .units import check_quantity

__all__ = [
    "BUSY_FIELDS",
    "LINK_FIELDS",
    "NODE_FIELDS",
    "TOP_FIELDS",
    "DocumentParts",
    "document_parts",
    "kind_of",
]

NODE_FIELDS = {"id", "t_ini", "t_byte", "site", "cluster", "host", "gamma", *NIC_FIELDS}
LINK_FIELDS = {
    "u",
    "v",
    "latency",
    "bandwidth",
    "directed",
    *(f"{side}_{what}" for side in ("send", "recv") for what in ("latency", "bandwidth")),
}
#: optional per-link busy times of the sender and the receiver (Beaumont et al. Sec. 2.1)
BUSY_FIELDS = ("send_latency", "send_bandwidth", "recv_latency", "recv_bandwidth")
TOP_FIELDS = {"model", "nodes", "links", "latency", "bandwidth", "name", "description"}
TOP_FIELDS.add("size_curve")


def kind_of(value: Any) -> str:
    """How an error names a value of the wrong kind: "an object", "a list" or its repr."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return repr(value) if len(repr(value)) <= 40 else type(value).__name__


@dataclass(frozen=True)
class DocumentParts:
    """A platform document's checked parts, in :class:`~hetcoll.platform.Platform`'s
    order: each node's and each link's fields (keyword arguments of ``Node`` and ``Link``),
    the matrices, the model, the name, the switches and the size curve."""

    nodes: list[dict[str, Any]]
    links: list[dict[str, Any]]
    latency: np.ndarray | None
    bandwidth: np.ndarray | None
    model: Any
    name: str
    switches: SwitchNetwork | None
    size_curve: SizeCurve | None


def _expect_mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PlatformError(f"{where}: must be an object, got {type(value).__name__}")
    return value


def _unknown(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        prefix = f"{where}." if where else ""
        raise PlatformError(
            f"{prefix}{extra[0]}: unknown field (expected one of: {', '.join(sorted(allowed))})"
        )


def _number(value: Any, where: str, kind: str) -> float:
    return check_quantity(value, kind, where, error=PlatformError)


def _node_id(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise PlatformError(f"{where}: must be a string, got {value!r}")
    text = str(value)
    if not text:
        raise PlatformError(f"{where}: must be a non-empty string")
    return text


def _label(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise PlatformError(f"{where}: must be a string, got {value!r}")
    return str(value)


def _matrix(value: Any, where: str, kind: str) -> np.ndarray:
    if not isinstance(value, list):
        raise PlatformError(f"{where}: must be a list of rows, got {kind_of(value)}")
    rows = []
    width = None
    for i, row in enumerate(value):
        if not isinstance(row, list):
            raise PlatformError(f"{where}[{i}]: must be a list of numbers, got {kind_of(row)}")
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise PlatformError(
                f"{where}: is not square (row {i} has {len(row)} entries, row 0 has {width})"
            )
        rows.append([_entry(x, f"{where}[{i}][{j}]", kind, i == j) for j, x in enumerate(row)])
    return np.array(rows, dtype=float).reshape(len(rows), width or 0)


def _entry(x: Any, where: str, kind: str, diagonal: bool) -> float:
    if kind == "bandwidth" and diagonal and not isinstance(x, bool) and x == 0:
        return math.inf  # a bandwidth to itself is never used: 0 there is fine
    return _number(x, where, kind)


def document_parts(data: Any) -> DocumentParts:
    """The parts of the platform a document describes (the module docstring of
    :mod:`hetcoll.platform` shows its forms), each field checked: an unknown field, a
    missing id or end, a value of the wrong kind or out of range raises a
    :class:`~hetcoll.errors.PlatformError` naming where it is (``nodes[3].t_ini``).  The
    platform's own checks (ids, ends, connectivity) follow when it is built.  O(size of
    the document)."""
    data = _expect_mapping(data, "platform")
    _unknown(data, TOP_FIELDS | _SWITCH_TOP_FIELDS, "")
    if "nodes" not in data:
        raise PlatformError("nodes: missing (a platform must list its nodes)")
    raw_nodes = data["nodes"]
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise PlatformError("nodes: must be a non-empty list")
    nodes = []
    for i, raw in enumerate(raw_nodes):
        where = f"nodes[{i}]"
        raw = _expect_mapping(raw, where)
        _unknown(raw, NODE_FIELDS | _SWITCH_NODE_FIELDS, where)
        if "id" not in raw:
            raise PlatformError(f"{where}.id: missing")
        nodes.append(
            dict(
                id=_node_id(raw["id"], f"{where}.id"),
                t_ini=_number(raw.get("t_ini", 0.0), f"{where}.t_ini", "time"),
                t_byte=_number(raw.get("t_byte", 0.0), f"{where}.t_byte", "time"),
                site=_label(raw.get("site"), f"{where}.site"),
                cluster=_label(raw.get("cluster"), f"{where}.cluster"),
                host=_label(raw.get("host"), f"{where}.host"),
                gamma=_number(raw.get("gamma", 0.0), f"{where}.gamma", "time"),
                bandwidth=(
                    _number(raw["bandwidth"], f"{where}.bandwidth", "bandwidth")
                    if "bandwidth" in raw
                    else None
                ),
                latency=_number(raw.get("latency", 0.0), f"{where}.latency", "time"),
            )
        )
    links = []
    raw_links = data.get("links", [])
    if not isinstance(raw_links, list):
        raise PlatformError("links: must be a list")
    for k, raw in enumerate(raw_links):
        where = f"links[{k}]"
        raw = _expect_mapping(raw, where)
        _unknown(raw, LINK_FIELDS, where)
        for end in ("u", "v"):
            if end not in raw:
                raise PlatformError(f"{where}.{end}: missing")
        directed = raw.get("directed", False)
        if not isinstance(directed, bool):
            raise PlatformError(f"{where}.directed: must be true or false, got {kind_of(directed)}")
        busy = {
            key: _number(
                raw[key], f"{where}.{key}", "bandwidth" if key.endswith("bandwidth") else "time"
            )
            for key in BUSY_FIELDS
            if key in raw
        }
        links.append(
            dict(
                u=_node_id(raw["u"], f"{where}.u"),
                v=_node_id(raw["v"], f"{where}.v"),
                latency=_number(raw.get("latency", 0.0), f"{where}.latency", "time"),
                bandwidth=_number(
                    raw.get("bandwidth", math.inf), f"{where}.bandwidth", "bandwidth"
                ),
                directed=directed,
                **busy,
            )
        )
    latency = bandwidth = None
    check_star_document(data, raw_nodes)
    if "latency" in data:
        latency = _matrix(data["latency"], "latency", "time")
    if "bandwidth" in data:
        bandwidth = _matrix(data["bandwidth"], "bandwidth", "bandwidth")
    for key in ("name", "description"):
        if not isinstance(data.get(key, ""), str):
            raise PlatformError(f"{key}: must be a string, got {kind_of(data[key])}")
    name = data.get("name", "")
    switches = switch_network_from_dict(data, raw_nodes)
    model, curve = data.get("model", "tini"), data.get("size_curve")
    curve = None if curve is None else SizeCurve.from_list(curve)
    return DocumentParts(nodes, links, latency, bandwidth, model, name, switches, curve)
