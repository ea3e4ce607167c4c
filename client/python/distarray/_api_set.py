"""The array API's set functions, ``unique_values``, ``unique_counts``, ``unique_inverse`` and
``unique_all`` (2024.12: ``x`` flattened; NaNs distinct, so each NaN is a value of its own; -0.0
and 0.0 one value), composed from the daemon's sort, search and gather.

The flattened ``x`` is sorted (``s``); a value starts where ``s[i] != s[i - 1]`` (NaN != NaN, so
every NaN starts one), and those starts' positions (``nonzero``'s running count and search: one
count read back) pick the values (``take``). A value's count is the distance to the next start;
its first occurrence, with a stable sort, the sort's position at its start. Each element's value
number is the running count of starts at its sorted place, less one, carried back to the
element's own place through the inverse of the sort's permutation (an argsort of it). The
results are sorted ascending (NaNs last), which the standard allows.

Complex numbers have no order on the daemon: they are sorted by imaginary then (stably) real
part, which makes equal numbers adjacent. The imaginary part is composed (``imag``), and is NaN
where the real part is infinite, so numbers of one infinite real part and different imaginary
parts may come out as more than one value each.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._api_elementwise import imag, real
from ._api_namespace import astype
from ._api_searching import count_arange, gather, running_count
from ._api_sorting import argsort, searchsorted, sort
from ._like import full_fill, new_like, ones_fill, zeros_fill
from ._manipulation import _array, concat, reshape


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _flat(x: Any, what: str) -> Any:
    return reshape(_array(x, what), (-1,))


def _order(flat: Any) -> Any:
    """The stable permutation that sorts ``flat`` (complex: by imaginary, then real part)."""
    if flat.dtype.kind != "c":
        return argsort(flat)
    by_imag = argsort(imag(flat))
    return gather(by_imag, argsort(gather(real(flat), by_imag)))


def _sorted(flat: Any) -> Any:
    return sort(flat) if flat.dtype.kind != "c" else gather(flat, _order(flat))


def _starts(s: Any) -> Any:
    """True where a value starts in the sorted ``s``: the first element and every one unequal to
    the one before it (each NaN)."""
    head = new_like(s, ones_fill(), np.bool_, shape=(1,))
    if s.shape[0] == 1:
        return head
    return concat([head, s[1:] != s[:-1]])


def _groups(s: Any):
    """(running count of value starts, the starts' positions) of the sorted ``s``."""
    counts, n = running_count(_starts(s))
    return counts, searchsorted(counts, count_arange(s, n), side="left")


def _counts(positions: Any, size: int) -> Any:
    """Each value's count: the distance from its start to the next (or to the end)."""
    end = new_like(positions, full_fill(size), np.int64, shape=(1,))
    return concat([positions[1:], end]) - positions


def _empty(x: Any, shape=(0,)) -> Any:
    return new_like(x, zeros_fill(), np.int64, shape=shape)


def unique_values(x: Any, /) -> Any:
    """The distinct values of ``x`` (flattened), sorted ascending, NaNs last (each NaN its own
    value). Reads back one count."""
    flat = _flat(x, "unique_values")
    if flat.shape[0] == 0:
        return astype(flat, flat.dtype)
    s = _sorted(flat)
    _, positions = _groups(s)
    return gather(s, positions)


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """``(values, counts)``: ``unique_values`` and how many elements equal each (int64)."""
    flat = _flat(x, "unique_counts")
    if flat.shape[0] == 0:
        return UniqueCountsResult(astype(flat, flat.dtype), _empty(x))
    s = _sorted(flat)
    _, positions = _groups(s)
    return UniqueCountsResult(gather(s, positions), _counts(positions, flat.shape[0]))


def _inverse(x: Any, order: Any, counts: Any) -> Any:
    """Each element's value number (int64, ``x``'s shape): the running count of starts at its
    sorted place, less one, read through the inverse permutation of ``order``."""
    return reshape(gather(counts - 1, argsort(order)), tuple(x.shape))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """``(values, inverse_indices)``: ``unique_values`` and, of ``x``'s shape, the position in
    ``values`` of each element (``values[inverse_indices]`` rebuilds ``x``; each NaN its own)."""
    flat = _flat(x, "unique_inverse")
    if flat.shape[0] == 0:
        return UniqueInverseResult(astype(flat, flat.dtype), _empty(x, tuple(x.shape)))
    order = _order(flat)
    s = gather(flat, order)
    counts, positions = _groups(s)
    return UniqueInverseResult(gather(s, positions), _inverse(x, order, counts))


def unique_all(x: Any, /) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``: ``unique_inverse`` and ``unique_counts``
    with ``indices``, the position in the flattened ``x`` of each value's first occurrence."""
    flat = _flat(x, "unique_all")
    if flat.shape[0] == 0:
        return UniqueAllResult(astype(flat, flat.dtype), _empty(x), _empty(x, tuple(x.shape)),
                               _empty(x))
    order = _order(flat)
    s = gather(flat, order)
    counts, positions = _groups(s)
    return UniqueAllResult(gather(s, positions), gather(order, positions),
                           _inverse(x, order, counts), _counts(positions, flat.shape[0]))


__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]
