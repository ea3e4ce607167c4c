"""The NumPy functions a DistributedArray answers (``__array_function__``), and the one transfer
policy for the rest.

Without ``__array_function__``, NumPy turns every argument of a function it does not dispatch
(``numpy.concatenate``, ``numpy.where``, ``numpy.median``...) into an ndarray through
``__array__``: the whole array was downloaded silently, the function ran on the host, and the
result was a NumPy array. Now NumPy hands each such call to the table below: what distarray
serves runs on the daemon and returns a DistributedArray; everything else raises a TypeError that
names the function and the explicit download (``numpy.asarray(x)`` or ``x.to_numpy()``). Data
leaves the daemon only when the caller asks for it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import numpy as np

from . import _api_sorting, _functions, _manipulation
from ._like import full_fill, new_like, ones_fill, zeros_fill
from ._manipulation import ManipulationOps
from ._ops import REDUCTION_ALIASES, REDUCTIONS, ArrayOps


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
    if x is None and y is None:
        raise TypeError(refusal("numpy.where(condition) (the indices of nonzero elements)"))
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
    }
    for name in list(REDUCTIONS) + list(REDUCTION_ALIASES):
        table[name] = _reduction(REDUCTION_ALIASES.get(name, name))
    # Only the names this NumPy has (concat, permute_dims, astype... came in 2.x).
    return {getattr(np, name): impl for name, impl in table.items() if hasattr(np, name)}


HANDLED: Dict[Callable, Callable] = _table()


def dispatch(func: Callable, args: Any, kwargs: Dict[str, Any]) -> Any:
    """Runs the NumPy function ``func`` on the daemon, or raises the transfer policy's
    TypeError."""
    impl = HANDLED.get(func)
    if impl is None:
        raise TypeError(refusal(_function_name(func)))
    return impl(*args, **kwargs)
