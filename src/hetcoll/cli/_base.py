"""What every hetcoll command shares: the click group, option types, small helpers."""

from __future__ import annotations

import json

import click

from ..errors import HetcollError, PlannerError
from ..units import parse_size


class _Size(click.ParamType):
    name = "bytes"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


SIZE = _Size()


class _Model(click.ParamType):
    """A model name (``postal``) or a JSON object with parameters
    (``'{"name": "postal", "gap": 2e-6}'``), validated by :func:`hetcoll.models.get_model`."""

    name = "model"

    def convert(self, value, param, ctx):
        if not isinstance(value, str) or not value.lstrip().startswith("{"):
            return value
        try:
            spec = json.loads(value)
        except json.JSONDecodeError as exc:
            self.fail(f"not a model name or a JSON object: {exc}", param, ctx)
        if not isinstance(spec, dict):
            self.fail("a model object must be a JSON object", param, ctx)
        return spec


MODEL = _Model()
JSON_OPT = click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")


def _ids(text: str | None, what: str) -> list[str] | None:
    if text is None:
        return None
    ids = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in ids):
        raise PlannerError(f"{what}: expected comma-separated node ids, got {text!r}")
    return ids


def _platform(path: str):
    from ..platform import load_platform

    return load_platform(path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hetcoll", prog_name="hetcoll")
def cli() -> None:
    """Plan, simulate and run collectives on heterogeneous networks."""


def _positive(value, name: str) -> None:
    if value is not None and not value > 0:
        raise HetcollError(f"{name}: must be > 0, got {value}")
