"""MPICH's own selection file made from a tuning file: the MPICH algorithms the file forces,
chosen by MPICH itself, with no Python call in front of the collective.

MPICH reads ``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE`` at ``MPI_Init``: a JSON tree of
conditions (the collective, the communicator's size, a message size, the operator, ...)
whose leaves name the algorithm, in place of the tree built into the library.
:func:`selection` is that built-in tree (read from the library, :func:`builtin`) with the
intra-communicator subtrees of ``allreduce`` and ``allgather`` replaced, for a communicator
of the tuning file's rank count only, by a chain of its rules' size ranges: a rule that
forces an MPICH algorithm (:mod:`hetcoll.runtime.mpich_cvars`) names it, any other keeps
MPICH's own subtree.  A program started with the file gets those algorithms from MPICH
with mpi4py's plain methods (the default ``HetComm``, no ``tuning=``, passes every call to
MPI natively on one host): ``mpiexec -genv MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=FILE
python prog.py``.  ``hetcoll tune --mpich-selection FILE`` writes it.

Why the guards: on this path MPICH checks nothing, and an algorithm given a call it cannot
serve aborts the job (an assertion; a control variable falls back to MPICH's own choice
instead).  Each forced algorithm sits under MPICH's restrictions on it
(:data:`RESTRICTIONS`, from MPICH's ``coll_algorithms.txt``): ``reduce_scatter_allgather``
a built-in operator and at least as many elements as the largest power of two of ranks,
``ring`` a commutative operator, the allgather's ``recursive_doubling`` a power-of-two
size; everything else reaches MPICH's own subtree.  Algorithms that take parameters
(``tree``, ``recexch``, ...) are left to MPICH's own choice.  The size keys, measured on
the MPICH 5.0.2 wheel: an allreduce's ``avg_msg_size`` is its bytes over the ranks, an
allgather's ``total_msg_size`` its block's bytes times the ranks (a rule's first size is
exact there when it is a multiple of the ranks); ``comm_size<K`` holds for any ``K``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..errors import HetcollError

__all__ = ["RESTRICTIONS", "VARIABLE", "builtin", "library_path", "selection", "started_with"]

#: the environment variable MPICH reads its selection file's path from at ``MPI_Init``
VARIABLE = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"

#: the forced algorithms the file names, and MPICH's restrictions on each (the others keep
#: MPICH's own subtree)
RESTRICTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "allreduce": {
        "recursive_doubling": (),
        "reduce_scatter_allgather": ("builtin-op", "size-ge-pof2"),
        "ring": ("commutative",),
    },
    "allgather": {"brucks": (), "ring": (), "recursive_doubling": ("power-of-two",)},
}
#: per collective: MPICH's size key and a rule's first size (hetcoll's bytes: the
#: allreduce's vector, the allgather's block) in it on ``n`` ranks
KEYS = {
    "allreduce": ("avg_msg_size", lambda nbytes, n: -(-nbytes // n)),
    "allgather": ("total_msg_size", lambda nbytes, n: nbytes * n),
}


def library_path() -> str:
    """The path of the MPI library this process loaded (MPICH's ``libmpi``)."""
    with open("/proc/self/maps") as fh:
        paths = sorted({line.split()[-1] for line in fh if "/" in line})
    for path in paths:
        if re.search(r"/lib(p?mpi|mpich)[^/]*\.so", path):
            return path
    raise HetcollError("no MPI library among this process's libraries")


def builtin(path: str | None = None) -> dict[str, Any]:
    """MPICH's built-in selection tree of its algorithms (``algorithm=MPIR_...`` leaves), as
    the library at ``path`` (default: :func:`library_path`) holds it."""
    with open(path or library_path(), "rb") as fh:
        data = fh.read()
    at = data.find(b'{"collective=')
    while at >= 0:
        end = data.index(b"\0", at)
        if b'"algorithm=MPIR_' in data[at:end]:
            return json.loads(data[at:end])
        at = data.find(b'{"collective=', end)
    raise HetcollError("no built-in selection of MPICH's algorithms in the MPI library")


def _guarded(collective: str, name: str, default: dict) -> dict:
    """The leaf naming ``name`` under MPICH's restrictions on it; ``default`` elsewhere."""
    rules = RESTRICTIONS[collective][name]
    node: dict = {f"algorithm=MPIR_{collective.capitalize()}_intra_{name}": {}}
    if "size-ge-pof2" in rules:
        node = {"count<pow2": default, "count=any": node}
    if "commutative" in rules or "builtin-op" in rules:
        node = {"is_commutative=no": default, "is_commutative=yes": node}
    if "builtin-op" in rules:
        node = {"is_op_built_in=no": default, "is_op_built_in=yes": node}
    if "power-of-two" in rules:
        node = {"comm_size=pow2": node, "comm_size=any": default}
    return node


def _chain(collective: str, rules, ranks: int, default: dict) -> dict:
    """The rules' size ranges, each its forced algorithm's guarded leaf or ``default``."""
    key, scale = KEYS[collective]
    known = RESTRICTIONS[collective]
    rules = sorted(rules, key=lambda r: r.from_bytes)
    chain: dict = {}
    if rules[0].from_bytes > 0:
        chain[f"{key}<{scale(rules[0].from_bytes, ranks)}"] = default
    for k, rule in enumerate(rules):
        forced = rule.algorithm == "mpi" and rule.mpich in known
        node = _guarded(collective, rule.mpich, default) if forced else default
        last = k + 1 == len(rules)
        chain[f"{key}=any" if last else f"{key}<{scale(rules[k + 1].from_bytes, ranks)}"] = node
    return chain


def selection(tuning: Any, tree: dict[str, Any]) -> dict[str, Any]:
    """``tree`` (MPICH's built-in selection, :func:`builtin`) with the allreduce and
    allgather of ``tuning``'s rank count choosing its forced algorithms (module doc); the
    same tree where it forces none.  Linear in the rules."""
    out = json.loads(json.dumps(tree))
    n = tuning.ranks
    for collective in RESTRICTIONS:
        rules = tuning.rules.get(collective) or ()
        if not any(r.mpich in RESTRICTIONS[collective] for r in rules):
            continue
        node = out.get(f"collective={collective}", {})
        default = node.get("comm_type=intra")
        if default is None:
            raise HetcollError(f"MPICH's selection has no intra {collective} to replace")
        node["comm_type=intra"] = {
            f"comm_size<{n}": default,
            f"comm_size<{n + 1}": _chain(collective, rules, n, default),
            "comm_size=any": default,
        }
    return out


def started_with(tuning: Any, comm: Any) -> bool:
    """Whether every rank of ``comm`` runs in an MPI started with the selection file made
    from ``tuning`` (:data:`VARIABLE` names a file equal to :func:`selection` of it and
    this library's tree): MPICH then chooses the file's forced algorithms itself, and a
    ``HetComm`` need not force them.  Collective (an allreduce on ``comm``): one rank
    forcing through the control variables while another follows the file could run
    different algorithms in one call."""
    path, mine = os.environ.get(VARIABLE), False
    if path:
        try:
            with open(path) as fh:
                mine = json.load(fh) == selection(tuning, builtin())
        except (OSError, ValueError, HetcollError):
            mine = False
    return bool(comm.allreduce(mine, op=_land()))


def _land() -> Any:
    from mpi4py import MPI

    return MPI.LAND
