"""The NumPy functions a DistributedArray answers (``__array_function__``), and the one transfer
policy for the rest.

Without ``__array_function__``, NumPy turns every argument of a function it does not dispatch
(``numpy.concatenate``, ``numpy.where``, ``numpy.median``...) into an ndarray through
``__array__``: the whole array was downloaded silently, the function ran on the host, and the
result was a NumPy array. Now NumPy hands each such call to the table below: what distarray
serves runs on the daemon and returns a DistributedArray; everything else raises a TypeError that
names the function and the explicit download (``numpy.asarray(x)`` or ``x.to_numpy()``). Data
leaves the daemon only when the caller asks for it.

The served functions take NumPy's signatures, mapped onto distarray's functions of the same
meaning (``numpy.cumsum`` flattens for ``axis=None``, ``numpy.take`` takes indices of any shape,
``numpy.unique`` merges NaNs...); NumPy's arguments distarray has no counterpart for (``out=``,
``where=``, ``mode='wrap'``...) raise TypeError naming them. ``numpy.linalg``'s functions, and
``numpy.trace``, ``diagonal`` and ``cross``, are in ``_numpy_linalg``, which adds them here.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from . import (_api_creation, _api_elementwise, _api_indexing, _api_linalg, _api_manipulation,
               _api_searching, _api_set, _api_sorting, _api_statistics, _functions,
               _manipulation)
from ._api_cumulative import cumulative_prod, cumulative_sum
from ._indexing import normalize_axis
from ._like import full_fill, new_like, ones_fill, zeros_fill
from ._manipulation import ManipulationOps
from ._ops import NDARRAY_OPERAND, REDUCTION_ALIASES, REDUCTIONS, ArrayOps
from ._types import is_scalar


def refusal(what: str) -> str:
    """The message for a NumPy function (or conversion) distarray does not serve."""
    return (
        f"{what} is not served on DistributedArrays, and distarray does not download arrays "
        "implicitly: download explicitly with numpy.asarray(x) or x.to_numpy() and call it on "
        "the NumPy array, or use an op distarray serves (help(distarray))"
    )


def _function_name(func: Callable) -> str:
    return f"{getattr(func, '__module__', None) or 'numpy'}.{getattr(func, '__name__', func)}"


def _method(a: Any, name: str) -> Callable[..., Any]:
    """``a.name`` for a distarray value; the policy's refusal for anything else (a list of
    arrays handed to a reduction would otherwise be converted)."""
    if not isinstance(a, (ArrayOps, ManipulationOps)):
        raise TypeError(refusal(f"numpy.{name} of a {type(a).__name__}"))
    return getattr(a, name)


def _refuse_extras(func: str, **extras: Any) -> None:
    for key, value in extras.items():
        if value is not None:
            raise TypeError(f"numpy.{func}: {key}= is not served on DistributedArrays")


def _concatenate(arrays, axis: Optional[int] = 0, out=None, *, dtype=None,
                 casting: str = "same_kind"):
    _refuse_extras("concatenate", out=out, dtype=dtype)
    return _manipulation.concat(list(arrays), axis)


def _stack(arrays, axis: int = 0, out=None, *, dtype=None, casting: str = "same_kind"):
    _refuse_extras("stack", out=out, dtype=dtype)
    return _manipulation.stack(list(arrays), axis)


def _reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None):
    if copy is False:
        raise ValueError("numpy.reshape(copy=False): a DistributedArray is never a view")
    return _method(a, "reshape")(shape if shape is not None else newshape,
                                                  order=order)


def _ravel(a, order: str = "C"):
    return _method(a, "ravel")(order)


def _where(condition, x=None, y=None):
    if x is None and y is None:  # numpy.where(condition) is nonzero(condition)
        return _api_searching.nonzero(_operand("where", "condition", condition))
    if x is None or y is None:
        raise ValueError("numpy.where: either both or neither of x and y should be given")
    return _functions.where(condition, x, y)


_NO_VALUE = getattr(np, "_NoValue", None)


def _clip(a, a_min=_NO_VALUE, a_max=_NO_VALUE, out=None, *, min=_NO_VALUE, max=_NO_VALUE,
          **kwargs):
    if kwargs:
        raise TypeError(f"numpy.clip: {', '.join(kwargs)} not served on DistributedArrays")
    low = a_min if a_min is not _NO_VALUE else (min if min is not _NO_VALUE else None)
    high = a_max if a_max is not _NO_VALUE else (max if max is not _NO_VALUE else None)
    options = {"out": out} if out is not None else {}
    if low is None and high is None:
        raise ValueError("numpy.clip: one of a_min and a_max is needed")
    if low is None:
        return _functions.minimum(a, high, **options)
    if high is None:
        return _functions.maximum(a, low, **options)
    return _functions.clip(a, low, high, **options)


def _astype(x, dtype, /, *, copy: bool = True, device=None):
    _refuse_extras("astype", device=device)
    return _functions.astype(x, dtype)


def _like(fill: Callable[[], Any]) -> Callable[..., Any]:
    def like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
        _refuse_extras("*_like", device=device)
        return new_like(prototype, fill(), dtype, shape=shape)

    return like


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _refuse_extras("full_like", device=device)
    return new_like(a, full_fill(fill_value), dtype, shape=shape)


# The sort kinds NumPy's sort and argsort may be given: the daemon's sort is stable, which is
# what 'stable' (and its alias 'mergesort') asks for and one of the orders 'quicksort' (NumPy's
# default, which promises no order of ties) allows. 'heapsort' and the rest are refused rather
# than quietly answered with another algorithm.
_SORT_KINDS = (None, "stable", "mergesort", "quicksort")


def _sorter(name: str) -> Callable[..., Any]:
    def sort(a, axis: Optional[int] = -1, kind: Optional[str] = None, order=None, *,
             stable: Optional[bool] = None):
        _refuse_extras(name, order=order)
        if kind is not None and stable is not None:
            raise ValueError(f"numpy.{name}: `kind` and `stable` parameters can't be provided at "
                             "the same time")
        if kind not in _SORT_KINDS:
            raise ValueError(
                f"numpy.{name}: kind={kind!r} is not served on DistributedArrays; the daemon's "
                "sort is stable: give kind=None, 'stable', 'mergesort' or 'quicksort'"
            )
        if axis is None:  # NumPy's: the flattened array
            a, axis = _manipulation.ravel(a), -1
        return getattr(_api_sorting, name)(a, axis=axis)

    return sort


# ---- NumPy's functions composed from distarray's ----------------------------------------------
# Each takes NumPy's signature, maps it onto the distarray function of the same meaning, and
# refuses what NumPy has and distarray does not (``out=``, ``where=``...) with a TypeError naming
# the argument. Data operands must be DistributedArrays: a NumPy array is refused with the upload
# hint (it is never an operand), anything else with the policy's refusal.


def _operand(func: str, name: str, x: Any) -> Any:
    if isinstance(x, np.ndarray):
        raise TypeError(f"numpy.{func}: {name} is a NumPy array; {NDARRAY_OPERAND}")
    if not isinstance(x, (ArrayOps, ManipulationOps)):
        raise TypeError(refusal(f"numpy.{func} of {name} a {type(x).__name__}"))
    return x


def _refuse_given(func: str, **extras: Any) -> None:
    """``_refuse_extras`` for arguments whose default is NumPy's ``_NoValue``."""
    for key, value in extras.items():
        if value is not _NO_VALUE:
            raise TypeError(f"numpy.{func}: {key}= is not served on DistributedArrays")


def _moment(name: str) -> Callable[..., Any]:
    def moment(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NO_VALUE,
               mean=_NO_VALUE, correction=_NO_VALUE):
        _refuse_extras(name, out=out)
        _refuse_given(name, mean=mean)
        if not (where is _NO_VALUE or (isinstance(where, (bool, np.bool_)) and where)):
            raise TypeError(f"numpy.{name}: where= is not served on DistributedArrays")
        x = _operand(name, "a", a)
        if correction is not _NO_VALUE:
            if ddof != 0:
                raise ValueError(f"numpy.{name}: ddof and correction can't be provided "
                                 "simultaneously")
            ddof = correction
        if dtype is not None and np.dtype(dtype) != x.dtype:
            x = x.astype(dtype)  # NumPy's dtype: the one to compute in
        return getattr(_api_statistics, name)(x, axis=axis, correction=ddof,
                                              keepdims=bool(keepdims))

    return moment


def _cumulative(name: str, scan: Callable[..., Any]) -> Callable[..., Any]:
    """``numpy.cumsum``/``cumprod``: ``axis=None`` scans the flattened array."""
    def cumulative(a, axis=None, dtype=None, out=None):
        _refuse_extras(name, out=out)
        x = _operand(name, "a", a)
        if axis is None:
            x, axis = _manipulation.ravel(x), 0
        return scan(x, axis=axis, dtype=dtype)

    return cumulative


def _cumulative_api(name: str, scan: Callable[..., Any]) -> Callable[..., Any]:
    """``numpy.cumulative_sum``/``cumulative_prod`` (NumPy 2.1), the array API's."""
    def cumulative(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        _refuse_extras(name, out=out)
        return scan(_operand(name, "x", x), axis=axis, dtype=dtype,
                    include_initial=include_initial)

    return cumulative


def _diff_edge(x: Any, axis: int, name: str, value: Any) -> Any:
    """``prepend``/``append`` of ``numpy.diff``: an array as it is, a scalar (or a 0-d array)
    broadcast to ``x``'s shape with one element along ``axis``."""
    shape = list(x.shape)
    shape[axis] = 1
    if isinstance(value, (ArrayOps, ManipulationOps)):
        return value if value.ndim else _api_manipulation.broadcast_to(value, tuple(shape))
    if isinstance(value, np.ndarray) and value.ndim:
        raise TypeError(f"numpy.diff: {name} is a NumPy array; {NDARRAY_OPERAND}")
    if isinstance(value, np.ndarray):
        value = value[()]
    if not is_scalar(value):
        raise TypeError(refusal(f"numpy.diff of {name} a {type(value).__name__}"))
    # NumPy makes the scalar an array (its own dtype, not a weak one) before joining.
    return new_like(x, full_fill(value), np.asarray(value).dtype, shape=tuple(shape))


def _diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    x = _operand("diff", "a", a)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"numpy.diff: order must be non-negative but got {n}")
    if n == 0:
        return x  # NumPy returns a itself
    if x.ndim == 0:
        raise ValueError("numpy.diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, x.ndim)
    before = [] if prepend is _NO_VALUE else [_diff_edge(x, axis, "prepend", prepend)]
    after = [] if append is _NO_VALUE else [_diff_edge(x, axis, "append", append)]
    if before or after:
        x = _manipulation.concat(before + [x] + after, axis=axis)
    # Bool arrays: NumPy's difference is not_equal (subtract has no bool loop).
    op = _functions.not_equal if x.dtype == np.bool_ else _functions.subtract
    head = (slice(None),) * axis
    for _ in range(n):
        x = op(x[head + (slice(1, None),)], x[head + (slice(None, -1),)])
    return x


def _roll(a, shift, axis=None):
    x = _operand("roll", "a", a)
    if axis is None:  # the flattened array, shifted by the sum of the shifts, reshaped back
        flat = _roll(_manipulation.ravel(x), shift, 0)
        return _manipulation.reshape(flat, tuple(x.shape))
    shifts, axes = np.broadcast_arrays(np.asarray(shift, dtype=object),
                                       np.asarray(axis, dtype=object))
    if shifts.ndim > 1:
        raise ValueError("numpy.roll: 'shift' and 'axis' should be scalars or 1D sequences")
    total: Dict[int, int] = {}  # NumPy adds up the shifts given for one axis
    for s, ax in zip(shifts.reshape(-1), axes.reshape(-1)):
        ax = normalize_axis(ax, x.ndim)
        total[ax] = total.get(ax, 0) + operator.index(s)
    if not total:
        return x.astype(x.dtype)
    return _api_manipulation.roll(x, tuple(total.values()), axis=tuple(total))


def _tile(A, reps):
    x = _operand("tile", "A", A)
    reps = tuple(reps) if isinstance(reps, (tuple, list, np.ndarray)) else (reps,)
    return _api_manipulation.tile(x, reps)


def _repeat(a, repeats, axis=None):
    return _api_manipulation.repeat(_operand("repeat", "a", a), repeats, axis=axis)


def _take(a, indices, axis=None, out=None, mode="raise"):
    """``numpy.take``: indices of any shape (their shape replaces ``axis``), ``axis=None``
    takes from the flattened array; positions out of range raise (``mode='raise'``)."""
    _refuse_extras("take", out=out)
    if mode != "raise":
        raise TypeError(f"numpy.take: mode={mode!r} is not served on DistributedArrays (only "
                        "'raise': a position out of range is IndexError)")
    x = _operand("take", "a", a)
    if axis is None:
        x, axis = _manipulation.ravel(x), 0
    axis = normalize_axis(axis, x.ndim)
    if isinstance(indices, (ArrayOps, ManipulationOps)):
        shape = tuple(indices.shape)
        flat = indices if indices.ndim == 1 else _manipulation.reshape(indices, (-1,))
    else:
        listed = np.asarray(indices)
        shape = listed.shape
        flat = listed.reshape(-1) if listed.size else np.zeros(0, np.int64)
    taken = _api_indexing.take(x, flat, axis=axis)
    result_shape = tuple(x.shape[:axis]) + shape + tuple(x.shape[axis + 1:])
    return taken if tuple(taken.shape) == result_shape else _manipulation.reshape(
        taken, result_shape)


def _take_along_axis(arr, indices, axis=-1):
    x = _operand("take_along_axis", "arr", arr)
    if axis is None:  # NumPy's: the flattened array, 1-D indices
        x, axis = _manipulation.ravel(x), 0
    return _api_indexing.take_along_axis(x, indices, axis=axis)


def _argwhere(a):
    """The indices of the nonzero elements, one row each: ``nonzero``'s arrays stacked."""
    x = _operand("argwhere", "a", a)
    if x.ndim == 0:  # NumPy's: a row of no columns if the element is nonzero
        found = _api_searching.nonzero(_manipulation.reshape(x, (1,)))[0]
        return _manipulation.reshape(found, (found.shape[0], 1))[:, 0:0]
    return _manipulation.stack(list(_api_searching.nonzero(x)), axis=1)


def _inexact(dtype: Any) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
            equal_nan=True, sorted=True):  # noqa: A002: NumPy's name
    """``numpy.unique`` of the flattened array, from the array API's ``unique_*``: values
    sorted ascending (any order is what ``sorted=False`` allows). ``equal_nan=True`` (NumPy's
    default) makes the NaNs one value, the last; the ``unique_*`` functions keep each NaN
    apart, so their count is read back (one element) and the NaN values merged."""
    x = _operand("unique", "ar", ar)
    if axis is not None:
        raise TypeError("numpy.unique: axis= is not served on DistributedArrays (the unique "
                        "values of the flattened array are)")
    index = inverse = counts = None
    if return_index or (return_inverse and return_counts):
        values, index, inverse, counts = _api_set.unique_all(x)
    elif return_inverse:
        values, inverse = _api_set.unique_inverse(x)
    elif return_counts:
        values, counts = _api_set.unique_counts(x)
    else:
        values = _api_set.unique_values(x)
    if equal_nan and _inexact(x.dtype) and values.shape[0] > 1:
        nans = int(_functions.sum(_functions.isnan(values)))
        if nans > 1 and x.dtype.kind == "c":
            raise ValueError(
                "numpy.unique: equal_nan=True on a complex array holding NaNs is not served "
                "(complex NaNs do not sort last on the daemon); give equal_nan=False")
        if nans > 1:
            keep = values.shape[0] - nans + 1  # the NaNs sort last: keep the first of them
            values = values[:keep]
            if index is not None:
                index = index[:keep]  # the stable sort puts the first NaN first
            if inverse is not None:
                inverse = _functions.minimum(inverse, keep - 1)
            if counts is not None:
                total = new_like(counts, full_fill(nans), counts.dtype, shape=(1,))
                counts = _manipulation.concat([counts[:keep - 1], total])
    extra = tuple(r for flag, r in ((return_index, index), (return_inverse, inverse),
                                    (return_counts, counts)) if flag)
    return (values,) + extra if extra else values


def _unique_api(name: str) -> Callable[..., Any]:
    def unique(x, /):
        return getattr(_api_set, name)(_operand(name, "x", x))

    return unique


def _count_nonzero(a, axis=None, *, keepdims=False):
    return _api_statistics.count_nonzero(_operand("count_nonzero", "a", a), axis=axis,
                                         keepdims=keepdims)


def _broadcast_to(array, shape, subok=False):
    x = _operand("broadcast_to", "array", array)
    return _api_manipulation.broadcast_to(x, _manipulation._shape_arg(shape))


def _broadcast_arrays(*args, subok=False):
    arrays = [_operand("broadcast_arrays", f"args[{i}]", a) for i, a in enumerate(args)]
    return tuple(_api_manipulation.broadcast_arrays(*arrays))


def _triangle(name: str) -> Callable[..., Any]:
    def triangle(m, k=0):
        return getattr(_api_creation, name)(_operand(name, "m", m), k=k)

    return triangle


def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """``numpy.meshgrid``: the inputs flattened; ``sparse=True`` gives each reshaped to its axis
    (no broadcast); ``copy`` is moot (results are new arrays)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("numpy.meshgrid: valid values for `indexing` are 'xy' and 'ij'")
    arrays = []
    for i, a in enumerate(xi):
        a = _operand("meshgrid", f"xi[{i}]", a)
        arrays.append(a if a.ndim == 1 else _manipulation.ravel(a))
    if not sparse:
        return tuple(_api_creation.meshgrid(*arrays, indexing=indexing))
    out = []
    for i, a in enumerate(arrays):
        dims = [1] * len(arrays)
        axis = 1 - i if indexing == "xy" and len(arrays) >= 2 and i < 2 else i
        dims[axis] = a.shape[0]
        out.append(_manipulation.reshape(a, tuple(dims)))
    return tuple(out)


def _outer(a, b, out=None):
    _refuse_extras("outer", out=out)
    x1, x2 = _operand("outer", "a", a), _operand("outer", "b", b)
    flat = [x if x.ndim == 1 else _manipulation.ravel(x) for x in (x1, x2)]
    return _api_linalg.outer(*flat)


def _axes_list(axes: Any) -> List[int]:
    return [axes] if isinstance(axes, (int, np.integer)) else list(axes)


def _tensordot(a, b, axes=2):
    x1, x2 = _operand("tensordot", "a", a), _operand("tensordot", "b", b)
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise ValueError("numpy.tensordot: axes is an integer or a pair (axes of a, axes "
                             "of b)")
        a_axes, b_axes = _axes_list(axes[0]), _axes_list(axes[1])
        if len(a_axes) != len(b_axes):
            raise ValueError("numpy.tensordot: shape-mismatch for sum (the axes of a and of b "
                             "differ in number)")
        axes = (a_axes, b_axes)
    return _api_linalg.tensordot(x1, x2, axes=axes)


def _dot(a, b, out=None):
    """``numpy.dot``: scalars multiply; ``b`` 1-D sums over the last axis of ``a`` and ``b``;
    otherwise over the last axis of ``a`` and the second-to-last of ``b`` (matmul for
    matrices)."""
    _refuse_extras("dot", out=out)
    if is_scalar(a) or is_scalar(b):
        return _functions.multiply(a, b)
    x1, x2 = _operand("dot", "a", a), _operand("dot", "b", b)
    if x1.ndim == 0 or x2.ndim == 0:
        return _functions.multiply(x1, x2)
    second = 0 if x2.ndim == 1 else x2.ndim - 2
    if x1.shape[-1] != x2.shape[second]:
        raise ValueError(f"numpy.dot: shapes {tuple(x1.shape)} and {tuple(x2.shape)} not "
                         f"aligned: {x1.shape[-1]} (dim {x1.ndim - 1}) != {x2.shape[second]} "
                         f"(dim {second})")
    return _api_linalg.tensordot(x1, x2, axes=([x1.ndim - 1], [second]))


def _part(name: str) -> Callable[..., Any]:
    def part(val):
        return getattr(_api_elementwise, name)(_operand(name, "val", val))

    return part


def _round(name: str) -> Callable[..., Any]:
    """``numpy.round``/``around`` as NumPy computes it: ``rint(x * 10**decimals) /
    10**decimals`` in ``x``'s dtype (``rint(x / 10**-decimals) * 10**-decimals`` for negative
    decimals; integers through float64 and back, unchanged for decimals >= 0)."""
    def round_(a, decimals=0, out=None):
        _refuse_extras(name, out=out)
        x = _operand(name, "a", a)
        decimals = operator.index(decimals)
        kind = np.dtype(x.dtype).kind
        if kind == "b":
            if decimals:  # NumPy's own casting refuses it (UFuncTypeError)
                raise TypeError(f"numpy.{name}: a bool array rounds with decimals=0 only")
            return x.astype(np.float16)  # rint's loop for bool, as NumPy's
        if kind in "iu" and decimals >= 0:
            return _api_elementwise.round(x)
        if decimals == 0:
            return _functions.rint(x)
        factor = 10.0 ** abs(decimals)
        y = x.astype(np.float64) if kind in "iu" else x
        if decimals > 0:
            y = _functions.divide(_functions.rint(_functions.multiply(y, factor)), factor)
        else:
            y = _functions.multiply(_functions.rint(_functions.divide(y, factor)), factor)
        return y if y.dtype == x.dtype else y.astype(x.dtype)

    return round_


def _copy(a, order="K", subok=False):
    """A copy on the daemon in the same layout and mode (``order`` is moot: no memory order
    shows)."""
    return _operand("copy", "a", a).reshard()


def _size(a, axis: Optional[int] = None):
    return a.size if axis is None else a.shape[axis]


def _reduction(name: str) -> Callable[..., Any]:
    def reduce(a, *args, **kwargs):
        return _method(a, name)(*args, **kwargs)

    return reduce


def _table() -> Dict[Callable, Callable]:
    table: Dict[str, Callable] = {
        "concatenate": _concatenate,
        "concat": _concatenate,
        "stack": _stack,
        "transpose": lambda a, axes=None: _manipulation.transpose(a, axes),
        "permute_dims": lambda a, axes=None: _manipulation.transpose(a, axes),
        "matrix_transpose": _manipulation.matrix_transpose,
        "swapaxes": _manipulation.swapaxes,
        "moveaxis": _manipulation.moveaxis,
        "reshape": _reshape,
        "ravel": _ravel,
        "squeeze": lambda a, axis=None: _manipulation.squeeze(a, axis),
        "expand_dims": _manipulation.expand_dims,
        "flip": lambda m, axis=None: _manipulation.flip(m, axis),
        "sort": _sorter("sort"),
        "argsort": _sorter("argsort"),
        "searchsorted": lambda a, v, side="left", sorter=None: _api_sorting.searchsorted(
            a, v, side=side, sorter=sorter),
        "where": _where,
        "clip": _clip,
        "astype": _astype,
        "shape": lambda a: a.shape,
        "ndim": lambda a: a.ndim,
        "size": _size,
        "zeros_like": _like(zeros_fill),
        "empty_like": _like(zeros_fill),
        "ones_like": _like(ones_fill),
        "full_like": _full_like,
        "std": _moment("std"),
        "var": _moment("var"),
        "cumsum": _cumulative("cumsum", cumulative_sum),
        "cumprod": _cumulative("cumprod", cumulative_prod),
        "cumulative_sum": _cumulative_api("cumulative_sum", cumulative_sum),
        "cumulative_prod": _cumulative_api("cumulative_prod", cumulative_prod),
        "diff": _diff,
        "roll": _roll,
        "tile": _tile,
        "repeat": _repeat,
        "take": _take,
        "take_along_axis": _take_along_axis,
        "nonzero": lambda a: _api_searching.nonzero(_operand("nonzero", "a", a)),
        "flatnonzero": lambda a: _api_searching.nonzero(
            _manipulation.ravel(_operand("flatnonzero", "a", a)))[0],
        "argwhere": _argwhere,
        "unique": _unique,
        "unique_values": _unique_api("unique_values"),
        "unique_counts": _unique_api("unique_counts"),
        "unique_inverse": _unique_api("unique_inverse"),
        "unique_all": _unique_api("unique_all"),
        "count_nonzero": _count_nonzero,
        "broadcast_to": _broadcast_to,
        "broadcast_arrays": _broadcast_arrays,
        "tril": _triangle("tril"),
        "triu": _triangle("triu"),
        "meshgrid": _meshgrid,
        "outer": _outer,
        "tensordot": _tensordot,
        "dot": _dot,
        "real": _part("real"),
        "imag": _part("imag"),
        "round": _round("round"),
        "around": _round("around"),
        "copy": _copy,
    }
    for name in list(REDUCTIONS) + list(REDUCTION_ALIASES):
        table[name] = _reduction(REDUCTION_ALIASES.get(name, name))
    # Only the names this NumPy has (concat, permute_dims, astype... came in 2.x).
    return {getattr(np, name): impl for name, impl in table.items() if hasattr(np, name)}


HANDLED: Dict[Callable, Callable] = _table()


def serve(functions: Dict[Callable, Callable]) -> None:
    """Adds NumPy functions to the table. ``_numpy_linalg`` (``numpy.linalg``'s, and
    ``numpy.trace``, ``diagonal`` and ``cross``) registers its own when the package is imported:
    they call ``distarray.linalg``, whose imports lead back to this module."""
    HANDLED.update(functions)


def dispatch(func: Callable, args: Any, kwargs: Dict[str, Any]) -> Any:
    """Runs the NumPy function ``func`` on the daemon, or raises the transfer policy's
    TypeError."""
    impl = HANDLED.get(func)
    if impl is None:
        raise TypeError(refusal(_function_name(func)))
    return impl(*args, **kwargs)
