"""The array API's creation functions beyond NumPy's basics: ``linspace``, ``eye``, ``tril``,
``triu``, ``meshgrid``. Values are made on the devices (the daemon's linspace, eye and tri
fills); ``tril``/``triu`` are ``where`` with a tri mask laid out like their input."""

from __future__ import annotations

import operator
from typing import Any, List, Optional

import numpy as np

from . import _default
from . import _functions as f
from ._api_info import check_device
from ._like import new_like
from ._manipulation import reshape
from ._api_manipulation import broadcast_to
from .v1 import distarray_pb2 as pb


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True, index_map: Any = None, name: Optional[str] = None,
             client: Any = None) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included with ``endpoint``), as
    ``numpy.linspace``; float64 by default."""
    check_device(device)
    for v in (start, stop):
        if isinstance(v, complex):
            raise TypeError("linspace: complex bounds are not served (the fill is real)")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, not {num}")
    fill = pb.Fill(linspace=pb.Fill.Linspace(start=float(start), stop=float(stop),
                                             endpoint=bool(endpoint)))
    return _default.client_for(client).create(
        (num,), np.float64 if dtype is None else dtype, index_map, name=name, fill=fill)


def eye(n_rows: int, n_cols: Optional[int] = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None, index_map: Any = None, name: Optional[str] = None,
        client: Any = None) -> Any:
    """A 2-D array with ones on diagonal ``k`` (float64 by default)."""
    check_device(device)
    shape = (operator.index(n_rows), operator.index(n_rows if n_cols is None else n_cols))
    fill = pb.Fill(eye=pb.Fill.Eye(k=operator.index(k)))
    return _default.client_for(client).create(
        shape, np.float64 if dtype is None else dtype, index_map, name=name, fill=fill)


def _tri_mask(x: Any, k: int) -> Any:
    if x.ndim < 2:
        raise ValueError(f"tril/triu take an array of at least 2 axes, not {x.ndim}")
    return new_like(x, pb.Fill(tri=pb.Fill.Tri(k=k)), np.bool_)


def tril(x: Any, /, *, k: int = 0) -> Any:
    """``x`` with the elements above diagonal ``k`` zeroed (of each matrix of a stack)."""
    return f.where(_tri_mask(x, operator.index(k)), x, 0).astype(x.dtype)


def triu(x: Any, /, *, k: int = 0) -> Any:
    """``x`` with the elements below diagonal ``k`` zeroed."""
    return f.where(_tri_mask(x, operator.index(k) - 1), 0, x).astype(x.dtype)


def meshgrid(*arrays: Any, indexing: str = "xy") -> List[Any]:
    """Coordinate grids of 1-D arrays: each reshaped to its axis and broadcast to the grid
    (``indexing='xy'``: the first two axes swapped, as NumPy's)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing is 'xy' or 'ij', not {indexing!r}")
    for a in arrays:
        if a.ndim != 1:
            raise ValueError("meshgrid takes 1-D arrays")
    shape = [a.shape[0] for a in arrays]
    axis_of = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
        axis_of[0], axis_of[1] = 1, 0
    out = []
    for a, axis in zip(arrays, axis_of):
        dims = [1] * len(arrays)
        dims[axis] = a.shape[0]
        out.append(broadcast_to(reshape(a, dims), tuple(shape)))
    return out


__all__ = ["eye", "linspace", "meshgrid", "tril", "triu"]
