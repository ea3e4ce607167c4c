"""The array API's ``cumulative_sum`` and ``cumulative_prod``: the daemon's scan (a Manipulate
request, or a program's ``manipulate`` statement for a traced value). Each chunk scans its own
lines and starts them from the carry of the chunks before it along the axis, so only those
carries move between devices; the result keeps the source's layout. Integers wrap as NumPy's;
float sums combine partial sums in another order than a sequential loop, so their last bits may
differ from NumPy's ``cumsum``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._indexing import normalize_axis
from ._like import new_like, ones_fill, zeros_fill
from ._manipulation import _array, _known_ndim, concat
from .v1 import distarray_pb2 as pb


def _scan(name: str, x: Any, axis: Optional[int], dtype: Any, include_initial: bool) -> Any:
    x = _array(x, name)
    product = name == "cumulative_prod"
    ndim = _known_ndim(x)
    if ndim is None:  # a traced value: the daemon checks the axis and applies NumPy's dtypes
        if axis is None or dtype is not None or include_initial:
            raise ValueError(f"{name} in a program takes an explicit axis, and neither dtype nor "
                             "include_initial (cast with astype, join with concat)")
        return _request(x, int(axis), product)
    if axis is None:
        if ndim != 1:
            raise ValueError(f"{name}: axis is required for an array of {ndim} axes")
        axis = 0
    axis = normalize_axis(axis, ndim)
    reduce = np.prod if product else np.sum
    out_dtype = reduce(np.zeros(1, x.dtype), dtype=dtype).dtype  # the reduction's dtype
    # The daemon scans in NumPy's default dtype for the source's; another dtype asked for is
    # the source converted first (the same results: integers wrap modulo 2^bits either way).
    y = x if dtype is None or x.dtype == out_dtype else x.astype(out_dtype)
    out = _request(y, axis, product)
    if out.dtype != out_dtype:
        out = out.astype(out_dtype)
    if include_initial:
        shape = list(out.shape)
        shape[axis] = 1
        fill = ones_fill() if product else zeros_fill()
        out = concat([new_like(out, fill, shape=tuple(shape)), out], axis=axis)
    return out


def _request(x: Any, axis: int, product: bool) -> Any:
    spec = pb.ManipulationSpec()
    spec.scan.source.CopyFrom(x._operand(x))
    spec.scan.axis = axis
    spec.scan.product = product
    return x._manipulate(spec, None)


def cumulative_sum(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """Running sums along ``axis`` (optional for 1-D arrays); dtypes as ``sum``'s;
    ``include_initial``: a leading 0."""
    return _scan("cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """Running products along ``axis``; dtypes as ``prod``'s; ``include_initial``: a leading 1."""
    return _scan("cumulative_prod", x, axis, dtype, include_initial)


__all__ = ["cumulative_prod", "cumulative_sum"]
