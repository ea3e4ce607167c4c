"""The array API's linear algebra functions of the main namespace: ``matmul`` for every numeric
dtype, ``vecdot``, ``tensordot``, ``outer``.

Every dtype runs as the daemon's Matmul: operands of two dtypes are converted to their promoted
dtype first (as NumPy promotes); integers wrap as NumPy's and bool is the OR of ANDs.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from . import _functions as f
from ._indexing import normalize_axis
from ._manipulation import permute_dims, reshape


def _check_shapes(a: Any, b: Any) -> None:
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul takes arrays of at least one axis, not 0-d")
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a != k_b:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not share their inner axis "
                         f"({k_a} != {k_b})")
    np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))


def matmul(x1: Any, x2: Any, /, *, allow_tf32: bool = False, a_symmetric: bool = False,
           index_map: Any = None, name: Optional[str] = None) -> Any:
    """``x1 @ x2`` as ``numpy.matmul``, for every dtype (see the module's docstring), as the
    daemon's Matmul: when the shared axis is split the result is a
    'sum'-mode array of partial products (combined on download); ``allow_tf32``,
    ``a_symmetric`` (x1 is a symmetric float32 or float64 matrix: held whole on one device, only
    its upper triangle is read), ``index_map`` (the result's layout) and ``name`` are its
    options."""
    options: Dict[str, Any] = {"allow_tf32": allow_tf32}
    if a_symmetric:
        options["a_symmetric"] = True
    if index_map is not None:
        options["index_map"] = index_map
    if name is not None:
        options["name"] = name
    if getattr(x1, "shape", None) is None or getattr(x2, "shape", None) is None:
        return f.matmul(x1, x2, **options)  # a traced value: the program's matmul statement
    dtype = np.result_type(x1.dtype, x2.dtype)
    if x1.dtype != dtype or x2.dtype != dtype:
        _check_shapes(x1, x2)  # before a conversion is sent (else the daemon checks them)
    a = x1 if x1.dtype == dtype else x1.astype(dtype)
    b = x2 if x2.dtype == dtype else x2.astype(dtype)
    return f.matmul(a, b, **options)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The dot product of vectors along ``axis`` (the operands broadcast; ``x1`` conjugated)."""
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    axis = normalize_axis(axis, len(shape))
    if axis - len(shape) < -min(x1.ndim, x2.ndim) or \
            x1.shape[axis - len(shape)] != x2.shape[axis - len(shape)]:
        raise ValueError(f"vecdot: shapes {x1.shape} and {x2.shape} differ along axis {axis}")
    dtype = np.result_type(x1.dtype, x2.dtype)
    if dtype.kind == "c":
        from ._api_elementwise import conj
        x1 = conj(x1)
    out = f.sum(f.multiply(x1, x2), axis)
    return out if out.dtype == dtype else out.astype(dtype)


def outer(x1: Any, x2: Any, /) -> Any:
    """The outer product of two vectors."""
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("outer takes two 1-D arrays")
    return f.multiply(x1[:, None], x2[None, :])


def tensordot(x1: Any, x2: Any, /, *,
              axes: Union[int, Tuple[Sequence[int], Sequence[int]]] = 2) -> Any:
    """Sum of products over ``axes`` (the last ``axes`` of ``x1`` with the first of ``x2``, or
    two sequences of axes), as a matmul of the operands moved and reshaped to 2-D."""
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise ValueError("tensordot: axes is an int or a pair of sequences")
        a_axes = [normalize_axis(a, x1.ndim) for a in axes[0]]
        b_axes = [normalize_axis(b, x2.ndim) for b in axes[1]]
    else:
        n = operator.index(axes)
        if n < 0 or n > min(x1.ndim, x2.ndim):
            raise ValueError(f"tensordot: axes={n} for arrays of {x1.ndim} and {x2.ndim} axes")
        a_axes = list(range(x1.ndim - n, x1.ndim))
        b_axes = list(range(n))
    if len(a_axes) != len(b_axes):
        raise ValueError("tensordot: the two sequences of axes differ in length")
    for a, b in zip(a_axes, b_axes):
        if x1.shape[a] != x2.shape[b]:
            raise ValueError(f"tensordot: axis {a} of x1 ({x1.shape[a]}) and axis {b} of x2 "
                             f"({x2.shape[b]}) differ")
    free_a = [i for i in range(x1.ndim) if i not in a_axes]
    free_b = [i for i in range(x2.ndim) if i not in b_axes]
    k = math.prod(x1.shape[a] for a in a_axes)
    a = x1 if free_a + a_axes == list(range(x1.ndim)) else permute_dims(x1, free_a + a_axes)
    b = x2 if b_axes + free_b == list(range(x2.ndim)) else permute_dims(x2, b_axes + free_b)
    a = reshape(a, (math.prod(x1.shape[i] for i in free_a), k))
    b = reshape(b, (k, math.prod(x2.shape[i] for i in free_b)))
    out_shape = tuple(x1.shape[i] for i in free_a) + tuple(x2.shape[i] for i in free_b)
    return reshape(matmul(a, b), out_shape)


__all__ = ["matmul", "outer", "tensordot", "vecdot"]
