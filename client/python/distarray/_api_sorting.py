"""The array API's sorting functions, ``sort`` and ``argsort``: the daemon's sort (a Manipulate
request, or a program's ``manipulate`` statement for a traced value).

The daemon's sort is always stable: equal elements keep their order, ascending and descending
alike (descending is not the reverse of ascending, whose ties would come out reversed). NaNs go
last ascending and first descending. ``stable=False`` asks for no particular order of ties, so
the stable result serves it too. Complex arrays have no order: the daemon refuses them
(``InvalidArgumentError``). The result keeps the source's layout.
"""

from __future__ import annotations

from typing import Any, Optional

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


__all__ = ["argsort", "sort"]
