"""The array API's indexing functions, ``take`` and ``take_along_axis``: the daemon's integer-array
index (a Manipulate get_item). A DistributedArray of indices stays where it is and the daemon
reads its values (IndexItem.array: one copy of the indices to the daemon's host, never the
data); NumPy arrays and lists are sent as listed positions (IndexItem.indices, at most 65,536).

Positions count from the end when negative and are checked against their axis (IndexError,
``OutOfRangeError``), as NumPy's ``take`` with its default ``mode='raise'``.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from ._indexing import normalize_axis
from ._like import new_like
from ._manipulation import _array, _ndim, get_item, reshape
from .v1 import distarray_pb2 as pb


def take(x: Any, indices: Any, /, *, axis: Any = None) -> Any:
    """The elements of ``x`` at ``indices`` (a 1-D integer array) along ``axis``: ``x[..., idx,
    ...]`` with ``idx`` at ``axis``. ``axis`` may be left out only for a 1-D ``x``."""
    x = _array(x, "take")
    ndim = _ndim(x, "take")
    if axis is None:
        if ndim != 1:
            raise ValueError(f"take: give axis for a {ndim}-D array (it may be left out for 1-D)")
        axis = 0
    axis = normalize_axis(axis, ndim)
    if hasattr(indices, "handle"):  # a DistributedArray: its values stay on the devices
        nd, dtype = indices.ndim, np.dtype(indices.dtype)
    else:
        indices = np.asarray(indices)
        nd = indices.ndim
        dtype = indices.dtype if indices.size else np.dtype(np.int64)
    if nd != 1:
        raise ValueError(f"take: indices must be a 1-D integer array, not {nd}-D")
    if not np.issubdtype(dtype, np.integer):
        raise TypeError(f"take: indices must have an integer dtype, not {dtype}")
    return get_item(x, (slice(None),) * axis + (indices,))


def _take_flat(x: Any, positions: Any, out_shape: Tuple[int, ...]) -> Any:
    """The elements of ``x`` flattened at ``positions`` (flat positions, broadcast to
    ``out_shape`` first), shaped ``out_shape``: one held-index take and two reshapes."""
    if tuple(positions.shape) != out_shape:
        positions = positions + new_like(x, pb.Fill(zeros=pb.Fill.Zeros()), np.int64,
                                         shape=out_shape)
    flat = take(reshape(x, (-1,)), reshape(positions, (-1,)))
    return reshape(flat, out_shape)


def _broadcast(a: Tuple[int, ...], b: Tuple[int, ...], axis: int) -> Tuple[int, ...]:
    """The shape of ``a`` and ``b`` broadcast on every axis but ``axis`` (which takes ``b``'s)."""
    out = []
    for d, (m, n) in enumerate(zip(a, b)):
        if d == axis:
            out.append(n)
        elif m == n or n == 1:
            out.append(m)
        elif m == 1:
            out.append(n)
        else:
            raise ValueError(
                f"take_along_axis: x of shape {a} and indices of shape {b} do not broadcast "
                f"(axis {d})"
            )
    return tuple(out)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """``x``'s elements at ``indices`` along ``axis``, the other axes matched up: NumPy's
    ``take_along_axis``. ``indices`` is a DistributedArray of ``x``'s rank (an integer dtype),
    broadcast against ``x`` on the other axes.

    Computed on the devices: the flat positions ``sum_d coord_d * stride_d`` (elementwise ops on
    ``indices`` and arange coordinates), one ``take`` from ``x`` flattened, and a reshape. The
    positions are checked against ``axis`` first (one reduction read back)."""
    x = _array(x, "take_along_axis")
    ndim = _ndim(x, "take_along_axis")
    if ndim == 0:
        raise ValueError("take_along_axis takes an array of at least one axis, not a 0-d array")
    axis = normalize_axis(axis, ndim)
    if not hasattr(indices, "handle"):
        raise TypeError(
            "take_along_axis: indices must be a DistributedArray (upload NumPy indices with "
            f"distarray.asarray), not {type(indices).__name__}"
        )
    if indices.ndim != ndim:
        raise ValueError(
            f"take_along_axis: indices must have x's rank ({ndim}), not {indices.ndim}"
        )
    if not np.issubdtype(np.dtype(indices.dtype), np.integer):
        raise TypeError(f"take_along_axis: indices must have an integer dtype, not {indices.dtype}")
    shape = tuple(x.shape)
    out_shape = _broadcast(shape, tuple(indices.shape), axis)
    n = shape[axis]
    if 0 in out_shape:
        return new_like(x, pb.Fill(zeros=pb.Fill.Zeros()), x.dtype, shape=out_shape)
    if n == 0:
        raise IndexError(f"take_along_axis: cannot take from an empty axis {axis}")
    outside = (indices < -n) | (indices >= n)
    if bool(outside.any()):
        raise IndexError(f"take_along_axis: an index is out of bounds for axis {axis} with size {n}")
    strides = [int(np.prod(shape[d + 1:])) for d in range(ndim)]
    positions = indices.astype(np.int64)
    positions = positions + (positions < 0) * n  # negatives count from the end
    if strides[axis] != 1:
        positions = positions * strides[axis]
    for d in range(ndim):
        if d == axis or shape[d] != out_shape[d] or shape[d] == 1:
            continue  # x broadcast along d (or one element there): coordinate 0
        dims = [1] * ndim
        dims[d] = out_shape[d]
        coords = new_like(x, pb.Fill(arange=pb.Fill.Arange(start=0.0, step=float(strides[d]))),
                          np.int64, shape=tuple(dims))
        positions = positions + coords
    return _take_flat(x, positions, out_shape)


def _integer_array(item: Any) -> bool:
    """Whether a key item is an integer array of at least one axis (held, NumPy or a list)."""
    if hasattr(item, "handle"):
        return item.ndim > 0 and np.issubdtype(np.dtype(item.dtype), np.integer)
    if isinstance(item, (list, tuple, np.ndarray)):
        values = np.asarray(item)
        return values.ndim > 0 and (values.size == 0 or np.issubdtype(values.dtype, np.integer))
    return False


def _integer(item: Any) -> bool:
    return (isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))) or (
        hasattr(item, "handle") and item.ndim == 0
        and np.issubdtype(np.dtype(item.dtype), np.integer))


def arrays_key(x: Any, key: Any) -> bool:
    """Whether ``x[key]`` is the advanced indexing ``integer_arrays_get`` serves: one item per axis
    of ``x``, each an integer or an integer array, with several arrays or one of more than one
    axis (one 1-D array among integers is the daemon's own integer-array index)."""
    if not isinstance(key, tuple) or len(key) != x.ndim or x.ndim == 0:
        return False
    arrays = [item for item in key if _integer_array(item)]
    if not arrays or len(arrays) + sum(_integer(item) for item in key) != len(key):
        return False
    return len(arrays) > 1 or np.ndim(arrays[0]) > 1


def integer_arrays_get(x: Any, key: Tuple[Any, ...]) -> Any:
    """``x[i0, i1, ...]`` with every axis indexed by an integer or an integer array (NumPy's
    advanced indexing: the arrays broadcast together, and the result has their broadcast shape).
    Computed on the devices as ``take_along_axis`` is: the flat positions ``sum_d i_d *
    stride_d`` by elementwise ops, one ``take`` from ``x`` flattened, a reshape. NumPy index
    arrays are uploaded as indices (they are the key, not data). The positions are checked against
    their axes first (one reduction read back): IndexError as NumPy's."""
    shape = tuple(x.shape)
    strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    arrays = []
    constant = 0
    for d, item in enumerate(key):
        n = shape[d]
        if _integer(item):
            i = int(item)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
            constant += (i + n if i < 0 else i) * strides[d]
            continue
        if not hasattr(item, "handle"):
            item = x._client.from_numpy(np.asarray(item, dtype=np.int64))
        arrays.append((d, item))
    out_shape = tuple(np.broadcast_shapes(*(tuple(a.shape) for _, a in arrays)))
    if 0 in out_shape:
        return new_like(x, pb.Fill(zeros=pb.Fill.Zeros()), x.dtype, shape=out_shape)
    outside = None
    for d, a in arrays:
        bad = ((a < -shape[d]) | (a >= shape[d])).any()
        outside = bad if outside is None else outside | bad
    if bool(outside):
        raise IndexError("an index array holds a position out of bounds for its axis "
                         f"(the array's shape is {shape})")
    positions = None
    for d, a in arrays:
        term = a.astype(np.int64)
        term = term + (term < 0) * shape[d]
        if strides[d] != 1:
            term = term * strides[d]
        positions = term if positions is None else positions + term
    if constant:
        positions = positions + constant
    return _take_flat(x, positions, out_shape)


__all__ = ["take", "take_along_axis"]
