"""Input fuzzing shared by ``tests/test_inputs_fuzz.py`` (a small hypothesis run in CI) and
``benchmarks/fuzzing/fuzz_inputs.py`` (a long run that counts outcomes).

Seeds are the built-in platforms (``src/hetcoll/data``), the platform documents of the
README, and schedules planned on them (a broadcast, a multicast, a pipelined broadcast, a
multiple multicast with a send order, a hypercube allreduce: what the examples plan).  A
:func:`mutate` applies a few random changes to a seed -- a key deleted or added, a value of
another type, NaN / infinite / huge / negative numbers, numbers written as strings, deep
nesting, a truncated or garbled file -- and :func:`run_case` feeds the result to the command
line in-process (``hetcoll plan FILE --root R -o OUT --json`` for a platform, ``hetcoll
simulate PLATFORM FILE --json`` for a schedule) and classifies what happened:

``valid``
    exit 0, a prediction whose times are all finite and >= 0 (and the schedule file written);
``clean error``
    exit 2, exactly one line ``hetcoll: error: ...`` on stderr, nothing on stdout, no file;
``traceback``
    an exception escaped ``hetcoll.cli.main``;
``bad time``
    exit 0 with a negative, infinite or NaN time (a silent wrong answer);
``wrong answer``
    exit 0 with a broadcast that leaves nodes of the platform without data;
``messy error``
    exit 2 with more or less than one line, or a file left behind;
``warning``
    a Python or numpy warning reached the user;
``timeout``
    (benchmark only) the case ran longer than its time limit.

Generators (``Seed.group``, the benchmark's table counts each): the built-in and README
``platform files``; ``schedules`` planned on them; random irregular ``switch platforms``
(Hsu et al.'s generator, the switch planners); ``directed graphs`` (antiparallel links of
their own costs, the graph models and the pipelined planners, in segments); ``planner
options`` (``--option KEY=VALUE`` of every registered option, and unknown ones, with hostile
values); ``pipelined schedules`` (multi_tree timetables, LP heuristics, multi-port trees on
graph platforms).  For the last three a valid answer is also checked against the optimum
(:func:`hetcoll.planners.steady.optimum`): a rate above it is a ``wrong answer``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import random
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUTCOMES = (
    "valid",
    "clean error",
    "traceback",
    "bad time",
    "wrong answer",
    "messy error",
    "warning",
    "timeout",
)
# values that slip past weak checks: non-finite, huge, negative, tiny, of the wrong type
SPECIAL = [
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    -1,
    -1e-9,
    0,
    5e-324,
    2**63,
    10**30,
    "nan",
    "inf",
    "1e400",
    "-1s",
    "1e308",
    "5us",
    "fast",
    "",
    True,
    None,
    [],
    {},
    [1],
    {"a": 1},
    "2345678",
]


# planners (fast ones) and options a platform case may add to ``hetcoll plan``
ALGOS = ("fnf", "binomial", "flat", "chain", "spoc", "mst", "spt", "hlot", "gap_aware",
         "magpie", "mpich-g2", "mpich-gx", "auto")  # fmt: skip
SIZES = ("0", "1", "4096", "1MiB", "1GiB")
MODELS = (
    "tini",
    "postal",
    "hockney",
    '{"name": "postal", "gap": "2ms", "overhead": 1e-3}',
    '{"name": "postal", "gap": "nan"}',
    '{"name": "postal", "recv_overhead": "-1s"}',
    '{"name": "hockney", "ports": "unidirectional"}',
    '{"name": ["tini"]}',
    '{"name": "postal", "gap": 1e308}',
    "{" * 200,
)


@dataclass(frozen=True)
class Case:
    """One mutated document and the extra command-line options to feed it with."""

    suffix: str
    content: bytes
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Seed:
    """A document to mutate and how to feed it: ``kind`` is ``platform`` or ``schedule``;
    ``root`` the node a plan starts from; ``platform`` the platform a schedule runs on (a
    name, or ``platform_data`` written beside it); ``group`` the generator it comes from;
    ``algos``/``models`` what a platform case may plan with (default :data:`ALGOS`, and
    :data:`MODELS` sometimes); ``options``: the case varies ``--option`` values."""

    name: str
    kind: str
    data: Any
    root: str | None = None
    platform: str | None = None
    group: str = ""
    platform_data: Any = None
    algos: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    options: bool = False


def _readme_platforms() -> list[Any]:
    """The JSON platform documents in the README's "Platform files" section."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Platform files", 1)[-1]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]


def seeds() -> list[Seed]:
    """Every seed document, in a fixed order."""
    import hetcoll
    from hetcoll.platform import builtin_platforms

    out = []
    for name, path in builtin_platforms().items():
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append(Seed(name, "platform", data, root=str(data["nodes"][0]["id"])))
    for k, data in enumerate(_readme_platforms()):
        out.append(Seed(f"readme-{k}", "platform", data, root=str(data["nodes"][0]["id"])))
    fig1, park = hetcoll.load_platform("fig1"), hetcoll.load_platform("park-fig2")
    planned = {
        "fnf-fig1": ("fig1", hetcoll.plan(fig1, "1")),
        "multicast-fig1": ("fig1", hetcoll.plan(fig1, "3", ["8", "1", "5"], method="spoc")),
        "pipelined-park": ("park-fig2", hetcoll.plan(park, "A", nbytes=4096, segment_size=1024)),
        "joint-fig1": (
            "fig1",
            hetcoll.plan_multiple(
                fig1, [("1", ["2", "3", "4"]), ("6", ["5", "7", "8"])], method="fnf_joint"
            ),
        ),
        "allreduce-park": ("park-fig2", hetcoll.plan_allreduce(park, nbytes=8)),
    }
    for name, (platform, schedule) in planned.items():
        out.append(Seed(name, "schedule", schedule.to_dict(), platform=platform, group="schedules"))
    out = [s if s.group else _grouped(s) for s in out]
    return out + _switch_seeds() + _directed_seeds() + _option_seeds() + _pipelined_seeds()


def _grouped(seed: Seed) -> Seed:
    from dataclasses import replace

    return replace(seed, group="platform files" if seed.kind == "platform" else "schedules")


#: the planners of switch networks (Hsu et al.) and of graph platforms (Beaumont et al.)
SWITCH_ALGOS = ("labs", "binomial_like", "postorder_doubling", "two_vbbs", "switch_aware",
                "fnf", "binomial", "chain", "auto")  # fmt: skip
GRAPH_ALGOS = ("multi_tree", "lp_prune", "lp_grow", "grow_tree", "prune_simple", "prune_degree",
               "grow_tree_multiport", "prune_degree_multiport", "throughput_tree",
               "binomial_graph", "flat", "chain", "fnf", "auto")  # fmt: skip
GRAPH_MODELS = ("one_port", "one_port_uni", "multi_port", "hockney")
SEGMENTS = ("1KiB", "4096", "64KiB", "1", "0", "-1", "1e9", "nan")
#: hostile values for ``--option KEY=VALUE``
OPTION_VALUES = ("1.5", "abc", "nan", "inf", "-inf", "0", "-1", "true", "false", "none", "1e9",
                 "9007199254740993", "", "100us", "1e-300", "longest", "join", "lowest",
                 "closest", "3", "16", "2.0", "[1]")  # fmt: skip


def _switch_seeds() -> list[Seed]:
    from hetcoll.generators import switch_platform

    out = []
    for k, n in enumerate((6, 10, 16)):
        data = switch_platform(n, seed=k, density=(4.0, 2.0, 3.0)[k]).to_dict()
        out.append(
            Seed(f"switch-{n}", "platform", data, root=data["nodes"][-1]["id"],
                 group="switch platforms", algos=SWITCH_ALGOS, models=("switch", "tini"))
        )  # fmt: skip
    return out


def directed_platform(n: int, seed: int) -> dict:
    """A random platform of directed links: a ring both ways (every node reachable), each
    direction with its own latency and bandwidth, and a few chords one way only."""
    rng = random.Random(seed)
    links = []
    for i in range(n):
        j = (i + 1) % n
        for u, v in ((i, j), (j, i)):
            links.append({"u": str(u), "v": str(v), "directed": True,
                          "latency": rng.choice([0.0, 1e-5, 1e-3]),
                          "bandwidth": rng.choice([1e6, 1e7, 1e8, "inf"])})  # fmt: skip
    chords = set()
    for _ in range(n // 2):
        u, v = rng.sample(range(n), 2)
        if abs(u - v) not in (1, n - 1) and (u, v) not in chords:
            chords.add((u, v))
            links.append({"u": str(u), "v": str(v), "directed": True, "latency": 1e-4,
                          "bandwidth": rng.choice([1e6, 1e8]),
                          "send_latency": 1e-5, "send_bandwidth": 1e9})  # fmt: skip
    nodes = [{"id": str(i), "t_byte": rng.choice([0.0, 1e-9])} for i in range(n)]
    return {"model": rng.choice(["one_port", "multi_port"]), "nodes": nodes, "links": links}


def _directed_seeds() -> list[Seed]:
    return [
        Seed(f"directed-{n}", "platform", directed_platform(n, n), root="0",
             group="directed graphs", algos=GRAPH_ALGOS, models=GRAPH_MODELS)
        for n in (3, 5, 8)
    ]  # fmt: skip


def _option_seeds() -> list[Seed]:
    import hetcoll

    out = []
    for name in ("park-fig2", "fig1"):
        data = hetcoll.load_platform(name).to_dict()
        root = data["nodes"][0]["id"]
        out.append(Seed(f"options-{name}", "platform", data, root=root, group="planner options",
                        options=True))  # fmt: skip
    out.append(Seed("options-directed", "platform", directed_platform(5, 1), root="0",
                    group="planner options", options=True))  # fmt: skip
    return out


def _pipelined_seeds() -> list[Seed]:
    import hetcoll

    out = []
    for k, (n, algo, model) in enumerate(
        [(5, "multi_tree", "one_port"), (6, "lp_prune", "one_port"),
         (5, "grow_tree_multiport", "multi_port"), (4, "throughput_tree", "one_port_uni"),
         (6, "multi_tree", "one_port_uni")]
    ):  # fmt: skip
        pdata = directed_platform(n, 100 + k)
        pdata["model"] = model
        p = hetcoll.Platform.from_dict(pdata)
        s = hetcoll.plan(p, "0", method=algo, nbytes=64 * 1024, segment_size=4096)
        out.append(Seed(f"pipelined-{algo}-{n}", "schedule", s.to_dict(), platform="platform.json",
                        platform_data=pdata, group="pipelined schedules"))  # fmt: skip
    return out


# -- mutations -------------------------------------------------------------------------------------


def _paths(data: Any) -> list[tuple]:
    """Every path to a value inside ``data`` (keys and indices), the root included, down to
    depth 40 (deeper nesting is a mutation's own doing)."""
    out, stack = [], [((), data)]
    while stack:
        prefix, value = stack.pop()
        out.append(prefix)
        if len(prefix) >= 40:
            continue
        if isinstance(value, dict):
            stack += [((*prefix, k), v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [((*prefix, i), v) for i, v in enumerate(value)]
    return out


def _get(data: Any, path: tuple) -> Any:
    for key in path:
        data = data[key]
    return data


def _set(data: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(data, path[:-1])[path[-1]] = value
    return data


def _special(rng: random.Random) -> Any:
    """One of :data:`SPECIAL`, copied: a later mutation must not change the list itself."""
    return copy.deepcopy(rng.choice(SPECIAL))


def _other_type(value: Any, rng: random.Random) -> Any:
    """A value of another type: a list or object around it, its string, a number, null."""
    choices = [[value], {"x": value}, None, _special(rng)]
    if isinstance(value, int | float) and not isinstance(value, bool):
        choices += [str(value), f"{value}s", f"{value} parsecs"]
    if isinstance(value, str):
        choices += [len(value), value * 3, value[:1]]
    if isinstance(value, list | dict):
        choices += ["[1, 2", type(value).__name__, len(value)]
    return rng.choice(choices)


def _mutate_tree(data: Any, rng: random.Random) -> Any:
    paths = _paths(data)
    path = rng.choice(paths)
    value = _get(data, path)
    move = rng.randrange(7)
    if move == 0 and path:  # delete a key or an element
        parent = _get(data, path[:-1])
        del parent[path[-1]]
    elif move == 1:  # another type
        data = _set(data, path, _other_type(value, rng))
    elif move == 2:  # a special value
        data = _set(data, path, _special(rng))
    elif move == 3:  # another plausible number, perhaps written as a string with a unit
        if isinstance(value, int | float) and not isinstance(value, bool):
            other = [str(value), f"{value}ms", value * 1000, value / 1000, 0, 1e11, 1e-12, 7]
            data = _set(data, path, rng.choice(other))
        else:
            data = _set(data, path, _special(rng))
    elif move == 4:  # deep nesting
        for _ in range(rng.choice([2, 10, 100, 1500])):
            value = [value] if rng.random() < 0.5 else {"a": value}
        data = _set(data, path, value)
    elif move == 5 and isinstance(value, dict):  # an unknown key
        value[rng.choice(["buffer", "speed", "model", "tini", "x"])] = _special(rng)
    elif move == 6 and isinstance(value, list) and value:  # duplicate an element
        value.append(value[rng.randrange(len(value))])
    else:
        data = _set(data, path, _special(rng))
    return data


def _dump(data: Any, fmt: str) -> str:
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))  # serialising deep nesting is our own doing
    try:
        if fmt == "yaml":
            import yaml

            return yaml.safe_dump(data, sort_keys=False)
        return json.dumps(data, allow_nan=True)
    finally:
        sys.setrecursionlimit(limit)


def mutate(seed: Seed, rng: random.Random) -> Case:
    """A mutated copy of ``seed`` and the options to run it with."""
    data = json.loads(json.dumps(seed.data))
    rounds = rng.choice([0, 0, 0, 1]) if seed.options else rng.choice([1, 1, 2, 3])
    for _ in range(rounds):
        data = _mutate_tree(data, rng)  # (in place: a deep nesting shares no structure)
    fmt = "yaml" if seed.kind == "platform" and rng.random() < 0.25 else "json"
    try:
        text = _dump(data, fmt).encode()
    except (ValueError, TypeError, RecursionError):
        text = _dump(seed.data, fmt).encode()
    roll = rng.random()
    if roll < 0.08:  # a truncated file
        text = text[: rng.randrange(len(text) + 1)]
    elif roll < 0.12:  # a few bytes garbled (perhaps not UTF-8 any more)
        buf = bytearray(text)
        for _ in range(rng.randrange(1, 4)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        text = bytes(buf)
    options: list[str] = []
    if seed.options:
        options += _option_args(rng)
    elif seed.kind == "platform":
        options += ["--algo", rng.choice(seed.algos or ALGOS), "--size", rng.choice(SIZES)]
        if seed.algos is not None:
            options += ["--segment-size", rng.choice(SEGMENTS)]
    if seed.options:
        pass  # its own --model, perhaps
    elif seed.models is not None and rng.random() < 0.5:
        options += ["--model", rng.choice(seed.models)]
    elif rng.random() < 0.15:
        options += ["--model", rng.choice(MODELS)]
    return Case("." + fmt, text, tuple(options))


def _option_args(rng: random.Random) -> list[str]:
    """A planner with one to three ``--option`` of its own (or unknown) and hostile values."""
    from hetcoll.planners import REGISTRY

    names = sorted(n for n, i in REGISTRY.items() if i.options and i.serves("bcast"))
    algo = rng.choice(names)
    keys = [*REGISTRY[algo].options, "speed", "order", "lan"]
    args = ["--algo", algo, "--size", rng.choice(("4096", "1MiB")), "--segment-size", "1KiB"]
    for _ in range(rng.randint(1, 3)):
        args += ["--option", f"{rng.choice(keys)}={rng.choice(OPTION_VALUES)}"]
    if algo == "multi_tree" or rng.random() < 0.3:
        args += ["--model", rng.choice(("one_port", "one_port_uni", "multi_port"))]
    return args


# -- running -------------------------------------------------------------------------------------


def _times_ok(doc: Any) -> bool:
    times = [doc.get("predicted_time"), *doc.get("arrival", {}).values()]
    return all(
        isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) and t >= 0
        for t in times
    )


def run_case(seed: Seed, case: Case, workdir: Path) -> tuple[str, str]:
    """Feed one mutated document to the CLI in-process: ``(outcome, detail)``."""
    from hetcoll.cli import main

    path = workdir / f"input{case.suffix}"
    path.write_bytes(case.content)
    out_file = workdir / "out.json"
    platform = seed.platform
    if seed.platform_data is not None:
        platform = str(workdir / "platform.json")
        Path(platform).write_text(json.dumps(seed.platform_data))
    if seed.kind == "platform":
        argv = ["plan", str(path), "--root", seed.root, "-o", str(out_file), "--json"]
    else:
        argv = ["simulate", platform, str(path), "--json"]
    argv += case.options
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as exc:  # click's own exit, if any
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # that is the outcome being counted
            if isinstance(exc, KeyboardInterrupt | TimeoutError):
                raise
            return "traceback", f"{type(exc).__name__}: {exc}"[:300]
    out, err = stdout.getvalue(), stderr.getvalue()
    leftovers = sorted(p.name for p in workdir.iterdir() if p != path and p.name != "platform.json")
    if caught or "Warning" in err:
        what = caught[0].message if caught else err
        return "warning", str(what)[:300]
    if code == 2:
        # hetcoll's own warnings (an unknown planner option) may come before the error line
        err = "".join(x for x in err.splitlines(True) if not x.startswith("hetcoll: warning: "))
        one_line = err.startswith("hetcoll: error: ") and err.count("\n") == 1
        if one_line and out == "" and not leftovers:
            return "clean error", err.strip()[:300]
        return "messy error", f"{err[:200]!r} stdout={out[:50]!r} files={leftovers}"
    if code != 0:
        return "messy error", f"exit {code}: {err[:200]!r}"
    try:
        doc = json.loads(out)
    except ValueError:
        return "messy error", f"exit 0 without a JSON document: {out[:100]!r}"
    if not _times_ok(doc):
        return "bad time", f"predicted {doc.get('predicted_time')}, arrival {doc.get('arrival')}"
    if doc.get("collective") == "bcast":
        from hetcoll import load_platform

        ids = load_platform(str(path) if seed.kind == "platform" else platform).ids
        missing = sorted(set(ids) - set(doc.get("arrival", {})))
        if missing:
            return "wrong answer", f"a bcast that never reaches {missing[:5]} ({len(missing)})"
    if seed.kind == "platform" and not out_file.exists():
        return "messy error", "exit 0 but no schedule file"
    if seed.group in ("directed graphs", "pipelined schedules", "planner options"):
        above = _above_optimum(doc, str(path) if seed.kind == "platform" else platform,
                               out_file if seed.kind == "platform" else path)  # fmt: skip
        if above:
            return "wrong answer", above
    return "valid", ""


def _above_optimum(doc: dict, platform_path: str, schedule_path: Path) -> str:
    """What is wrong when a broadcast's rate (bytes over the predicted time) exceeds the
    optimum at its largest message, else ''."""
    from hetcoll import Schedule, load_platform
    from hetcoll.errors import HetcollError
    from hetcoll.planners.steady import optimum

    if doc.get("collective") != "bcast" or not doc.get("predicted_time") or not doc.get("nbytes"):
        return ""
    p = load_platform(platform_path)
    s = Schedule.from_dict(json.loads(schedule_path.read_text()))
    largest = max(min(f.segment_size or f.nbytes, f.nbytes) for f in s.flows)  # a chunk's
    try:
        best = optimum(p, s.flows[0].tree.root, max(largest, 1), doc["model"])
    except HetcollError:  # unbounded, or the model does not apply
        return ""
    rate = doc["nbytes"] / doc["predicted_time"]
    if rate > best.upper_bound * (1 + 1e-6):
        return f"{doc['algorithm']}: {rate:.6g} B/s above the optimum {best.upper_bound:.6g}"
    return ""
