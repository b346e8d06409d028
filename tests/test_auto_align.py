"""``auto`` plans an allreduce in whole elements when given ``align``: the CLI's
``hetcoll plan --algo auto --option align=8`` and the Python ``plan(..., method="auto")``
plan the very schedule HetComm's choice weighs for a vector of doubles (the fastest there,
``butterfly_pipelined``, with ``align`` 8, :func:`hetcoll.choice.choose`)."""

from __future__ import annotations

import json
import warnings

from _cli import run
from hetcoll import load_platform, plan, simulate
from hetcoll.choice import choose
from hetcoll.errors import PlannerWarning

#: a vector of 1 000 003 doubles: the NICs' shares of it are not whole elements unless
#: aligned (2 000 006 bytes each without ``align``)
M = 8 * 1_000_003


def without_provenance(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("algorithm", "params")}


def test_the_cli_and_python_plan_the_aligned_choice(capsys):
    p = load_platform("star8")
    code, out, err = run(
        capsys, "plan", "star8", "--op", "allreduce", "--algo", "auto", "--size", str(M),
        "--option", "align=8", "--json",
    )  # fmt: skip
    assert code == 0 and "ignores" not in err
    cli = json.loads(out)["schedule"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlannerWarning)  # auto takes align
        py = plan(p, None, method="auto", collective="allreduce", nbytes=M, options={"align": 8})
    assert cli == py.to_dict()
    name = "butterfly_pipelined"
    assert py.params["chosen"] == name
    best = plan(p, None, method=name, collective="allreduce", nbytes=M, options={"align": 8})
    assert without_provenance(cli) == without_provenance(best.to_dict())
    assert all(f["nbytes"] % 8 == 0 for f in cli["flows"])  # whole doubles
    assert all(f.get("segment_size", 8) % 8 == 0 for f in cli["flows"])
    # HetComm's choice for the same call (count: doubles) weighs this very schedule
    got = choose(p, "allreduce", M, list(p.ids), count=M // 8, op="sum", margin=0.0)
    assert got.plan == name
    assert got.predicted == simulate(p, best).makespan == simulate(p, py).makespan


def test_a_broadcast_ignores_align():
    p = load_platform("star8")
    a = plan(p, "0", method="auto", nbytes=4096)
    b = plan(p, "0", method="auto", nbytes=4096, options={"align": 8})
    assert a.to_dict() == b.to_dict()
