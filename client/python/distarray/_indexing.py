"""Python indexing keys (``a[2, 1:-1, None, ...]``) as the API's IndexKey.

NumPy's *basic* indexing is what the daemon serves: integers (anything with ``__index__``: numpy
integers, 0-d integer arrays), slices with any step, ``None`` and ``...``. Boolean masks and
integer arrays (NumPy's advanced indexing) are refused here, before any call, with an error that
says they are not served yet, rather than being mistaken for something else: a bool is an int to
Python, and a list would otherwise look like a tuple of keys.

When the array's shape is known (a DistributedArray; a traced Var has none) the key is checked
against it here too, so an out-of-range integer raises IndexError naming the axis, as NumPy's
does, without a round trip. The daemon checks again (OUT_OF_RANGE, OutOfRangeError).
"""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .v1 import distarray_pb2 as pb

# NumPy's AxisError (an IndexError and a ValueError) moved to numpy.exceptions in 1.25.
AxisError = getattr(getattr(np, "exceptions", np), "AxisError")

#: What a key may hold: one item or a tuple of them.
KeyItem = Union[int, slice, None, "ellipsis", np.integer]
Key = Union[KeyItem, Tuple[KeyItem, ...]]

#: The daemon's bound on the items of one key (IndexKey's comment).
MAX_ITEMS = 64

_VALID = (
    "only integers, slices (`:`), ellipsis (`...`) and None (numpy.newaxis) are valid indices "
    "of a DistributedArray"
)
_MASK = (
    "this boolean-mask index is not served yet by distarray: a 1-D mask along one axis is "
    "(a[mask], a[:, mask]), and so is a mask held on the devices of any rank, alone "
    "(a[distarray.asarray(mask)]); a 0-d or multi-dimensional NumPy one is not"
)
_INTEGER_ARRAY = (
    "this integer-array index is not served yet by distarray: one 1-D integer array or list "
    "per key is (a[[0, 2]], a[:, idx]); several, or multi-dimensional ones, are not"
)


def _is_bool(item: Any) -> bool:
    if isinstance(item, (bool, np.bool_)):
        return True
    dtype = getattr(item, "dtype", None)
    return dtype is not None and np.dtype(dtype) == np.bool_


def _held(item: Any) -> Optional[str]:
    """The handle of a 1-D integer DistributedArray index (``a[idx]``, take): the daemon reads its
    values where they are (IndexItem.array); None for anything else. Other arrays held on the
    devices (masks, other ranks) raise IndexError."""
    if isinstance(item, (list, tuple, np.ndarray)) or not hasattr(item, "handle"):
        return None
    if getattr(item, "ndim", 0) == 0 or _is_bool(item):
        return None  # a 0-d array is an integer (``__index__``); a mask is refused as one
    dtype = np.dtype(item.dtype)
    if item.ndim != 1 or not np.issubdtype(dtype, np.integer):
        raise IndexError(
            "an index held on the devices (a DistributedArray) must be a 1-D integer array, not "
            f"a {item.ndim}-D {dtype} one"
        )
    return item.handle


def _positions(item: Any) -> Optional["np.ndarray"]:
    """The positions of a 1-D integer array or list (``a[[0, 2]]``), or of a 1-D boolean mask
    (``a[mask]``: its True positions, as NumPy's ``nonzero``); None for anything else. A 1-D
    integer DistributedArray index is _held's; other ones are refused."""
    if not isinstance(item, (list, tuple, np.ndarray)):
        if getattr(item, "ndim", 0) > 0:  # an array that is not NumPy's: a DistributedArray
            raise IndexError(
                "this index held on the devices (a DistributedArray) is not served yet: a 1-D "
                "integer one is (a[idx], take); pass other ones' values explicitly: "
                "a[np.asarray(idx)]"
            )
        return None
    values = np.asarray(item)
    if values.ndim != 1:
        return None
    if values.dtype == np.bool_:
        return np.flatnonzero(values).astype(np.int64)
    if values.size == 0:
        return values.astype(np.int64)
    if not np.issubdtype(values.dtype, np.integer):
        return None
    return values.astype(np.int64)


def _refuse_advanced(item: Any) -> None:
    """Raises the error for an item that is an array or sequence (NumPy's advanced indexing)."""
    if _is_bool(item):
        raise IndexError(_MASK)
    if isinstance(item, (list, tuple)) or getattr(item, "ndim", 0) > 0:
        flat = np.asarray(item, dtype=object).ravel() if isinstance(item, (list, tuple)) else ()
        if any(_is_bool(v) for v in flat):
            raise IndexError(_MASK)
        raise IndexError(_INTEGER_ARRAY)


def _index(item: Any) -> Optional[int]:
    """``item`` as a position when it is an integer-like scalar (``__index__``), else None."""
    if _is_bool(item):
        # A bool is an int to Python; NumPy reads a[True] as a 0-d mask (a new axis).
        raise IndexError(_MASK)
    if getattr(item, "ndim", 0) > 0:
        return None
    try:
        return operator.index(item)
    except TypeError:
        return None


def _slice_bound(value: Any, what: str) -> Optional[int]:
    if value is None:
        return None
    if _is_bool(value):
        raise TypeError(f"slice {what} must be an integer or None, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"slice {what} must be an integer or None, not {type(value).__name__}"
        ) from None


def _slice(s: slice) -> "pb.Slice":
    out = pb.Slice()
    start = _slice_bound(s.start, "start")
    stop = _slice_bound(s.stop, "stop")
    step = _slice_bound(s.step, "step")
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if start is not None:
        out.start = start
    if stop is not None:
        out.stop = stop
    if step is not None:
        out.step = step
    return out


def _one_array_per_key(arrays: int) -> None:
    """Raises NumPy's IndexError past the one integer array (or mask) a daemon key holds."""
    if arrays > 1:
        raise IndexError(
            "distarray serves one integer-array (or mask) index per key among slices, as take "
            "does, or an integer or integer array on every axis (x[i, j])"
        )


def index_key(key: Any, shape: Optional[Sequence[int]] = None) -> "pb.IndexKey":
    """The IndexKey for a Python key; ``shape`` (when known) checks the key against the array.

    Raises IndexError for keys NumPy would refuse (a float, a second ``...``, too many indices,
    an integer outside its axis) and for advanced indexing (not served yet), TypeError for bad
    slice bounds, ValueError for a zero step."""
    items = key if isinstance(key, tuple) else (key,)
    if len(items) > MAX_ITEMS:
        raise IndexError(f"a key of {len(items)} items; distarray takes at most {MAX_ITEMS}")
    proto = pb.IndexKey()
    consumed: List[Optional[int]] = []  # per item: the position for an int, else None
    ellipses = 0
    axes_used = 0
    lists = 0
    for item in items:
        out = proto.items.add()
        if item is None:
            out.new_axis.SetInParent()
        elif item is Ellipsis:
            ellipses += 1
            if ellipses > 1:
                raise IndexError("an index can only have a single ellipsis ('...')")
            out.ellipsis.SetInParent()
        elif isinstance(item, slice):
            out.slice.CopyFrom(_slice(item))
            axes_used += 1
        elif (handle := _held(item)) is not None:
            lists += 1
            _one_array_per_key(lists)
            out.array.handle = handle  # read on the daemon; it checks the positions
            axes_used += 1
        elif (positions := _positions(item)) is not None:
            lists += 1
            _one_array_per_key(lists)
            if np.asarray(item).dtype == np.bool_ and shape is not None and axes_used < len(shape):
                size = tuple(shape)[axes_used]
                if len(item) != size:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {axes_used}; "
                        f"size of axis is {size} but size of corresponding boolean axis is "
                        f"{len(item)}"
                    )
            out.indices.values.extend(positions.tolist())
            axes_used += 1
        else:
            position = _index(item)
            if position is None:
                _refuse_advanced(item)
                raise IndexError(f"{_VALID}, not {type(item).__name__}")
            out.index = position
            axes_used += 1
        consumed.append(out.index if out.WhichOneof("kind") == "index" else None)
    if shape is not None:
        _check(items, consumed, axes_used, tuple(shape))
    return proto


def _check(items: Sequence[Any], positions: Sequence[Optional[int]], axes_used: int,
           shape: Tuple[int, ...]) -> None:
    """NumPy's errors for a key that does not fit ``shape``: too many indices, or an integer
    outside its axis (the message names the axis, as NumPy's)."""
    ndim = len(shape)
    if axes_used > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {axes_used} were "
            "indexed"
        )
    axis = 0
    for item, position in zip(items, positions):
        if item is None:
            continue
        if item is Ellipsis:
            axis += ndim - axes_used
            continue
        if position is not None:
            size = shape[axis]
            if not -size <= position < size:
                raise IndexError(
                    f"index {position} is out of bounds for axis {axis} with size {size}"
                )
        axis += 1


def normalize_axis(axis: Any, ndim: int, what: str = "axis") -> int:
    """One axis in ``[0, ndim)`` (negative counts from the end); NumPy's AxisError otherwise."""
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(axis).__name__}") from None
    if not -ndim <= a < ndim:
        raise AxisError(a, ndim)
    return a % ndim


def normalize_axes(axis: Any, ndim: int) -> Tuple[int, ...]:
    """An int or a sequence of them as distinct axes in ``[0, ndim)`` (ValueError on repeats)."""
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return out
