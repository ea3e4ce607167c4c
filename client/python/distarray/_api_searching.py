"""The array API's ``nonzero``, composed from the daemon's ops: no element leaves the devices but
one count.

The positions of the True elements of a flat mask are found without a gather: ``c`` is the
running count of the mask (``cumulative_sum``), so the k-th True element (counting from 1) sits
at the first position where ``c`` reaches k, which ``searchsorted(c, [1, 2, ..., n],
side='left')`` finds for every k at once. ``n``, the number of True elements, is the result's
length, and a shape must be known before the daemon can make the array: it is the one value read
back (a download of one 0-d element), as CuPy's ``nonzero`` synchronizes to learn it.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from . import _functions as f
from ._api_cumulative import cumulative_sum
from ._api_indexing import take
from ._api_namespace import astype
from ._api_sorting import searchsorted
from ._index_map import split_index_map
from ._like import new_like
from ._manipulation import _array, concat, reshape
from .v1 import distarray_pb2 as pb


def count_arange(like: Any, n: int, start: int = 1) -> Any:
    """``[start, start + 1, ...]`` of length ``n`` (int64) on ``like``'s client, split over
    ``like``'s devices (a one-device layout when ``like`` is empty)."""
    devices = list(like.devices) or [0]
    index_map = split_index_map((n,), 0, devices) if n else None
    fill = pb.Fill(arange=pb.Fill.Arange(start=float(start), step=1.0))
    return new_like(like, fill, np.int64, shape=(n,), index_map=index_map)


#: Positions per take in ``gather``: the daemon cuts an index array into runs in arithmetic
#: progression and plans each run's piece of each chunk it meets, bounded by --max_chunks
#: (65,536; the result is compacted afterwards); scattered positions are a run each, so 8,192
#: of them stay under it for a source split into up to 8 pieces along the other axes.
GATHER_BATCH = 8192
# The most arrays one concat takes (the daemon's bound on ConcatSpec.sources).
CONCAT_SOURCES = 1024


def _pieces(x: Any) -> int:
    return sum(len(boxes) for boxes in x.index_map.values())


def gather(x: Any, positions: Any, axis: int = 0) -> Any:
    """``take(x, positions, axis=axis)`` for any number of positions: in batches of
    ``GATHER_BATCH``, each batch's result (up to one chunk per position) gathered into one
    piece per device of ``x`` (split along ``axis``) before the batches are joined, so that
    scattered positions (a permutation, a sparse mask) do not leave one chunk per element."""
    n = positions.shape[0]
    if n <= GATHER_BATCH:
        return take(x, positions, axis=axis)
    devices = list(x.devices) or [0]
    parts = []
    for start in range(0, n, GATHER_BATCH):
        part = take(x, positions[start:start + GATHER_BATCH], axis=axis)
        if _pieces(part) > len(devices):
            part = part.reshard(split_index_map(tuple(part.shape), axis, devices))
        parts.append(part)
    # A concat joins at most CONCAT_SOURCES arrays: more parts are joined in groups (over 2^23
    # positions).
    while len(parts) > 1:
        parts = [concat(parts[i:i + CONCAT_SOURCES], axis=axis)
                 for i in range(0, len(parts), CONCAT_SOURCES)]
    return parts[0]


def running_count(flat_mask: Any) -> Tuple[Any, int]:
    """The running count of the 1-D boolean ``flat_mask`` (int64, ``c[i]`` = True elements in
    ``flat_mask[:i + 1]``) and its total, the one element read back."""
    counts = cumulative_sum(astype(flat_mask, np.int64))
    return counts, (int(counts[-1]) if flat_mask.shape[0] else 0)


def true_positions(flat_mask: Any) -> Any:
    """The int64 positions of the True elements of the 1-D boolean ``flat_mask``, in order.
    Reads back one element: their count."""
    counts, n = running_count(flat_mask)
    return searchsorted(counts, count_arange(flat_mask, n), side="left")  # ranks 1, 2, ..., n


def unravel(flat: Any, shape: Tuple[int, ...]) -> Tuple[Any, ...]:
    """Positions into the C-order flattening of ``shape`` as one index array per axis."""
    if len(shape) == 1:
        return (flat,)
    if flat.shape[0] == 0:
        return tuple(astype(flat, np.int64) for _ in shape)  # a separate array per axis
    out = []
    stride = int(np.prod(shape, dtype=np.int64))
    for i, length in enumerate(shape):
        stride //= length
        index = flat if i == 0 else f.remainder(flat, stride * length)
        out.append(f.floor_divide(index, stride) if stride != 1 else index)
    return tuple(out)


def nonzero(x: Any, /) -> Tuple[Any, ...]:
    """The indices of the elements of ``x`` that are not zero (True for bool; a NaN is not
    zero), one int64 array per axis, in C order (row-major), as ``numpy.nonzero``.

    Computed on the devices (a running count of the mask and a search into it), except the
    number of such elements, which sets the results' length: that one element is downloaded,
    as CuPy's ``nonzero`` synchronizes with the device for it. A 0-d ``x`` is ValueError, as
    the array API says (NumPy 2 refuses it too)."""
    x = _array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero of a 0-d array: use nonzero(atleast_1d(x)) (the array API "
                         "leaves 0-d inputs out)")
    flat = reshape(x, (-1,))
    mask = flat if x.dtype == np.bool_ else astype(flat, np.bool_)
    positions = true_positions(mask)
    return unravel(positions, tuple(x.shape))


__all__ = ["nonzero"]
