"""Boolean masks held on the devices (a DistributedArray of bool) as keys: ``x[mask]`` and
``x[mask] = value``, as NumPy's (and the array API's) boolean array indexing.

A mask of k axes must match ``x``'s first k axes; it selects those positions, each with the
axes after them. The write, ``x[mask] = value`` with a value that broadcasts to one selected
element (a scalar, a 0-d array, an array of ``x.shape[k:]``), is ``where(mask, value, x)``
written into ``x``: no shape depends on the values. ``x[mask]`` has one row per True element,
a length that depends on the values: the positions come from ``nonzero``'s running count (one
count read back) and the rows from a gather by those positions (``take``), which stay on the
devices; ``x[mask] = values`` with one row per True element gathers the other way.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _functions as f
from ._api_manipulation import broadcast_to
from ._api_namespace import astype
from ._api_searching import gather, running_count, true_positions
from ._manipulation import reshape


def mask_of(key: Any, array_type: type) -> Optional[Any]:
    """The mask when ``key`` is a boolean ``array_type`` (alone or as a 1-tuple), else None."""
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    if isinstance(key, array_type) and key.dtype == np.bool_:
        return key
    return None


def _check(x: Any, mask: Any, zero_size_ok: bool) -> int:
    """The mask's rank, after NumPy's IndexError for a mask that does not fit ``x``."""
    k = mask.ndim
    if k > x.ndim:
        raise IndexError(
            f"too many indices for array: array is {x.ndim}-dimensional, but {k} were indexed"
        )
    for axis, (xs, ms) in enumerate(zip(x.shape, mask.shape)):
        if ms != xs and not (zero_size_ok and ms == 0):
            raise IndexError(
                f"boolean index did not match indexed array along axis {axis}; size of axis is "
                f"{xs} but size of corresponding boolean axis is {ms}"
            )
    return k


def _broadcast_mask(x: Any, mask: Any, k: int) -> Any:
    """The mask with x's trailing axes as length-1 axes, so it broadcasts against ``x``."""
    if k == x.ndim:
        return mask
    return reshape(mask, tuple(mask.shape) + (1,) * (x.ndim - k))


def _value_of(x: Any, value: Any, array_type: type) -> Any:
    """``value`` in ``x``'s dtype: a Python scalar converted as NumPy's assignment converts it
    (OverflowError for an integer outside the dtype), an array through ``astype``."""
    if isinstance(value, array_type):
        return value if value.dtype == x.dtype else astype(value, x.dtype)
    return np.array(value, dtype=x.dtype)[()].item()


def _rows(x: Any, k: int) -> Any:
    """``x`` with its first ``k`` axes made one (of length 1 when ``k`` is 0)."""
    lead = int(np.prod(x.shape[:k], dtype=np.int64))
    return reshape(x, (lead,) + tuple(x.shape[k:]))


def get_masked(x: Any, mask: Any) -> Any:
    """``x[mask]``: the rows of ``x`` (its first ``mask.ndim`` axes made one) where the
    flattened mask is True, gathered on the devices by their positions (``take``). A mask with
    an axis of length 0 selects nothing, as the array API allows."""
    k = _check(x, mask, zero_size_ok=True)
    rows = _rows(x, k)
    if mask.size == 0:
        return rows[0:0]
    positions = true_positions(reshape(mask, (-1,)))
    if positions.shape[0] == 0:
        return rows[0:0]
    return gather(rows, positions)


def _fits(shape: Tuple[int, ...], target: Tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def set_masked(x: Any, mask: Any, value: Any, array_type: type) -> None:
    """``x[mask] = value`` in place (``x`` keeps its handle), written as ``where(mask, v, x)``
    into ``x``. A value that broadcasts to one selected element is ``v`` itself; a value per
    selected element (of ``(count,) + x.shape[k:]``, or broadcasting to it) is gathered to
    ``x``'s positions first: the i-th selected position takes row ``c[i] - 1`` of it, ``c``
    being the mask's running count (its total read back to check the value's shape)."""
    k = _check(x, mask, zero_size_ok=False)
    value = _value_of(x, value, array_type)
    trailing = tuple(x.shape[k:])
    if isinstance(value, array_type) and not _fits(tuple(value.shape), trailing):
        counts, n = running_count(reshape(mask, (-1,)))
        selected = (n,) + trailing
        if not _fits(tuple(value.shape), selected):
            raise ValueError(
                f"x[mask] = value: a value of shape {tuple(value.shape)} broadcasts neither to "
                f"one selected element, of shape {trailing}, nor to the {n} selected, "
                f"{selected}"
            )
        if n == 0:
            return
        if tuple(value.shape) != selected:
            value = broadcast_to(value, selected)
        rank = f.maximum(counts - 1, 0)  # the row of value each position would take
        value = reshape(gather(value, rank), tuple(x.shape))
        f.where(_broadcast_mask(x, mask, k), value, x, out=x)
        return
    f.where(_broadcast_mask(x, mask, k), value, x, out=x)
