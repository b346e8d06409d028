"""A host-memory DLPack exporter of any ``DLDataType`` (a NumPy array's bytes seen only
through ``__dlpack__``, DLPack 0.x capsules), as mpi4py's own tests export their arrays:
a complex long double is two lanes of a 128-bit float, a bool ``code`` 6."""

from __future__ import annotations

import ctypes

import numpy as np

#: DLPack's type codes
INT, UINT, FLOAT, COMPLEX, BOOL = 0, 1, 2, 5, 6


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _Tensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_new = ctypes.pythonapi.PyCapsule_New
_new.restype, _new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLPackTensor:
    """``array``'s memory as a one-dimensional tensor of ``len(array.view(uint8)) /
    (bits * lanes / 8)`` elements of type ``(code, bits, lanes)``; no buffer protocol.
    The exporter keeps every structure alive (no deleter: nothing to free)."""

    def __init__(self, array: np.ndarray, code: int, bits: int, lanes: int = 1) -> None:
        self.array = array
        self.dtype = (code, bits, lanes)
        nbytes = array.view(np.uint8).size
        self._shape = (ctypes.c_int64 * 1)(nbytes * 8 // (bits * lanes))
        self._kept: list = []

    def __dlpack__(self, stream=None):
        code, bits, lanes = self.dtype
        tensor = _Tensor(
            self.array.ctypes.data, _Device(1, 0), 1, _DataType(code, bits, lanes), self._shape
        )
        managed = _Managed(tensor, None, None)
        self._kept.append(managed)
        return _new(ctypes.addressof(managed), b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU
