"""Array creation in NumPy's signatures at module level: ``distarray.zeros((4, 3))``,
``distarray.arange(10)``, ``distarray.asarray(values)``...

Each takes ``client=`` (default: the default client, see ``_default``), ``index_map=`` (default:
the whole array on device 0; the ``*_like`` functions default to their model's layout) and
``name=`` (a persistent name). Values are made on the devices, except in ``asarray``: it is the
one function here that uploads, and the one place NumPy data goes up without ``from_numpy``.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _default
from ._api_info import check_device
from ._array import DistributedArray
from ._index_map import IndexMapLike, on_device
from ._like import full_fill, new_like, ones_fill, zeros_fill
from ._manipulation import concat, reshape
from ._ops import ArrayOps
from ._types import DTypeLike, ModeLike, is_scalar
from .v1 import distarray_pb2 as pb

ShapeLike = Union[int, Sequence[int]]


def default_client() -> Any:
    """The client the module-level functions use: the last ``distarray.connect``'s, else one
    connected to ``$DISTARRAY_ADDRESS`` on first use."""
    return _default.client_for(None)


def _shape(shape: ShapeLike) -> tuple:
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(d) for d in shape)
    return (operator.index(shape),)


def _create(shape: ShapeLike, dtype: Optional[DTypeLike], fill: "pb.Fill",
            index_map: Optional[IndexMapLike], mode: ModeLike, name: Optional[str],
            client: Any) -> DistributedArray:
    return _default.client_for(client).create(
        _shape(shape), np.float64 if dtype is None else dtype, index_map, mode=mode, name=name,
        fill=fill,
    )


def zeros(shape: ShapeLike, dtype: Optional[DTypeLike] = None, *, device: Any = None,
          index_map: Optional[IndexMapLike] = None, mode: ModeLike = "replica",
          name: Optional[str] = None, client: Any = None) -> DistributedArray:
    """An array of zeros (float64 by default)."""
    check_device(device)
    return _create(shape, dtype, zeros_fill(), index_map, mode, name, client)


def empty(shape: ShapeLike, dtype: Optional[DTypeLike] = None, *, device: Any = None,
          index_map: Optional[IndexMapLike] = None, mode: ModeLike = "replica",
          name: Optional[str] = None, client: Any = None) -> DistributedArray:
    """``zeros``: the daemon has no uninitialized fill (it would hand out another tenant's
    freed bytes), so an empty array costs what a zeroed one does."""
    check_device(device)
    return _create(shape, dtype, zeros_fill(), index_map, mode, name, client)


def ones(shape: ShapeLike, dtype: Optional[DTypeLike] = None, *, device: Any = None,
         index_map: Optional[IndexMapLike] = None, mode: ModeLike = "replica",
         name: Optional[str] = None, client: Any = None) -> DistributedArray:
    """An array of ones (float64 by default)."""
    check_device(device)
    return _create(shape, dtype, ones_fill(), index_map, mode, name, client)


def full(shape: ShapeLike, fill_value: Any, dtype: Optional[DTypeLike] = None, *,
         device: Any = None, index_map: Optional[IndexMapLike] = None,
         mode: ModeLike = "replica", name: Optional[str] = None,
         client: Any = None) -> DistributedArray:
    """An array of ``fill_value`` (a scalar); the dtype defaults to the value's, as NumPy's
    (int64 for a Python int, float64 for a float, bool, complex128)."""
    check_device(device)
    if not is_scalar(fill_value):
        raise TypeError(f"full takes a scalar fill_value, not {type(fill_value).__name__}")
    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    return _create(shape, dtype, full_fill(fill_value), index_map, mode, name, client)


def arange(start: Union[int, float], stop: Optional[Union[int, float]] = None,
           step: Union[int, float] = 1, *, device: Any = None, dtype: Optional[DTypeLike] = None,
           index_map: Optional[IndexMapLike] = None, name: Optional[str] = None,
           client: Any = None) -> DistributedArray:
    """NumPy's ``arange(stop)`` / ``arange(start, stop, step)``: ``ceil((stop - start) / step)``
    elements ``start + i * step`` (computed on the devices in float64, so integers are exact up
    to 2**53). The dtype defaults to NumPy's choice (int64 for integers, else float64)."""
    check_device(device)
    count, dtype, fill = arange_fill(start, stop, step, dtype)
    return _create((count,), dtype, fill, index_map, "replica", name, client)


def arange_fill(start: Any, stop: Any, step: Any,
                dtype: Optional[DTypeLike]) -> "tuple[int, Any, pb.Fill]":
    """NumPy's ``arange(start, stop, step)`` (``stop`` None: ``arange(start)``, from 0) as the
    length, dtype and fill of the array to create (``Client.arange`` shares it)."""
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if not is_scalar(v) or isinstance(v, (bool, np.bool_, complex, np.complexfloating)):
            raise TypeError(f"arange takes real numbers, not {type(v).__name__}")
    if step == 0:
        raise ValueError("arange: step cannot be zero")
    if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        count = -(-(int(stop) - int(start)) // int(step))  # exact ceiling division
    else:
        count = math.ceil((float(stop) - float(start)) / float(step))
    if dtype is None:
        dtype = np.result_type(start, stop, step)
    fill = pb.Fill(arange=pb.Fill.Arange(start=float(start), step=float(step)))
    return max(count, 0), dtype, fill


def zeros_like(x: DistributedArray, dtype: Optional[DTypeLike] = None, *, device: Any = None,
               shape: Optional[ShapeLike] = None, index_map: Optional[IndexMapLike] = None,
               name: Optional[str] = None) -> DistributedArray:
    """Zeros of ``x``'s shape, dtype and layout (on its client)."""
    check_device(device)
    return new_like(x, zeros_fill(), dtype, shape=shape, index_map=index_map, name=name)


def empty_like(x: DistributedArray, dtype: Optional[DTypeLike] = None, *, device: Any = None,
               shape: Optional[ShapeLike] = None, index_map: Optional[IndexMapLike] = None,
               name: Optional[str] = None) -> DistributedArray:
    """``zeros_like`` (see ``empty``)."""
    check_device(device)
    return new_like(x, zeros_fill(), dtype, shape=shape, index_map=index_map, name=name)


def ones_like(x: DistributedArray, dtype: Optional[DTypeLike] = None, *, device: Any = None,
              shape: Optional[ShapeLike] = None, index_map: Optional[IndexMapLike] = None,
              name: Optional[str] = None) -> DistributedArray:
    """Ones of ``x``'s shape, dtype and layout."""
    check_device(device)
    return new_like(x, ones_fill(), dtype, shape=shape, index_map=index_map, name=name)


def full_like(x: DistributedArray, fill_value: Any, dtype: Optional[DTypeLike] = None, *,
              device: Any = None, shape: Optional[ShapeLike] = None,
              index_map: Optional[IndexMapLike] = None,
              name: Optional[str] = None) -> DistributedArray:
    """``fill_value`` in ``x``'s shape, dtype and layout."""
    check_device(device)
    return new_like(x, full_fill(fill_value), dtype, shape=shape, index_map=index_map, name=name)


def asarray(obj: Any, dtype: Optional[DTypeLike] = None, *, device: Any = None,
            index_map: Optional[IndexMapLike] = None, copy: Optional[bool] = None,
            name: Optional[str] = None, client: Any = None) -> DistributedArray:
    """``obj`` as a DistributedArray. A DistributedArray is returned as it is (converted when
    ``dtype`` differs; copied on the daemon with ``copy=True``); NumPy arrays, lists and scalars
    are uploaded (the explicit upload of the namespace) with ``index_map`` (default: device 0).
    A nested list whose leaves are DistributedArrays of one shape (0-d ones, say, among Python
    scalars) is joined on the daemon, as ``stack`` would, without a download."""
    check_device(device)
    if isinstance(obj, DistributedArray):
        if dtype is not None and np.dtype(dtype) != obj.dtype:
            if copy is False:
                raise ValueError("asarray(copy=False): converting the dtype needs a copy")
            return obj.astype(dtype)
        return obj.reshard() if copy else obj
    if isinstance(obj, ArrayOps):
        raise TypeError("asarray of a traced value: it is already an array of the program")
    if isinstance(obj, (list, tuple)) and any(isinstance(v, ArrayOps) for v in _flat(obj)):
        if copy is False:
            raise ValueError("asarray(copy=False): joining arrays makes a new one")
        return _join_nested(obj, dtype, index_map, name)
    if copy is False:
        raise ValueError("asarray(copy=False): uploading NumPy values copies them")
    values = np.asarray(obj, dtype=dtype)
    return _default.client_for(client).from_numpy(values, index_map, name=name)


def from_dlpack(x: Any, /, *, device: Any = None, copy: Optional[bool] = None,
                index_map: Optional[IndexMapLike] = None, name: Optional[str] = None,
                client: Any = None) -> DistributedArray:
    """An array of another library (anything with ``__dlpack__``: NumPy, PyTorch, CuPy...)
    uploaded to the daemon, as ``asarray`` uploads (``index_map``, default: device 0). The
    values are read through ``numpy.from_dlpack`` on the host (a GPU array of another library
    is asked for a host copy first): the daemon's devices are not this process's, so no buffer
    can be shared and the result is always a copy. ``copy=False`` is ValueError, as the array
    API says where only a copy can exchange the data. A DistributedArray is ``asarray``'s."""
    check_device(device)
    if isinstance(x, DistributedArray):
        return asarray(x, copy=copy)
    if copy is False:
        raise ValueError(
            "from_dlpack(copy=False): the daemon's memory is not this process's, so the values "
            "can only be copied there (copy=None or True)"
        )
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack takes an object with __dlpack__, not {type(x).__name__}")
    try:
        values = np.from_dlpack(x, device="cpu")  # a host copy of a device array, if need be
    except TypeError:  # NumPy before 2.1 has no device=
        values = np.from_dlpack(x)
    return _default.client_for(client).from_numpy(values, index_map, name=name)


def _nested_shape(obj: Any) -> tuple:
    """The shape of the nesting of lists and tuples (its leaves excluded); ValueError, as
    NumPy's, when the nesting is ragged."""
    if not isinstance(obj, (list, tuple)):
        return ()
    shapes = {_nested_shape(v) for v in obj}
    if len(shapes) > 1:
        raise ValueError("asarray: the nested sequence is ragged (its lists differ in length)")
    return (len(obj),) + (shapes.pop() if shapes else ())


#: The daemon's bound on the sources of one concat.
_MAX_CONCAT = 1024


def _join_nested(obj: Any, dtype: Optional[DTypeLike], index_map: Optional[IndexMapLike],
                 name: Optional[str]) -> DistributedArray:
    """A nested list whose leaves are DistributedArrays of one shape (and Python scalars, each
    made a one-element fill), joined on the daemon: each leaf flattened, all concatenated in
    order, then reshaped to the nesting's shape followed by the leaves'. Nothing is downloaded.
    The result is whole on the first leaf array's first device (or ``index_map``)."""
    nesting = _nested_shape(obj)
    leaves = list(_flat(obj))
    for leaf in leaves:
        if isinstance(leaf, ArrayOps) and not isinstance(leaf, DistributedArray):
            raise TypeError("asarray of a sequence holding traced values: use distarray.stack")
    arrays = [v for v in leaves if isinstance(v, DistributedArray)]
    first = arrays[0]
    leaf_shape = tuple(first.shape)
    if any(tuple(a.shape) != leaf_shape for a in arrays) or (
            leaf_shape and len(arrays) != len(leaves)):
        raise ValueError("asarray: the nested sequence is ragged (its arrays differ in shape)")
    clients = {id(a.client) for a in arrays}
    if len(clients) > 1:
        raise ValueError("asarray: the arrays belong to different clients")
    device = first.devices[0] if first.devices else 0
    compact = on_device(1, device)
    size = int(np.prod(leaf_shape, dtype=np.int64))
    pieces = []
    for leaf in leaves:
        if isinstance(leaf, DistributedArray):
            pieces.append(reshape(leaf, (size,)))
        elif is_scalar(leaf):
            pieces.append(new_like(first, full_fill(leaf), np.asarray(leaf).dtype, shape=(1,),
                                   index_map=compact))
        else:
            raise TypeError(f"asarray: a nested sequence of arrays holds a "
                            f"{type(leaf).__name__}")
    # Each piece is a chunk of the concatenation: gathered onto one device after each batch, so
    # the result is not left in one chunk per leaf.
    while len(pieces) > 1:
        pieces = [concat(pieces[i:i + _MAX_CONCAT]).reshard(compact)
                  for i in range(0, len(pieces), _MAX_CONCAT)]
    flat = pieces[0]
    if dtype is not None and np.dtype(dtype) != flat.dtype:
        flat = flat.astype(dtype)
    shape = nesting + leaf_shape
    if index_map is not None:
        flat = reshape(flat, shape).reshard(index_map)
        return flat if name is None else reshape(flat, shape, name=name)
    return reshape(flat, shape, name=name)


def _flat(seq: Any):
    for v in seq:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


__all__ = [
    "arange",
    "asarray",
    "default_client",
    "empty",
    "empty_like",
    "full",
    "from_dlpack",
    "full_like",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]
