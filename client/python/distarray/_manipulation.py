"""Indexing and shape ops (the Manipulate RPC, or a program's ``manipulate`` statement).

Each op is written once here as the ManipulationSpec it sends; a DistributedArray sends it as a
Manipulate request and a traced Var records it as a statement (``_manipulate``). Ops that NumPy
derives from indexing are sent as indexing so the daemon has fewer ops to serve: ``squeeze`` is
``a[..., 0, ...]``, ``expand_dims`` is ``a[..., None, ...]``, ``flip`` is ``a[..., ::-1, ...]``,
``ravel`` is ``reshape(-1)``.

The module functions follow the array API's names and signatures (``permute_dims``, ``concat``,
``matrix_transpose``); NumPy's names (``transpose``, ``concatenate``) are aliases. Every result is
a new array (the daemon copies the selected elements; docs/api.md says why not a view), except
``a[key] = value``, which updates ``a`` in place.
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence, Tuple, Union

from ._errors import traced_value_error
from ._indexing import Key, index_key, normalize_axes, normalize_axis
from .v1 import distarray_pb2 as pb

ShapeLike = Union[int, Sequence[int]]


class ManipulationOps:
    """NumPy's indexing and shape methods, for anything that implements ``_operand(value)`` and
    ``_manipulate(spec, result_name)`` (DistributedArray sends requests, Var records statements).
    ``shape`` is used where an op needs the rank; a traced Var has none, so ops that need it
    (``squeeze()`` without an axis, ``mT``, ``flip()`` of every axis) take their axes explicitly
    there."""

    __slots__ = ()

    def _operand(self, value: Any) -> "pb.Operand":  # pragma: no cover
        raise NotImplementedError

    def _manipulate(self, spec: "pb.ManipulationSpec", result_name: Optional[str] = None) -> Any:
        raise NotImplementedError  # pragma: no cover

    def __getitem__(self, key: Key) -> Any:
        """NumPy's basic indexing: integers, slices (any step), None and ``...``. A new array."""
        return get_item(self, key)

    @property
    def T(self) -> Any:
        """The transpose of a 2-D array (the array API's rule: other ranks raise; use ``mT`` or
        ``permute_dims``)."""
        ndim = _known_ndim(self)
        if ndim is not None and ndim != 2:
            raise ValueError(
                f".T takes a 2-D array, not {ndim}-D; use .mT (the last two axes) or "
                "distarray.permute_dims(x, axes)"
            )
        return permute_dims(self, (1, 0))

    @property
    def mT(self) -> Any:
        """The last two axes swapped (a stack of matrices transposed)."""
        return matrix_transpose(self)

    def transpose(self, *axes: Any) -> Any:
        """NumPy's ``a.transpose()``: axes reversed, or ``a.transpose(1, 0, 2)`` /
        ``a.transpose((1, 0, 2))``."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = () if axes[0] is None else tuple(axes[0])
        return transpose(self, axes or None)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        """NumPy's ``a.reshape(3, -1)`` or ``a.reshape((3, -1))`` (C order only)."""
        if order != "C":
            raise ValueError("reshape: only order='C' is served")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape)

    def flatten(self, order: str = "C") -> Any:
        """A 1-D copy: in C order (row-major), or with ``order='F'`` in Fortran order (the axes
        reversed first). 'A' and 'K' follow the memory order, which is C order for the daemon's
        chunks."""
        if check_order(order) != "F":
            return reshape(self, (-1,))
        ndim = _ndim(self, "flatten(order='F')")
        return reshape(permute_dims(self, tuple(reversed(range(ndim)))), (-1,))

    def ravel(self, order: str = "C") -> Any:
        """``flatten()``: the daemon's arrays are never views, so the two are the same."""
        return self.flatten(order)

    def squeeze(self, axis: Any = None) -> Any:
        """The axes of length 1 removed (all of them, or ``axis``)."""
        return squeeze(self, axis)

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        """Two axes exchanged."""
        ndim = _ndim(self, "swapaxes")
        a, b = normalize_axis(axis1, ndim), normalize_axis(axis2, ndim)
        axes = list(range(ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return permute_dims(self, axes)


def check_order(order: Any) -> str:
    """NumPy's memory ``order`` argument ('C', 'F', 'A', 'K'; None is 'K'), checked as NumPy
    checks it."""
    if order is None:
        return "K"
    if not isinstance(order, str) or order.upper() not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return order.upper()


def _known_ndim(x: Any) -> Optional[int]:
    shape = getattr(x, "shape", None)
    return None if shape is None else len(shape)


def _ndim(x: Any, what: str) -> int:
    ndim = _known_ndim(x)
    if ndim is None:
        raise traced_value_error(what, "rank")
    return ndim


def _array(x: Any, what: str) -> ManipulationOps:
    if not isinstance(x, ManipulationOps):
        raise TypeError(
            f"distarray.{what} takes a DistributedArray (or a traced value), not "
            f"{type(x).__name__}; upload NumPy values explicitly with distarray.asarray"
        )
    return x


def _shape_arg(shape: Any) -> Tuple[int, ...]:
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(d) for d in shape)
    return (operator.index(shape),)


# ---- the ops ------------------------------------------------------------------------------------


def get_item(x: Any, key: Key, *, name: Optional[str] = None) -> Any:
    """``x[key]`` (basic indexing) as a new array; ``name``: a persistent name for it."""
    x = _array(x, "get_item")
    spec = pb.ManipulationSpec()
    spec.get_item.source.CopyFrom(x._operand(x))
    spec.get_item.key.CopyFrom(index_key(key, getattr(x, "shape", None)))
    return x._manipulate(spec, name)


def set_item_spec(x: ManipulationOps, key: Key, value: Any) -> "pb.ManipulationSpec":
    """The spec of ``x[key] = value`` (the caller checks what ``value`` may be)."""
    spec = pb.ManipulationSpec()
    spec.set_item.target.CopyFrom(x._operand(x))
    spec.set_item.key.CopyFrom(index_key(key, getattr(x, "shape", None)))
    spec.set_item.value.CopyFrom(x._operand(value))
    return spec


def permute_dims(x: Any, axes: Sequence[int], *, name: Optional[str] = None) -> Any:
    """The axes of ``x`` reordered: result axis i is axis ``axes[i]`` of ``x``."""
    x = _array(x, "permute_dims")
    axes = tuple(operator.index(a) for a in axes)
    ndim = _known_ndim(x)
    if ndim is not None:
        if sorted(a + ndim if a < 0 else a for a in axes) != list(range(ndim)):
            raise ValueError(f"axes {axes} are not a permutation of the {ndim} axes of the array")
    spec = pb.ManipulationSpec()
    spec.permute_dims.source.CopyFrom(x._operand(x))
    spec.permute_dims.axes.extend(axes)
    return x._manipulate(spec, name)


def transpose(x: Any, axes: Optional[Sequence[int]] = None, *, name: Optional[str] = None) -> Any:
    """NumPy's ``transpose``: ``permute_dims``, with every axis reversed by default."""
    if axes is None:
        axes = tuple(reversed(range(_ndim(_array(x, "transpose"), "transpose() without axes"))))
    return permute_dims(x, axes, name=name)


def matrix_transpose(x: Any, *, name: Optional[str] = None) -> Any:
    """The last two axes swapped (the array API's ``matrix_transpose``, NumPy's ``x.mT``)."""
    ndim = _ndim(_array(x, "matrix_transpose"), "matrix_transpose")
    if ndim < 2:
        raise ValueError(f"matrix_transpose takes an array of at least 2 axes, not {ndim}")
    return permute_dims(x, tuple(range(ndim - 2)) + (ndim - 1, ndim - 2), name=name)


def reshape(x: Any, shape: ShapeLike, *, copy: Optional[bool] = None,
            name: Optional[str] = None) -> Any:
    """The same elements in C order under ``shape`` (one entry may be -1: inferred). The result
    is always a new array: ``copy=False`` (the array API's "never copy") is ValueError."""
    x = _array(x, "reshape")
    if copy is False:
        raise ValueError("reshape(copy=False): a DistributedArray is never a view")
    dims = _shape_arg(shape)
    if sum(d == -1 for d in dims) > 1:
        raise ValueError("can only specify one unknown dimension (-1)")
    if any(d < -1 for d in dims):
        raise ValueError(f"negative dimension in shape {dims}")
    spec = pb.ManipulationSpec()
    spec.reshape.source.CopyFrom(x._operand(x))
    spec.reshape.shape.dims.extend(dims)
    return x._manipulate(spec, name)


def ravel(x: Any, *, name: Optional[str] = None) -> Any:
    """``x`` as one axis in C order (a new array)."""
    return reshape(x, (-1,), name=name)


def expand_dims(x: Any, axis: Union[int, Sequence[int]] = 0, *, name: Optional[str] = None) -> Any:
    """New axes of length 1 at ``axis`` (positions in the result, as NumPy's)."""
    ndim = _ndim(_array(x, "expand_dims"), "expand_dims")
    count = len(axis) if isinstance(axis, (tuple, list)) else 1
    new = set(normalize_axes(axis, ndim + count))
    key = tuple(None if i in new else slice(None) for i in range(ndim + count))
    return get_item(x, key, name=name)


def squeeze(x: Any, axis: Union[None, int, Sequence[int]] = None, *,
            name: Optional[str] = None) -> Any:
    """The axes of length 1 removed: ``axis`` (each must have length 1), or every such axis."""
    x = _array(x, "squeeze")
    shape = getattr(x, "shape", None)
    if shape is None:
        if axis is None:
            _ndim(x, "squeeze() without an axis")
        # A traced value: one ``...`` then the axes from the end, or from the start, as given.
        axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
        return get_item(x, _traced_key(axes, 0), name=name)
    ndim = len(shape)
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes(axis, ndim)
        for a in axes:
            if shape[a] != 1:
                raise ValueError(
                    f"cannot squeeze axis {a}: its length is {shape[a]}, not 1"
                )
    key = tuple(0 if i in axes else slice(None) for i in range(ndim))
    return get_item(x, key, name=name)


def flip(x: Any, axis: Union[None, int, Sequence[int]] = None, *,
         name: Optional[str] = None) -> Any:
    """The elements in reverse order along ``axis`` (None: every axis)."""
    x = _array(x, "flip")
    if axis is None:
        ndim = _ndim(x, "flip() without an axis")
        return get_item(x, (slice(None, None, -1),) * ndim, name=name)
    shape = getattr(x, "shape", None)
    if shape is None:
        axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
        return get_item(x, _traced_key(axes, slice(None, None, -1)), name=name)
    axes = normalize_axes(axis, len(shape))
    key = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(len(shape)))
    return get_item(x, key, name=name)


def _traced_key(axes: Sequence[int], item: Any) -> Tuple[Any, ...]:
    """A key applying ``item`` at ``axes`` of an array of unknown rank: the axes all counted from
    the start (``..., `` after them) or all from the end (``...`` before them)."""
    axes = tuple(operator.index(a) for a in axes)
    if all(a >= 0 for a in axes):
        top = max(axes) + 1
        return tuple(item if i in axes else slice(None) for i in range(top)) + (Ellipsis,)
    if all(a < 0 for a in axes):
        low = -min(axes)
        return (Ellipsis,) + tuple(item if -low + i in axes else slice(None) for i in range(low))
    raise ValueError("for a traced value, give the axes all from the start or all from the end")


def _join(arrays: Sequence[Any], axis: int, stack: bool, what: str, name: Optional[str]) -> Any:
    if isinstance(arrays, ManipulationOps) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"distarray.{what} takes a list or tuple of arrays")
    if not arrays:
        raise ValueError(f"{what} needs at least one array")
    sources = [_array(a, what) for a in arrays]
    first = sources[0]
    spec = pb.ManipulationSpec()
    for source in sources:
        spec.concat.sources.append(first._operand(source))
    spec.concat.axis = operator.index(axis)
    spec.concat.stack = stack
    return first._manipulate(spec, name)


def concat(arrays: Sequence[Any], axis: Optional[int] = 0, *, name: Optional[str] = None) -> Any:
    """The arrays joined along ``axis`` (None: each flattened, then joined), dtypes promoted as
    in NumPy. Each source's chunks keep their devices."""
    if axis is None:
        arrays = [ravel(_array(a, "concat")) for a in arrays]
        axis = 0
    return _join(arrays, axis, False, "concat", name)


def concatenate(arrays: Sequence[Any], axis: Optional[int] = 0, *,
                name: Optional[str] = None) -> Any:
    """NumPy's name for ``concat``."""
    return concat(arrays, axis, name=name)


def stack(arrays: Sequence[Any], axis: int = 0, *, name: Optional[str] = None) -> Any:
    """The arrays (of one shape) joined along a new axis at ``axis`` of the result."""
    return _join(arrays, axis, True, "stack", name)


def swapaxes(x: Any, axis1: int, axis2: int) -> Any:
    """Two axes exchanged."""
    return _array(x, "swapaxes").swapaxes(axis1, axis2)


def moveaxis(x: Any, source: Union[int, Sequence[int]], destination: Union[int, Sequence[int]],
             *, name: Optional[str] = None) -> Any:
    """Axes moved to new positions, the others keeping their order (NumPy's ``moveaxis``)."""
    ndim = _ndim(_array(x, "moveaxis"), "moveaxis")
    src = normalize_axes(source, ndim)
    dst = normalize_axes(destination, ndim)
    if len(src) != len(dst):
        raise ValueError("source and destination take the same number of axes")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order, name=name)


__all__ = [
    "concat",
    "concatenate",
    "expand_dims",
    "flip",
    "get_item",
    "matrix_transpose",
    "moveaxis",
    "permute_dims",
    "ravel",
    "reshape",
    "squeeze",
    "stack",
    "swapaxes",
    "transpose",
]
