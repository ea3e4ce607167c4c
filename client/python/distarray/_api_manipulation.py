"""The array API's shape functions beyond those of ``_manipulation``: ``broadcast_to`` (the
daemon's op), and ``broadcast_arrays``, ``roll``, ``tile``, ``repeat`` (an integer count),
``unstack``, composed from indexing, reshape, concat and broadcast_to on the daemon."""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._indexing import normalize_axes, normalize_axis
from ._manipulation import _array, concat, expand_dims, reshape
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
    ndim = max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    out = reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape)) if ndim > x.ndim else x
    for axis, r in enumerate(reps):
        if r != 1:
            out = concat([out] * r, axis=axis)
    return out if out is not x else x.astype(x.dtype)


def repeat(x: Any, repeats: Any, /, *, axis: Optional[int] = None) -> Any:
    """Each element repeated ``repeats`` times along ``axis`` (None: the flattened array). An
    integer count only: per-element counts (an array) give a shape that depends on the values,
    which is not served yet."""
    if not isinstance(repeats, int):
        if getattr(repeats, "ndim", None) == 0:
            repeats = int(repeats)
        else:
            raise TypeError("repeat: an array of counts is not served yet; give one integer")
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
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
