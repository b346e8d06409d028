"""The datatype inferred for a plain buffer is the one mpi4py infers (its
``PyMPI_GetBuffer``: buffer protocol, then DLPack, then the CUDA array interface), for
every DLPack type mpi4py's own tests export; nothing printed while reading it."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from _dlpack import BOOL, COMPLEX, FLOAT, INT, UINT, DLPackTensor
from hetcoll.runtime.buffers import message, plain_kind, plain_signature, signature

_LD = np.dtype(np.longdouble).itemsize * 8

#: (code, bits, lanes) -> the datatype mpi4py's ``dlpack_get_format`` gives it
DLPACK = [
    ((BOOL, 8, 1), MPI.C_BOOL, np.bool_),
    ((INT, 8, 1), MPI.SIGNED_CHAR, np.int8),
    ((INT, 16, 1), MPI.SHORT, np.int16),
    ((INT, 32, 1), MPI.INT, np.int32),
    ((INT, 64, 1), MPI.LONG, np.int64),
    ((UINT, 8, 1), MPI.UNSIGNED_CHAR, np.uint8),
    ((UINT, 64, 1), MPI.UNSIGNED_LONG, np.uint64),
    ((FLOAT, 32, 1), MPI.FLOAT, np.float32),
    ((FLOAT, 64, 1), MPI.DOUBLE, np.float64),
    ((FLOAT, _LD, 1), MPI.LONG_DOUBLE, np.longdouble),
    ((COMPLEX, 64, 1), MPI.C_FLOAT_COMPLEX, np.complex64),
    ((COMPLEX, 128, 1), MPI.C_DOUBLE_COMPLEX, np.complex128),
    # two lanes of a float: how mpi4py's tests export a complex long double (DLPack's
    # bits is one byte: no 256-bit type), and mpi4py reads any complex so
    ((FLOAT, 32, 2), MPI.C_FLOAT_COMPLEX, np.complex64),
    ((FLOAT, 64, 2), MPI.C_DOUBLE_COMPLEX, np.complex128),
    ((FLOAT, _LD, 2), MPI.C_LONG_DOUBLE_COMPLEX, np.clongdouble),
]


@pytest.mark.parametrize(
    ("dltype", "datatype", "dtype"), DLPACK, ids=[f"{c}-{b}x{n}" for (c, b, n), _, _ in DLPACK]
)
def test_dlpack_datatype_is_mpi4pys(dltype, datatype, dtype, capfd):
    array = np.arange(6).astype(dtype)
    m = message(DLPackTensor(array, *dltype), writable=False, where="sendbuf")
    assert m.datatype == datatype
    assert m.count == 6
    assert m.nbytes == array.nbytes
    assert bytes(m.data()) == array.tobytes()
    # a plain DLPack buffer agrees with the same data as a typed spec and a NumPy array
    kind = plain_kind(DLPackTensor(array, *dltype))
    assert plain_signature(kind, array.nbytes) == signature(datatype, 6)
    assert plain_signature(plain_kind(array), array.nbytes) == signature(datatype, 6)
    assert capfd.readouterr() == ("", "")


def test_dlpack_type_mpi4py_cannot_map_is_bytes():
    """A vector type mpi4py has no format for is its bytes (``B``), as in mpi4py."""
    array = np.arange(4, dtype=np.int32)
    m = message(DLPackTensor(array, INT, 32, 4), writable=False, where="sendbuf")
    assert m.datatype == MPI.UNSIGNED_CHAR
    assert m.count == 16


@pytest.mark.parametrize(
    ("dtype", "datatype"),
    [(np.complex128, MPI.C_DOUBLE_COMPLEX), (np.bool_, MPI.C_BOOL), (np.int64, MPI.LONG)],
)
def test_cuda_array_interface_datatype_is_mpi4pys(dtype, datatype):
    class CAIOnly:
        def __init__(self, a):
            self.__cuda_array_interface__ = {
                "version": 3,
                "data": (a.__array_interface__["data"][0], False),
                "typestr": a.dtype.str,
                "shape": a.shape,
                "strides": None,
            }

    array = np.arange(5).astype(dtype)
    m = message(CAIOnly(array), writable=False, where="sendbuf")
    assert m.datatype == datatype
    assert m.count == 5
