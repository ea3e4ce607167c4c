"""New arrays shaped and laid out like an existing one (``zeros_like`` and friends), shared by the
module functions and NumPy's own (``numpy.zeros_like(x)`` through ``__array_function__``)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ._types import DTypeLike, to_proto_scalar
from .v1 import distarray_pb2 as pb

def new_like(x: Any, fill: "pb.Fill", dtype: Optional[DTypeLike] = None, *,
             shape: Optional[Sequence[int]] = None, index_map: Any = None,
             name: Optional[str] = None) -> Any:
    """A new array on ``x``'s client, of ``x``'s dtype and shape and (when the shape is
    ``x``'s) its layout, in 'replica' mode, filled with ``fill``."""
    if not hasattr(x, "client") or not hasattr(x, "index_map"):
        raise TypeError(
            f"a *_like function takes a DistributedArray, not {type(x).__name__} "
            "(numpy.zeros_like and friends serve NumPy arrays)"
        )
    new_shape = tuple(x.shape) if shape is None else (
        (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape))
    if index_map is None and new_shape == tuple(x.shape):
        index_map = x.index_map
    return x.client.create(new_shape, x.dtype if dtype is None else dtype, index_map,
                           name=name, fill=fill)


def zeros_fill() -> "pb.Fill":
    return pb.Fill(zeros=pb.Fill.Zeros())


def ones_fill() -> "pb.Fill":
    return pb.Fill(ones=pb.Fill.Ones())


def full_fill(value: Any) -> "pb.Fill":
    return pb.Fill(full=pb.Fill.Full(value=to_proto_scalar(value)))
