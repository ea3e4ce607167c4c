"""The array API's sorting functions, ``sort`` and ``argsort``, and ``searchsorted``: the
daemon's sort and search (a Manipulate request, or a program's ``manipulate`` statement for a
traced value).

The daemon's sort is always stable: equal elements keep their order, ascending and descending
alike (descending is not the reverse of ascending, whose ties would come out reversed). NaNs go
last ascending and first descending. ``stable=False`` asks for no particular order of ties, so
the stable result serves it too. Complex arrays have no order: the daemon refuses them
(``InvalidArgumentError``). The result keeps the source's layout.
"""

from __future__ import annotations

from typing import Any, Optional

from ._api_dtypes import result_type
from ._api_namespace import astype
from ._indexing import normalize_axis
from ._manipulation import _array, _known_ndim
from .v1 import distarray_pb2 as pb


def _sort_spec(x: Any, axis: int, descending: bool, indices: bool, what: str) -> Any:
    x = _array(x, what)
    ndim = _known_ndim(x)
    if ndim is not None:
        if ndim == 0:
            raise ValueError(f"{what} takes an array of at least one axis, not a 0-d array")
        axis = normalize_axis(axis, ndim)
    else:
        axis = int(axis)  # a traced value: the daemon counts a negative axis from the end
    spec = pb.ManipulationSpec()
    spec.sort.source.CopyFrom(x._operand(x))
    spec.sort.axis = axis
    spec.sort.descending = bool(descending)
    spec.sort.indices = indices
    return x, spec


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True,
         name: Optional[str] = None) -> Any:
    """``x`` sorted along ``axis`` (ascending, NaNs last; ``descending=True``: descending, NaNs
    first), as a new array of ``x``'s dtype and layout. Always stable, whatever ``stable`` says
    (a stable order is one that ``stable=False`` allows). ``name``: a persistent name."""
    x, spec = _sort_spec(x, axis, descending, False, "sort")
    return x._manipulate(spec, name)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True,
            name: Optional[str] = None) -> Any:
    """The int64 positions along ``axis`` that sort ``x`` (as ``sort`` orders it; equal elements
    in their original order, descending too), in ``x``'s layout."""
    x, spec = _sort_spec(x, axis, descending, True, "argsort")
    return x._manipulate(spec, name)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None,
                 name: Optional[str] = None) -> Any:
    """Where each element of ``x2`` goes in the 1-D ascending ``x1`` to keep it sorted: before
    equal elements (``side="left"``) or after them (``"right"``), as int64 in ``x2``'s layout.
    NaNs sort after every number, and -0.0 equals 0.0, as in NumPy.

    ``sorter``, as in NumPy, must be the positions that sort ``x1`` (``argsort(x1)``); the daemon
    then searches ``sort(x1)``, which holds the same values in the same order, instead of reading
    ``x1`` through ``sorter``. Arrays of different dtypes are converted to their promoted dtype
    first."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', not {side!r}")
    x1 = _array(x1, "searchsorted")
    x2 = _array(x2, "searchsorted")
    ndim = _known_ndim(x1)
    if ndim is not None and ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, not of {ndim} axes")
    if sorter is not None:
        _array(sorter, "searchsorted")
        x1 = sort(x1)
    if getattr(x1, "dtype", None) is not None and getattr(x2, "dtype", None) is not None \
            and x1.dtype != x2.dtype:
        common = result_type(x1, x2)
        x1, x2 = astype(x1, common), astype(x2, common)
    spec = pb.ManipulationSpec()
    spec.search_sorted.sorted.CopyFrom(x1._operand(x1))
    spec.search_sorted.values.CopyFrom(x2._operand(x2))
    spec.search_sorted.right = side == "right"
    return x1._manipulate(spec, name)


__all__ = ["argsort", "searchsorted", "sort"]
