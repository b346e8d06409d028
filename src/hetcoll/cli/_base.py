"""What every hetcoll command shares: the click group, option types, small helpers.

Option types check their values when click parses them, before a command does any work
(and, under mpiexec, before any MPI call): sizes, numbers, model objects and output paths
go through the same validators as files do (:func:`hetcoll.units.check_quantity`,
:func:`hetcoll.files.check_output`).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator

import click

from ..errors import ArgumentError, HetcollError, ModelError, PlannerError
from ..units import check_quantity


class _Quantity(click.ParamType):
    """A number checked by :func:`~hetcoll.units.check_quantity` (units allowed)."""

    def __init__(self, kind: str, positive: bool = False) -> None:
        self.kind, self.positive = kind, positive
        self.name = {"size": "bytes", "time": "seconds", "factor": "number"}.get(kind, kind)

    def convert(self, value, param, ctx):
        try:
            return check_quantity(value, self.kind, "", positive=self.positive)
        except ArgumentError as exc:
            self.fail(str(exc), param, ctx)


SIZE = _Quantity("size")
POSITIVE_SIZE = _Quantity("size", positive=True)
#: a finite number > 0 (``--time-scale``, ``--timeout``: no NaN, no infinity)
POSITIVE = _Quantity("factor", positive=True)
#: a finite number >= 0 (``--tolerance``)
NON_NEGATIVE = _Quantity("factor")


class _Model(click.ParamType):
    """A model name (``postal``) or a JSON object with parameters
    (``'{"name": "postal", "gap": 2e-6}'``), validated by :func:`hetcoll.models.get_model`."""

    name = "model"

    def convert(self, value, param, ctx):
        from ..files import parse_document
        from ..models import get_model

        if not isinstance(value, str):
            return value
        spec = value
        if value.lstrip().startswith("{"):
            try:
                spec = parse_document(value, "json", ModelError)
            except ModelError as exc:
                self.fail(f"not a model name or a JSON object: {exc}", param, ctx)
        try:
            get_model(spec)  # every check now, before any work (or MPI) starts
        except ModelError as exc:
            self.fail(str(exc), param, ctx)
        return spec


MODEL = _Model()


class _Output(click.ParamType):
    """A file to write (``-o PATH``): refused now if :func:`hetcoll.files.write_atomic`
    could not write it (empty, a directory, a missing or read-only directory)."""

    name = "path"

    def __init__(self, directory: bool = False) -> None:
        self.directory = directory
        self.name = "directory" if directory else "path"

    def convert(self, value, param, ctx):
        from ..files import check_output, check_output_dir

        try:
            (check_output_dir if self.directory else check_output)(value)
        except HetcollError as exc:
            self.fail(str(exc), param, ctx)
        return value


OUTPUT = _Output()
OUTPUT_DIR = _Output(directory=True)

JSON_OPT = click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")


def _ids(text: str | None, what: str) -> list[str] | None:
    if text is None:
        return None
    ids = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in ids):
        raise PlannerError(f"{what}: expected comma-separated node ids, got {text!r}")
    return ids


def _sizes(text: str, what: str) -> tuple[int, ...]:
    """Comma-separated sizes (``0,4KiB,1MiB``), each checked; at least one."""
    parts = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in parts):
        raise ArgumentError(f"{what}: expected comma-separated sizes, got {text!r}")
    return tuple(check_quantity(t, "size", what) for t in parts)


def _platform(path: str):
    from ..platform import load_platform

    return load_platform(path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hetcoll", prog_name="hetcoll")
def cli() -> None:
    """Plan, simulate and run collectives on heterogeneous networks."""


def _positive(value, name: str) -> None:
    if value is not None:
        check_quantity(value, "factor", name, positive=True)


def _option_value(text: str):
    """A ``--option`` value: a whole number (``1e10`` too), a number, true/false/none, or
    the text itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return int(low)
    except ValueError:
        pass
    try:
        number = float(low)
    except ValueError:
        return text
    if math.isfinite(number) and number.is_integer() and abs(number) < 2**63:
        return int(number)  # max_pairs=1e10
    return number


def _planner_options(ctx, param, values) -> dict:
    """``--option KEY=VALUE`` (repeatable) as a dict of planner options."""
    options = {}
    for item in values or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", ctx, param)
        options[key] = _option_value(value)
    return options


#: ``--option KEY=VALUE``: one planner option (``hetcoll planners NAME`` lists them)
OPTION_OPT = click.option(
    "--option",
    "planner_options",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_planner_options,
    help="A planner option, e.g. max_pairs=1e10 (repeat; `hetcoll planners NAME` lists "
    "them). An unknown one is warned about and ignored.",
)


@contextlib.contextmanager
def planner_warnings() -> Iterator[None]:
    """Print each :class:`~hetcoll.errors.PlannerWarning` raised inside as one line
    ``hetcoll: warning: ...`` on stderr (not Python's file:line form)."""
    from ..errors import PlannerWarning

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PlannerWarning)
            yield
    finally:
        # shown once the recording has stopped: a warning re-shown while recording would be
        # appended to the list being read (an endless loop)
        _show(list(caught), PlannerWarning)


@contextlib.contextmanager
def knob_warnings(show: bool) -> Iterator[None]:
    """Each distinct :class:`~hetcoll.errors.KnobWarning` raised inside as one line
    ``hetcoll: warning: ...`` on stderr where ``show`` (rank 0: every rank has the same
    verdicts), nothing elsewhere."""
    from ..errors import KnobWarning

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", KnobWarning)
            yield
    finally:
        seen: set[str] = set()
        for w in list(caught):
            if issubclass(w.category, KnobWarning):
                if show and str(w.message) not in seen:
                    click.echo(f"hetcoll: warning: {w.message}", err=True)
                seen.add(str(w.message))
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def _show(caught: list, category: type) -> None:
    for w in caught:
        if issubclass(w.category, category):
            click.echo(f"hetcoll: warning: {w.message}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
