"""The array API's elementwise functions the daemon has no op for, composed from ops it has:
``reciprocal``, ``round``, ``copysign``, ``logaddexp``, ``real``, ``imag``, ``conj``, and
``clip`` in the array API's signature. Each is a few elementwise requests on the daemon; nothing
is downloaded.

Limits of the compositions: ``imag`` and ``conj`` of a complex number with an infinite part give
NaN in the other part.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from . import _functions as f
from ._ops import ArrayOps

def _dtype(x: Any) -> np.dtype:
    return np.dtype(x.dtype)


def reciprocal(x: Any, /) -> Any:
    """``1 / x``."""
    return f.divide(1.0, x)


def round(x: Any, /) -> Any:  # noqa: A001: the array API's name
    """Nearest integer value, halves to even (NumPy's ``rint``); integers unchanged."""
    if _dtype(x).kind in "biu":
        return f.positive(x) if _dtype(x).kind != "b" else x.astype(x.dtype)
    return f.rint(x)


def copysign(x1: Any, x2: Any, /) -> Any:
    """``|x1|`` with the sign bit of ``x2`` (a NaN's included), in the promoted dtype."""
    if not isinstance(x2, ArrayOps):
        return f.absolute(x1) if math.copysign(1.0, x2) > 0 else f.negative(f.absolute(x1))
    magnitude = f.absolute(x1)
    if isinstance(x1, ArrayOps):
        dtype = np.result_type(x1.dtype, x2.dtype)
        if magnitude.dtype != dtype:
            magnitude = magnitude.astype(dtype)
    else:
        magnitude = f.add(f.multiply(x2, 0), abs(x1))  # a scalar x1, in x2's dtype
    return f.where(f.signbit(x2), f.negative(magnitude), magnitude)


def logaddexp(x1: Any, x2: Any, /) -> Any:
    """``log(exp(x1) + exp(x2))`` without overflow: ``max + log1p(exp(-|x1 - x2|))``."""
    top = f.maximum(x1, x2)
    spread = f.log1p(f.exp(f.negative(f.absolute(f.subtract(x1, x2)))))
    # Equal operands (infinities included, where x1 - x2 is NaN) give x + log(2).
    return f.where(f.equal(x1, x2), f.add(x1, math.log(2.0)), f.add(top, spread))


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)


def real(x: Any, /) -> Any:
    """The real part (a real array: itself, copied)."""
    if _dtype(x).kind != "c":
        return x.astype(x.dtype)
    return x.astype(_real_dtype(_dtype(x)))


def imag(x: Any, /) -> Any:
    """The imaginary part: ``real(x * -1j)`` (a real array: zeros)."""
    if _dtype(x).kind != "c":
        return f.multiply(x, 0)
    return real(f.multiply(x, -1j))


def conj(x: Any, /) -> Any:
    """The complex conjugate: ``real(x) - 1j * imag(x)`` (a real array: itself, copied)."""
    if _dtype(x).kind != "c":
        return x.astype(x.dtype)
    return f.subtract(real(x).astype(x.dtype), f.multiply(imag(x).astype(x.dtype), 1j))


def clip(x: Any, /, min: Optional[Any] = None, max: Optional[Any] = None) -> Any:  # noqa: A002
    """``x`` limited to ``[min, max]`` (either may be None), in ``x``'s dtype."""
    if getattr(x, "shape", None) is None:  # a traced value: the program's clip statement
        return f.clip(x, min, max)
    if min is None and max is None:
        return x.astype(x.dtype)
    if min is None:
        out = f.minimum(x, max)
    elif max is None:
        out = f.maximum(x, min)
    else:
        out = f.clip(x, min, max)
    return out if out.dtype == x.dtype else out.astype(x.dtype)


__all__ = ["clip", "conj", "copysign", "imag", "logaddexp", "real", "reciprocal", "round"]
