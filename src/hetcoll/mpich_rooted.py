"""MPI's own ``Reduce``, ``Gather`` and ``Scatter`` as MPICH runs them, as schedules.

What ``auto`` weighs a planned rooted call against (:mod:`hetcoll.choice`), and under
emulation what runs for a call ``auto`` leaves to MPI (MPICH's algorithm through the same
engine).  MPICH's default selection for an intra-communicator (``maint/tuning/coll/mpir/
generic.json``, ``MPIR_CVAR_REDUCE_SHORT_MSG_SIZE`` = 2048 of MPICH 4.x):

- **Reduce**: ``binomial`` for a send buffer of at most 2048 bytes, a user-defined
  operator, or fewer elements than the largest power of two <= ranks; otherwise
  ``reduce_scatter_gather`` (Rabenseifner: recursive halving, then a binomial gather of
  the pieces to the root), which is not modelled here: :func:`rooted_native` raises
  :class:`~hetcoll.errors.ModelError` for it, and ``auto`` then keeps MPI's own natively;
- **Gather** and **Scatter**: ``binomial``.

MPICH's binomial trees are the broadcast's (:func:`hetcoll.mpich.native`'s ``binomial``,
ranks relative to the root): a rank of relative rank ``r`` has the children ``r + 2^k``
for every ``2^k`` below the lowest set bit of ``r``.  ``MPIR_Reduce_intra_binomial`` and
``MPIR_Gather_intra_binomial`` receive from them nearest first (``mask`` = 1, 2, 4, ...),
``MPIR_Scatter_intra_binomial`` sends to them farthest first, as a broadcast does: the
flows list the children in those orders.  O(P) for P ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import HetcollError, ModelError
from .mpich import _binomial, _pof2
from .patterns import Flow, Tree
from .schedule import Schedule

__all__ = ["REDUCE_SHORT", "ROOTED", "rooted_algorithm", "rooted_native"]

ROOTED = ("reduce", "gather", "scatter")
#: MPICH's ``MPIR_CVAR_REDUCE_SHORT_MSG_SIZE`` (bytes)
REDUCE_SHORT = 2048


def rooted_algorithm(
    collective: str, ranks: int, nbytes: int, *, count: int | None = None, builtin: bool = True
) -> str:
    """The algorithm MPICH's default selection runs for a rooted call (module doc).

    >>> rooted_algorithm("reduce", 8, 2048), rooted_algorithm("reduce", 8, 4096, count=512)
    ('binomial', 'reduce_scatter_gather')
    >>> rooted_algorithm("reduce", 8, 4096, count=4), rooted_algorithm("gather", 8, 1 << 20)
    ('binomial', 'binomial')
    """
    if collective not in ROOTED:
        raise HetcollError(f"collective: expected one of {', '.join(ROOTED)}, got {collective!r}")
    if collective == "reduce":
        count = nbytes if count is None else count
        if nbytes > REDUCE_SHORT and builtin and count >= _pof2(ranks):
            return "reduce_scatter_gather"
    return "binomial"


def rooted_native(
    collective: str,
    nodes: Sequence[str],
    nbytes: int,
    *,
    root: int = 0,
    count: int | None = None,
    builtin: bool = True,
    algorithm: str | None = None,
) -> Schedule:
    """MPICH's ``collective`` (``reduce``, ``gather``, ``scatter``) on ranks ``nodes`` (node
    ids in rank order) from or to rank ``root``, ``nbytes`` per rank (a reduce's vector, a
    gather's or scatter's block), as a schedule (algorithm ``"mpi"``).

    Raises :class:`~hetcoll.errors.ModelError` when MPICH runs an algorithm this module
    does not model (a long reduce's ``reduce_scatter_gather``).  ``algorithm="binomial"``
    forces MPICH's binomial tree (its ``MPIR_CVAR_<COLL>_INTRA_ALGORITHM=binomial``).

    >>> s = rooted_native("reduce", ["a", "b", "c", "d"], 64)
    >>> s.flows[0].kind, s.flows[0].tree.children["a"]
    ('reduce', ('b', 'c'))
    >>> rooted_native("scatter", ["a", "b", "c", "d"], 64).flows[0].tree.children["a"]
    ('c', 'b')
    """
    nodes = [str(x) for x in nodes]
    name = algorithm or rooted_algorithm(
        collective, len(nodes), nbytes, count=count, builtin=builtin
    )
    if name != "binomial":
        raise ModelError(f"MPICH's {name} {collective} is not modelled")
    down = _binomial(nodes, nbytes, root).flows[0].tree
    if collective == "scatter":
        tree = down
    else:  # nearest child first
        tree = Tree(down.root, {p: tuple(reversed(cs)) for p, cs in down.children.items()})
    flow_bytes = nbytes if collective == "reduce" else nbytes * len(nodes)
    return Schedule(collective, "mpi", nbytes, (Flow(tree, flow_bytes, kind=collective),))
