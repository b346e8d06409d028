"""Buffers as mpi4py reads them: buffer specs, datatypes (derived ones too), ``IN_PLACE``.

A collective gets its buffers as mpi4py's *buffer specs*: ``buf``, ``[buf, type]``,
``[buf, count]``, ``[buf, count, type]``, ``[buf, (count, displ), type]`` and
``[buf, count, displ, type]``, where ``buf`` is anything mpi4py takes (the buffer protocol,
``__dlpack__`` or ``__cuda_array_interface__`` in host memory, C- or Fortran-ordered) and
``type`` an ``MPI.Datatype`` or a type code (``"i"``, ``"d"``).  :func:`message` parses a
spec by mpi4py's rules (its ``message_simple``): the datatype is inferred from the buffer's
format when not given, the count from the buffer's length when not given, a displacement
counts whole extents.  ``None`` and ``MPI.IN_PLACE`` are the same for a send buffer
(:func:`in_place`), as in mpi4py.

The engine moves contiguous bytes.  A :class:`Message` whose datatype is not contiguous (an
indexed block, a vector, a resized type with a lower bound) is *packed* into its type
signature's bytes with ``MPI_Pack`` before it is sent and *unpacked* with ``MPI_Unpack``
where it is received, so every rank gets exactly what MPI delivers with that datatype
(``MPI_Pack`` and a receive with the same datatype define the same mapping).  A contiguous
one (every predefined type, contiguous types of them) is moved in place, without copies.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import HetcollError

__all__ = [
    "Message",
    "as_bytes",
    "check_op",
    "in_place",
    "message",
    "op_name",
    "plain_kind",
    "plain_signature",
    "raw",
    "signature",
    "typed_buffer",
]

#: mpi4py's predefined reduction operators and their names in a schedule
_OPS = (
    ("sum", MPI.SUM),
    ("prod", MPI.PROD),
    ("max", MPI.MAX),
    ("min", MPI.MIN),
    ("land", MPI.LAND),
    ("lor", MPI.LOR),
    ("lxor", MPI.LXOR),
    ("band", MPI.BAND),
    ("bor", MPI.BOR),
    ("bxor", MPI.BXOR),
    ("maxloc", MPI.MAXLOC),
    ("minloc", MPI.MINLOC),
)
_ORDER = "<>@=!"


def in_place(buf: Any) -> bool:
    """Whether a send buffer means ``MPI.IN_PLACE`` (``None`` does, as in mpi4py)."""
    return buf is None or buf is MPI.IN_PLACE


def op_name(op: Any) -> str:
    """The schedule's name of an mpi4py reduction operator (``"user"`` for ``Op.Create``)."""
    if isinstance(op, MPI.Op):
        for name, known in _OPS:
            if op == known:
                return name
        if op != MPI.OP_NULL and not op.is_predefined:
            return "user"
    raise HetcollError(
        f"op: expected an MPI reduction operator (MPI.SUM, ..., MPI.Op.Create(...)), got {op!r}"
    )


@dataclass(frozen=True, slots=True, eq=False)
class Message:
    """One parsed buffer spec: ``count`` elements of ``datatype`` at the start of ``buffer``.

    ``buffer`` is a flat byte view from the spec's address (after its displacement) to the
    end of the user's memory; the datatype's displacements (its lower bound included) are
    relative to its start.  ``nbytes`` is the size of the data itself (``count`` times the
    datatype's size: what travels), ``contiguous`` whether those bytes lie in memory one
    after the other in signature order (then :meth:`data` is a view of them).
    """

    buffer: memoryview
    count: int
    datatype: MPI.Datatype
    nbytes: int
    contiguous: bool
    where: str

    def data(self) -> memoryview:
        """The data in place (only for a contiguous message)."""
        return self.buffer[: self.nbytes]

    def pack(self) -> memoryview:
        """The data in signature order: in place when contiguous, else packed into new memory."""
        if self.contiguous:
            return self.buffer[: self.nbytes]
        out = np.empty(self.nbytes, dtype=np.uint8)
        if self.nbytes:
            self.datatype.Pack(self._span(), out, 0, MPI.COMM_SELF)
        return memoryview(out)

    def unpack(self, packed: Any) -> None:
        """Place ``packed`` (bytes in signature order) where the datatype says."""
        if self.contiguous:
            if packed is not self.buffer:
                self.buffer[: self.nbytes] = packed
            return
        if self.nbytes:
            self.datatype.Unpack(packed, 0, self._span(), MPI.COMM_SELF)

    def place(self, packed: Any) -> None:
        """Place ``packed`` (bytes in signature order, at most :attr:`nbytes` of them: a
        shorter send block of an allgather) where the datatype says."""
        if self.contiguous:
            self.buffer[: len(packed)] = packed
        else:
            self.unpack(packed)

    def block(self, offset: int, count: int) -> Message:
        """The message of ``count`` elements at byte ``offset`` (an allgather block)."""
        size = self.datatype.Get_size()
        return Message(
            self.buffer[offset:], count, self.datatype, count * size, self.contiguous, self.where
        )

    def over(self, data: memoryview) -> Message:
        """This message's count and datatype over other memory (a reduction's result,
        holes included)."""
        return Message(data, self.count, self.datatype, self.nbytes, self.contiguous, self.where)

    def _span(self) -> MPI.buffer:
        # MPI_Pack/Unpack through mpi4py take count = len(buffer) // extent: hand them a
        # window of exactly count extents at the message's address (the datatype's bytes
        # lie inside the user's memory: message() checked the bounds).
        extent = self.datatype.Get_extent()[1]
        address = MPI.buffer(self.buffer).address
        return MPI.buffer.fromaddress(address, self.count * extent, self.buffer.readonly)

    def mpi(self) -> Any:
        """The message as MPI's point-to-point calls take it: its bytes in place when
        contiguous, else ``[window, count, datatype]`` (MPI reads or places the bytes)."""
        if self.contiguous:
            return self.data()
        return [self._span(), self.count, self.datatype]

    def span(self) -> memoryview:
        """The bytes from the message's start to its last datatype byte (holes included)."""
        if not self.count:
            return self.buffer[:0]
        true_lb, true_extent = self.datatype.Get_true_extent()
        extent = self.datatype.Get_extent()[1]
        return self.buffer[: true_lb + (self.count - 1) * extent + true_extent]

    def signature(self) -> str:
        """The type signature (basic types in order, count included), for agreement checks."""
        return signature(self.datatype, self.count)


def message(
    spec: Any, *, writable: bool, where: str, blocks: int = 1, typed: bool = True
) -> Message:
    """Parse an mpi4py buffer spec (see the module docstring) as mpi4py's ``message_simple``.

    ``blocks`` > 1: the buffer holds that many blocks (an allgather's receive buffer): an
    explicit count counts one block, an inferred one is the buffer's elements / ``blocks``.
    ``typed=False``: a spec without a datatype is just its bytes (what a broadcast needs;
    the datatype is not inferred).

    Raises :class:`~hetcoll.errors.HetcollError` naming ``where`` for what mpi4py rejects
    (and for a count that overruns the buffer, which mpi4py would leave to MPI).
    """
    buf, count, displ, datatype = _split(spec, where)
    if buf is None or buf is MPI.BOTTOM:
        if count:
            raise HetcollError(
                f"{where}: MPI.BOTTOM (absolute addresses) is not supported; give a buffer"
            )
        view = memoryview(b"" if not writable else bytearray())
        datatype = MPI.BYTE if datatype is None else _datatype(datatype, where)
        return Message(view, 0, datatype, 0, True, where)
    view = raw(buf, writable, where)
    if datatype is None and not typed and count is None and not displ:
        return Message(view, len(view), MPI.BYTE, len(view), True, where)
    datatype = _infer(buf, where) if datatype is None else _datatype(datatype, where)
    extent = datatype.Get_extent()[1]
    if displ:
        if displ < 0 or extent <= 0 or displ * extent > len(view):
            raise HetcollError(f"{where}: displacement {displ} out of bounds")
        view = view[displ * extent :]
    if count is None:
        if extent <= 0 or len(view) % extent or (len(view) // extent) % blocks:
            raise HetcollError(
                f"{where}: {len(view)} bytes are not a whole number of elements of {extent} "
                "bytes" + (f" in {blocks} blocks" if blocks > 1 else "")
            )
        count = len(view) // extent // blocks
    elif count < 0:
        raise HetcollError(f"{where}: negative count {count}")
    count *= blocks
    size = datatype.Get_size()
    contiguous = _contiguous(datatype)
    if count:
        true_lb, true_extent = datatype.Get_true_extent()
        end = true_lb + (count - 1) * extent + true_extent
        if true_lb < 0 or end > len(view):
            raise HetcollError(
                f"{where}: count {count // blocks} needs {max(end, count * size)} bytes, "
                f"buffer has {len(view)}"
            )
    return Message(view, count, datatype, count * size, contiguous, where)


def check_op(op: MPI.Op, m: Message, where: str) -> None:
    """Raise :class:`~hetcoll.errors.HetcollError` if MPI cannot apply the predefined ``op``
    to ``m``'s datatype (MPICH defines predefined operators on predefined types only, and
    not every pair: ``MPI.MAX`` on complex numbers): tried on one element, before any
    message, so that every rank raises alike instead of one failing mid-collective."""
    if not op.is_predefined or not m.count:
        return
    dt = m.datatype
    if dt.is_predefined and (op.py2f(), dt.py2f()) in _APPLICABLE:
        return
    true_lb, true_extent = dt.Get_true_extent()
    a = np.zeros(max(true_lb + true_extent, 1), dtype=np.uint8)
    try:
        op.Reduce_local([a, 1, dt], [a.copy(), 1, dt])
    except MPI.Exception as exc:
        raise HetcollError(
            f"{where}: MPI cannot apply {op_name(op).upper()} to "
            f"{dt.Get_name() or 'this derived datatype'} "
            f"({exc.Get_error_string().splitlines()[-1].strip()})"
        ) from None
    if dt.is_predefined:
        _APPLICABLE.add((op.py2f(), dt.py2f()))


_APPLICABLE: set[tuple[int, int]] = set()  # (op, datatype) pairs MPI was seen to accept


def as_bytes(buf: Any, writable: bool, where: str) -> memoryview:
    """The data bytes of an mpi4py buffer spec, in place (``count * size`` of them).

    For a datatype that is not contiguous use :func:`message` and pack/unpack.
    """
    m = message(buf, writable=writable, where=where)
    if not m.contiguous:
        raise HetcollError(f"{where}: the datatype is not contiguous; pack it (Message.pack)")
    return m.data()


def typed_buffer(buf: Any, writable: bool, where: str) -> tuple[memoryview, int, MPI.Datatype]:
    """``(bytes, count, datatype)`` of a buffer spec with a contiguous datatype, for a
    reduction: the datatype is the spec's, else the one mpi4py infers from the buffer."""
    m = message(buf, writable=writable, where=where)
    if not m.contiguous:
        raise HetcollError(f"{where}: the datatype is not contiguous; pack it (Message.pack)")
    return m.data(), m.count, m.datatype


def signature(datatype: MPI.Datatype, count: int = 1) -> str:
    """A canonical text of the type signature of ``count`` elements of ``datatype`` (its
    basic types in order, run-length encoded; a digest when long), for agreement checks.

    Datatypes that MPI lets match have the same signature (``MPI.LONG`` and ``MPI.INT64_T``
    here; five ``MPI.INT`` and a vector of five ints); ``float64`` and ``int64`` do not."""
    if datatype.is_predefined:
        return f"{count}{_basic(datatype)}"
    try:
        runs = _repeat(_runs(_dtlib().to_numpy_dtype(datatype)), count)
    except (ValueError, KeyError, TypeError):
        return f"{count}x{datatype.Get_size()}B"
    text = ",".join(f"{n}{code}" for code, n in runs)
    if len(text) <= 64:
        return text
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def plain_kind(buf: Any) -> Any:
    """What mpi4py infers a plain buffer's datatype from, as a key: a NumPy array's dtype,
    else the buffer's format (``"B"`` for bytes)."""
    if type(buf) is np.ndarray:
        return buf.dtype
    if type(buf) in (bytes, bytearray):
        return "B"
    fmt = _format(buf)
    return fmt[1].upper() if fmt[:1] == "Z" else fmt  # NumPy's code of a complex type


def plain_signature(kind: Any, nbytes: int) -> str:
    """The type signature of a plain buffer of ``nbytes`` bytes of elements ``kind``
    (:func:`plain_kind`), written as :func:`signature` writes it, so that a plain
    ``float64`` array and ``[buf, MPI.DOUBLE]`` agree; empty for no data (an empty
    signature matches any, as in MPI)."""
    if not nbytes:
        return ""
    try:
        dt = kind if isinstance(kind, np.dtype) else np.dtype(kind)
        runs = _runs(dt)
    except (TypeError, ValueError, KeyError):
        return f"{nbytes}B of {kind}"
    if not dt.itemsize:
        return f"{nbytes}B of {kind}"
    text = ",".join(f"{n}{code}" for code, n in _repeat(runs, nbytes // dt.itemsize))
    if len(text) <= 64:
        return text
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# -- helpers ------------------------------------------------------------------------------------


def _split(spec: Any, where: str) -> tuple[Any, int | None, int, Any]:
    """``(buf, count, displacement, datatype)`` of a spec, as mpi4py's message_simple."""
    if not isinstance(spec, list | tuple):
        return spec, None, 0, None
    count = displ = datatype = None
    if len(spec) == 2:
        buf, second = spec
        if isinstance(second, MPI.Datatype | str):
            datatype = second
        elif isinstance(second, list | tuple):
            count, displ = second
        else:
            count = second
    elif len(spec) == 3:
        buf, count, datatype = spec
        if isinstance(count, list | tuple):
            count, displ = count
    elif len(spec) == 4:
        buf, count, displ, datatype = spec
    else:
        raise HetcollError(
            f"{where}: a buffer spec is buf, [buf, type], [buf, count, type] or "
            "[buf, count, displ, type]"
        )
    try:
        count = None if count is None else int(count)
        displ = 0 if displ is None else int(displ)
    except (TypeError, ValueError):
        raise HetcollError(f"{where}: count and displacement must be integers") from None
    return buf, count, displ, datatype


def raw(buf: Any, writable: bool, where: str) -> memoryview:
    """The bytes of a plain buffer (not a spec), as mpi4py takes it: flat, any contiguity."""
    try:
        b = MPI.buffer(buf)  # the buffer protocol, DLPack and CUDA array interface, as mpi4py
    except BufferError as exc:
        raise HetcollError(f"{where}: the buffer must be contiguous ({exc})") from None
    except (TypeError, ValueError, NotImplementedError):
        raise HetcollError(
            f"{where}: expected a buffer (bytearray, NumPy array, DLPack tensor, ...), got "
            f"{type(buf).__name__}"
        ) from None
    if writable and b.readonly:
        raise HetcollError(f"{where}: the receive buffer is read-only")
    return memoryview(b)


def _infer(buf: Any, where: str) -> MPI.Datatype:
    """The datatype mpi4py infers from a buffer's format (``B`` is an unsigned char here,
    so that byte buffers can be reduced)."""
    fmt = _format(buf)
    code = fmt.lstrip(_ORDER) if fmt[:1] in _ORDER else fmt
    try:
        return MPI.Datatype.fromcode(code)
    except (ValueError, KeyError):
        raise HetcollError(
            f"{where}: cannot map the buffer's format {fmt!r} to an MPI datatype; give "
            "[buf, MPI.TYPE]"
        ) from None


def _format(buf: Any) -> str:
    """The buffer's format as mpi4py reads it (its ``PyMPI_GetBuffer``): the buffer
    protocol's, else the DLPack tensor's type, else the CUDA array interface's ``typestr``;
    ``"B"`` when none says."""
    try:
        return memoryview(buf).format
    except TypeError:
        pass
    if getattr(buf, "__dlpack__", None) is not None:
        try:
            return _dlpack_format(buf)
        except (TypeError, ValueError, AttributeError, KeyError, OSError, BufferError):
            return "B"
    cai = getattr(buf, "__cuda_array_interface__", None)
    if cai is not None:
        try:
            typestr = np.dtype(cai["typestr"])
        except (TypeError, ValueError, KeyError):
            return "B"
        return _KIND_FORMATS.get((typestr.kind, typestr.itemsize), "B")
    return "B"


_USED = b"used_dltensor"  # a capsule keeps the pointer to its name: a constant
_LONG_DOUBLE = np.dtype(np.longdouble).itemsize
#: mpi4py's formats of a type kind and item size (its ``dlpack_get_format`` and
#: ``cuda_get_format``): a complex number is a ``Z`` format; ``B`` when none fits
_KIND_FORMATS = {
    ("b", 1): "?",
    **{("i", k): c for c, k in (("b", 1), ("h", 2), ("i", 4), ("l", 8))},
    **{("u", k): c for c, k in (("B", 1), ("H", 2), ("I", 4), ("L", 8))},
    **{("f", k): c for c, k in (("e", 2), ("f", 4), ("d", 8), ("g", _LONG_DOUBLE))},
    **{("c", k): c for c, k in (("Zf", 8), ("Zd", 16), ("Zg", 2 * _LONG_DOUBLE))},
}
#: DLPack's type codes (``DLDataTypeCode``) as NumPy kinds
_DL_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}


def _dlpack_format(buf: Any) -> str:
    """The format mpi4py gives a DLPack exporter's tensor (``dlpack_get_format``), read
    from the ``DLDataType`` of the capsule its ``__dlpack__()`` returns (``DLTensor``: data
    pointer, device, ndim, then ``code``, ``bits``, ``lanes`` at byte 20): one lane of a
    kind and size, or two lanes of a float as a complex number (how a complex long double
    is exported, DLPack having no complex type of 256 bits)."""
    import ctypes

    capsule = buf.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    at = get(capsule, b"dltensor")
    if not at:
        raise ValueError("not a DLPack capsule")
    code, bits = (ctypes.c_uint8.from_address(at + k).value for k in (20, 21))
    lanes = ctypes.c_uint16.from_address(at + 22).value
    # consumed as a DLPack consumer does (renamed, the tensor's deleter called), so that
    # the exporter's capsule destructor has nothing left to free
    deleter = ctypes.c_void_p.from_address(at + 56).value  # DLManagedTensor.deleter
    rename = ctypes.pythonapi.PyCapsule_SetName
    rename.restype, rename.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    rename(capsule, _USED)
    if deleter:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(deleter)(at)
    if lanes == 2 and code == 2:  # two floats: a complex number of twice their size
        return _KIND_FORMATS.get(("c", bits // 4), "B")
    if lanes != 1 or bits % 8:
        return "B"
    return _KIND_FORMATS.get((_DL_KINDS.get(code, "?"), bits // 8), "B")


def _datatype(datatype: Any, where: str) -> MPI.Datatype:
    if isinstance(datatype, MPI.Datatype):
        if datatype == MPI.DATATYPE_NULL:
            raise HetcollError(f"{where}: the datatype is MPI.DATATYPE_NULL")
        return datatype
    try:
        return MPI.Datatype.fromcode(str(datatype))
    except (ValueError, KeyError):
        raise HetcollError(f"{where}: unknown datatype {datatype!r}") from None


def _contiguous(datatype: MPI.Datatype) -> bool:
    """Whether ``count`` elements are ``count * size`` bytes in signature order from the
    buffer's start: predefined types without holes (not ``MPI.DOUBLE_INT``), and contiguous
    or duplicated types of them."""
    lb, extent = datatype.Get_extent()
    if lb != 0 or extent != datatype.Get_size() or datatype.Get_true_extent() != (0, extent):
        return False
    if datatype.is_predefined:
        return True
    base, combiner, _ = datatype.decode()
    try:
        return combiner in ("CONTIGUOUS", "DUP") and _contiguous(base)
    finally:
        if not base.is_predefined:
            base.Free()


def _basic(datatype: MPI.Datatype) -> str:
    try:
        return _dtlib().to_numpy_dtype(datatype).str
    except (ValueError, KeyError, TypeError):
        return datatype.Get_name() or f"size{datatype.Get_size()}"


def _dtlib():
    from mpi4py.util import dtlib

    return dtlib


def _runs(dt: np.dtype) -> list[list[Any]]:
    """The basic types of a NumPy dtype in field order, run-length encoded."""
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        inner = _runs(base)
        return _repeat(inner, int(np.prod(shape)))
    if dt.names is None:
        return [[dt.str, 1]]
    out: list[list[Any]] = []
    for name in dt.names:
        _extend(out, _runs(dt.fields[name][0]))
    return out


def _repeat(runs: list[list[Any]], times: int) -> list[list[Any]]:
    if len(runs) == 1:
        return [[runs[0][0], runs[0][1] * times]]
    out: list[list[Any]] = []
    for _ in range(times):
        _extend(out, runs)
    return out


def _extend(out: list[list[Any]], runs: list[list[Any]]) -> None:
    for code, n in runs:
        if out and out[-1][0] == code:
            out[-1][1] += n
        else:
            out.append([code, n])
