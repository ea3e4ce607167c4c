"""Conversions between NumPy/Python values and the API's dtypes, modes and scalars."""

from __future__ import annotations

import numbers
from typing import Union

import numpy as np

from .v1 import distarray_pb2 as pb

# NumPy dtype <-> DType. bfloat16 needs the ml_dtypes package (`pip install distarray[bfloat16]`),
# NumPy has no such dtype. GetServerInfo.implemented_dtypes lists what a daemon serves.
_TO_PROTO = {
    np.dtype(np.bool_): pb.DTYPE_BOOL,
    np.dtype(np.int8): pb.DTYPE_INT8,
    np.dtype(np.int16): pb.DTYPE_INT16,
    np.dtype(np.int32): pb.DTYPE_INT32,
    np.dtype(np.int64): pb.DTYPE_INT64,
    np.dtype(np.uint8): pb.DTYPE_UINT8,
    np.dtype(np.uint16): pb.DTYPE_UINT16,
    np.dtype(np.uint32): pb.DTYPE_UINT32,
    np.dtype(np.uint64): pb.DTYPE_UINT64,
    np.dtype(np.float16): pb.DTYPE_FLOAT16,
    np.dtype(np.float32): pb.DTYPE_FLOAT32,
    np.dtype(np.float64): pb.DTYPE_FLOAT64,
    np.dtype(np.complex64): pb.DTYPE_COMPLEX64,
    np.dtype(np.complex128): pb.DTYPE_COMPLEX128,
}
try:
    import ml_dtypes

    _TO_PROTO[np.dtype(ml_dtypes.bfloat16)] = pb.DTYPE_BFLOAT16
except ImportError:  # bfloat16 arrays then download as an error naming the package
    pass
_FROM_PROTO = {v: k for k, v in _TO_PROTO.items()}

DTypeLike = Union[np.dtype, type, str]


def to_proto_dtype(dtype: DTypeLike) -> int:
    """The API's DType for a NumPy dtype (ValueError for one the API has no name for)."""
    d = np.dtype(dtype)
    if d.byteorder == ">":
        d = d.newbyteorder("<")
    try:
        return _TO_PROTO[d]
    except KeyError:
        raise ValueError(
            f"distarray has no dtype for {d} "
            "(bool, [u]int8-64, float16/32/64, bfloat16, complex64/128)"
        ) from None


def from_proto_dtype(dtype: int) -> np.dtype:
    """The NumPy dtype for one of the API's DTypes (little-endian, as the wire bytes are)."""
    if dtype == pb.DTYPE_BFLOAT16 and dtype not in _FROM_PROTO:
        raise ValueError("bfloat16 arrays need the ml_dtypes package (pip install ml_dtypes)")
    try:
        return _FROM_PROTO[dtype]
    except KeyError:
        raise ValueError(f"unknown DType {dtype}") from None


def dtype_name(dtype: int) -> str:
    """The name of one of the API's DTypes ("float32", "bfloat16"), whether or not NumPy can
    hold it here (bfloat16 without ml_dtypes); the number for one this SDK does not know."""
    if dtype in _FROM_PROTO:
        return str(_FROM_PROTO[dtype])
    try:
        return pb.DType.Name(dtype).removeprefix("DTYPE_").lower()
    except ValueError:
        return str(dtype)


def dtype_itemsize(dtype: int) -> int:
    """Bytes per element of one of the API's DTypes, bfloat16 included without ml_dtypes."""
    if dtype == pb.DTYPE_BFLOAT16:
        return 2
    return from_proto_dtype(dtype).itemsize


MODES = {
    "replica": pb.MODE_REPLICA,
    "sum": pb.MODE_SUM,
    "prod": pb.MODE_PROD,
    "max": pb.MODE_MAX,
    "min": pb.MODE_MIN,
}
_MODE_NAMES = {v: k for k, v in MODES.items()}

ModeLike = Union[str, int]


def to_proto_mode(mode: ModeLike) -> int:
    """'replica', 'sum', 'prod', 'max' or 'min' (cupyx's names), or a pb.Mode value."""
    if isinstance(mode, str):
        try:
            return MODES[mode.lower()]
        except KeyError:
            raise ValueError(f"unknown mode {mode!r}; one of {sorted(MODES)}") from None
    if mode in _MODE_NAMES:
        return int(mode)
    raise ValueError(f"unknown mode {mode!r}")


def mode_name(mode: int) -> str:
    return _MODE_NAMES.get(mode, str(mode))


ScalarLike = Union[bool, int, float, complex, np.generic]


def is_scalar(value) -> bool:
    """Python and NumPy numbers (complex included) and bools are scalar operands (not 0-d arrays)."""
    return isinstance(value, (bool, np.bool_, numbers.Number, np.number))


def to_proto_scalar(value: ScalarLike) -> "pb.Scalar":
    """A weak scalar operand (it takes the arrays' dtype, as Python scalars do in NumPy 2)."""
    s = pb.Scalar()
    if isinstance(value, (bool, np.bool_)):
        s.bool_value = bool(value)
    elif isinstance(value, (numbers.Integral, np.integer)):
        v = int(value)
        if -(2**63) <= v < 2**63:
            s.int_value = v
        elif 0 <= v < 2**64:
            s.uint_value = v
        else:
            raise OverflowError(f"the integer {v} does not fit in 64 bits")
    elif isinstance(value, (numbers.Real, np.floating)):
        s.float_value = float(value)
    elif isinstance(value, (numbers.Complex, np.complexfloating)):
        v = complex(value)
        s.complex_value.real = v.real
        s.complex_value.imag = v.imag
    else:
        raise TypeError(f"not a scalar operand: {type(value).__name__}")
    return s
