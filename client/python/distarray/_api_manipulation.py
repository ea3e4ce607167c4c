"""The array API's shape functions beyond those of ``_manipulation``: ``broadcast_to`` (the
daemon's op), and ``broadcast_arrays``, ``roll``, ``tile``, ``repeat``, ``unstack``, composed
from indexing, reshape, concat and broadcast_to on the daemon (``repeat`` with an array of
counts: a running count, a search and a gather, ``take``)."""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._api_cumulative import cumulative_sum
from ._api_namespace import astype
from ._api_searching import count_arange, gather
from ._api_sorting import searchsorted
from ._indexing import normalize_axes, normalize_axis
from ._manipulation import ManipulationOps, _array, concat, expand_dims, reshape
from .v1 import distarray_pb2 as pb


def broadcast_to(x: Any, /, shape: Sequence[int], *, name: Optional[str] = None) -> Any:
    """``x`` broadcast to ``shape`` as NumPy broadcasts (a new array)."""
    x = _array(x, "broadcast_to")
    dims = tuple(operator.index(d) for d in shape)
    np.broadcast_shapes(tuple(x.shape), dims)  # NumPy's ValueError for shapes that do not fit
    spec = pb.ManipulationSpec()
    spec.broadcast_to.source.CopyFrom(x._operand(x))
    spec.broadcast_to.shape.dims.extend(dims)
    return x._manipulate(spec, name)


def broadcast_arrays(*arrays: Any) -> List[Any]:
    """The arrays broadcast to their common shape."""
    shape = np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    return [a if tuple(a.shape) == shape else broadcast_to(a, shape) for a in arrays]


def roll(x: Any, /, shift: Union[int, Tuple[int, ...]], *,
         axis: Union[None, int, Tuple[int, ...]] = None) -> Any:
    """Elements shifted along ``axis`` (None: the flattened array), wrapping around."""
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, axis=0), x.shape)
    shifts = shift if isinstance(shift, tuple) else (shift,)
    axes = axis if isinstance(axis, tuple) else (axis,)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis take the same number of entries")
    out = x
    for s, a in zip(shifts, axes):
        a = normalize_axis(a, x.ndim)
        n = x.shape[a]
        s = operator.index(s) % n if n else 0
        if s == 0:
            continue
        head = (slice(None),) * a
        out = concat([out[head + (slice(n - s, None),)], out[head + (slice(None, n - s),)]],
                     axis=a)
    return out if out is not x else x.astype(x.dtype)


def tile(x: Any, repetitions: Tuple[int, ...], /) -> Any:
    """``x`` repeated ``repetitions[i]`` times along axis i (NumPy's ``tile``)."""
    reps = tuple(operator.index(r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must not be negative, not {reps}")
    ndim = max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    out = reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape)) if ndim > x.ndim else x
    for axis, r in enumerate(reps):
        if r == 0:  # an empty axis: no copy to join
            out = out[(slice(None),) * axis + (slice(0, 0),)]
        elif r != 1:
            out = concat([out] * r, axis=axis)
    return out if out is not x else x.astype(x.dtype)


def _repeat_each(x: Any, repeats: Any, axis: int) -> Any:
    """``x`` with element i along ``axis`` repeated ``repeats[i]`` times: the result's position j
    takes element ``searchsorted(cumulative_sum(repeats), j, side='right')`` (the first whose
    running count exceeds j), gathered by ``take``. The total, the result's length, is read back
    with the smallest count (one download of two elements)."""
    n = x.shape[axis]
    if repeats.ndim != 1 or repeats.shape[0] != n:
        raise ValueError(
            f"repeat: repeats of shape {tuple(repeats.shape)} for an axis of length {n} (give "
            f"one count, or {n})"
        )
    if repeats.dtype.kind not in "iu":
        raise TypeError(f"repeat: repeats must have an integer dtype, not {repeats.dtype}")
    counts = astype(repeats, np.int64)
    if n == 0:
        return x.astype(x.dtype)
    total, smallest = (int(v) for v in concat(
        [reshape(counts.sum(combine=True), (1,)), reshape(counts.min(combine=True), (1,))]
    ).to_numpy())
    if smallest < 0:
        raise ValueError("repeat: repeats may not contain negative values")
    head = (slice(None),) * axis
    if total == 0:
        return x[head + (slice(0, 0),)]
    ends = cumulative_sum(counts)
    source = searchsorted(ends, count_arange(x, total, start=0), side="right")
    return gather(x, source, axis=axis)


def _repeat_listed(x: Any, counts: np.ndarray, axis: int) -> Any:
    """``repeat`` with counts held here: the positions are listed in the request (as a NumPy
    index is), gathered by ``take`` in batches."""
    n = x.shape[axis]
    if counts.shape != (n,):
        raise ValueError(
            f"repeat: repeats of shape {counts.shape} for an axis of length {n} (give one "
            f"count, or {n})"
        )
    if (counts < 0).any():
        raise ValueError("repeat: repeats may not contain negative values")
    positions = np.repeat(np.arange(n, dtype=np.int64), counts)
    if positions.size == 0:
        return x[(slice(None),) * axis + (slice(0, 0),)]
    return gather(x, positions, axis=axis)


def repeat(x: Any, repeats: Any, /, *, axis: Optional[int] = None) -> Any:
    """Each element repeated ``repeats`` times along ``axis`` (None: the flattened array).
    ``repeats`` is an integer (a broadcast on the devices) or an integer array of one count
    per element (or one count for all), whose total, the result's length, is read back: one
    download of the total (and the smallest count, which must not be negative)."""
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    if not isinstance(repeats, int):
        if not isinstance(repeats, ManipulationOps):  # host counts: NumPy's, a list
            counts = np.asarray(repeats)
            if counts.dtype.kind not in "iub":
                raise TypeError(f"repeat: repeats must be integers, not {counts.dtype}")
            if counts.ndim == 0 or counts.shape == (1,):
                repeats = int(counts.reshape(()))
            else:
                return _repeat_listed(x, counts, axis)
        elif repeats.ndim == 0 or tuple(repeats.shape) == (1,):
            if repeats.dtype.kind not in "iu":
                raise TypeError(f"repeat: repeats must be integers, not {repeats.dtype}")
            repeats = int(reshape(repeats, ()))  # one count for every element: read back
        else:
            return _repeat_each(x, repeats, axis)
    if repeats < 0:
        raise ValueError("repeat: repeats may not be negative")
    expanded = expand_dims(x, axis + 1)
    shape = list(expanded.shape)
    shape[axis + 1] = repeats
    out_shape = list(x.shape)
    out_shape[axis] *= repeats
    return reshape(broadcast_to(expanded, tuple(shape)), tuple(out_shape))


def unstack(x: Any, /, *, axis: int = 0) -> Tuple[Any, ...]:
    """The sub-arrays along ``axis``, as a tuple."""
    axis = normalize_axis(axis, x.ndim)
    head = (slice(None),) * axis
    return tuple(x[head + (i,)] for i in range(x.shape[axis]))


__all__ = ["broadcast_arrays", "broadcast_to", "repeat", "roll", "tile", "unstack"]
