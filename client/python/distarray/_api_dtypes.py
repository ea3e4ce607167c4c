"""The array API's data type functions: ``isdtype``, ``finfo``, ``iinfo``, ``result_type``,
``can_cast``. distarray's dtypes are NumPy's, and so are its promotion rules (NumPy 2's, which the
array API's table is a part of), so these answer from NumPy without any call to the daemon."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any, Tuple, Union

import numpy as np

API_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                   "uint64", "float32", "float64", "complex64", "complex128")

_KINDS = {
    "bool": lambda d: d == np.bool_,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f",
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc",
}


def _dtype_of(x: Any) -> np.dtype:
    """The dtype of an array or a dtype (TypeError for anything else)."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None and not isinstance(x, (type, np.dtype)):
        return np.dtype(dtype)
    try:
        return np.dtype(x)
    except TypeError:
        raise TypeError(f"not a dtype or an array: {x!r}") from None


def isdtype(dtype: Any, kind: Union[Any, str, Tuple[Any, ...]]) -> bool:
    """Whether ``dtype`` is ``kind``: a dtype, one of the array API's kind names ('bool',
    'signed integer', 'unsigned integer', 'integral', 'real floating', 'complex floating',
    'numeric'), or a tuple of those."""
    if not isinstance(dtype, (type, np.dtype)):
        raise TypeError(f"isdtype takes a dtype, not {type(dtype).__name__}")
    d = np.dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(d, k) for k in kind)
    if isinstance(kind, str):
        try:
            return _KINDS[kind](d)
        except KeyError:
            raise ValueError(f"unknown dtype kind {kind!r}; one of {sorted(_KINDS)}") from None
    return d == np.dtype(kind)


@dataclass(frozen=True)
class finfo_object:
    """``finfo``'s answer: Python floats, as the array API says (NumPy's are NumPy scalars)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:
    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type: Any, /) -> finfo_object:  # noqa: A002: the array API's name
    """Machine limits of a floating dtype (a complex dtype: of its real part)."""
    info = np.finfo(_dtype_of(type))
    return finfo_object(int(info.bits), float(info.eps), float(info.max), float(info.min),
                        float(info.smallest_normal), np.dtype(info.dtype))


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer dtype."""
    info = np.iinfo(_dtype_of(type))
    return iinfo_object(int(info.bits), int(info.max), int(info.min), np.dtype(info.dtype))


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype an op of these arrays, dtypes and Python scalars gives (scalars are weak)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    items = []
    for a in arrays_and_dtypes:
        if isinstance(a, (bool, int, float, complex)):
            items.append(a)
        else:
            items.append(_dtype_of(a))
    if builtins.all(isinstance(a, (bool, int, float, complex)) for a in items):
        raise ValueError("result_type needs at least one array or dtype among its arguments")
    return np.result_type(*items)


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether the array API's promotion rules cast ``from_`` to ``to``: within one kind (bool,
    integers, real or complex floats, a real float to a complex of its precision or more), to a
    dtype that holds every value."""
    f, t = _dtype_of(from_), np.dtype(to)
    if f == np.bool_ or t == np.bool_:
        return f == t
    if (f.kind in "iu") != (t.kind in "iu"):
        return False
    return bool(np.can_cast(f, t, casting="safe"))
