"""NumPy's ndarray methods that have no daemon op of their own, as thin methods over the module's
functions: ``copy``, ``std``, ``var``, ``cumsum``, ``cumprod``, ``dot``, ``sort`` (in place),
``argsort``, ``nonzero``, ``take``, ``repeat``, ``round``, ``conj``/``conjugate``, ``real``,
``imag``, ``diagonal``, ``trace``, ``fill`` (in place) and ``tolist``.

They take NumPy's method signatures and defaults (``a.diagonal()`` is over axes 0 and 1, where
``linalg.diagonal`` takes the last two; ``a.cumsum()`` flattens, where ``cumulative_sum`` needs an
axis), so code written for NumPy or CuPy runs unchanged. Every result is a new array on the
devices (NumPy's views, ``real`` and a real array's ``conj()`` aside, are copies here); ``out=`` is
not served (TypeError), as for the reductions. Nothing is downloaded but where a docstring says so
(``tolist``, and the one count ``nonzero`` and ``repeat`` with an array of counts read back).
"""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _functions as f
from . import linalg
from ._api_cumulative import cumulative_prod, cumulative_sum
from ._api_elementwise import conj as conj_
from ._api_elementwise import imag as imag_
from ._api_elementwise import real as real_
from ._api_indexing import take as take_
from ._api_linalg import matmul, tensordot
from ._api_manipulation import repeat as repeat_
from ._api_searching import nonzero as nonzero_
from ._api_sorting import argsort as argsort_
from ._api_sorting import sort as sort_
from ._api_statistics import std as std_
from ._api_statistics import sum as sum_
from ._api_statistics import var as var_
from ._indexing import normalize_axis
from ._manipulation import check_order, permute_dims, reshape
from ._ops import NDARRAY_OPERAND, Axis
from ._types import is_scalar


def _no_out(what: str, out: Any) -> None:
    if out is not None:
        raise TypeError(f"{what}: out= is not served; assign the result (it is a new array)")


def _sort_kind(what: str, kind: Any, order: Any, stable: Optional[bool]) -> None:
    """NumPy's ``kind``/``order``/``stable`` arguments: every kind NumPy accepts (its first
    letter: quicksort, heapsort, mergesort, stable) gets the daemon's stable sort, an order each
    of them allows; ``order`` is for structured arrays, which distarray has none of."""
    if kind is not None:
        if stable is not None:
            raise ValueError(f"{what}: `kind` and `stable` parameters can't be provided at the "
                             "same time. Use only one of them.")
        if not isinstance(kind, str):
            raise TypeError(f"{what}: kind must be a string, not {type(kind).__name__}")
        if kind[:1].lower() not in ("q", "h", "m", "s"):
            raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' "
                             f"(got {kind!r})")
    if order is not None:
        raise ValueError(f"{what}: Cannot specify order when the array has no fields.")


def _flat(x: Any) -> Any:
    return reshape(x, (-1,))


class NumpyMethods:
    """The methods above, for DistributedArray (whose ``shape``, ``dtype`` and ``client`` they
    use; a traced value has none of them, so they are not Var's)."""

    __slots__ = ()

    # ---- copies and values ----------------------------------------------------------------

    def copy(self, order: str = "C") -> Any:
        """A new array of the same values, layout and mode (``reshard()`` with nothing changed).
        ``order`` is checked as NumPy checks it; the memory order of the chunks is the
        daemon's, so every order gives the same array."""
        check_order(order)
        return self.reshard()  # type: ignore[attr-defined]

    def tolist(self) -> Any:
        """The values as nested Python lists of Python scalars, as ``ndarray.tolist``: a download
        of the whole array (``to_numpy().tolist()``)."""
        return self.to_numpy().tolist()  # type: ignore[attr-defined]

    def fill(self, value: Any) -> None:
        """Sets every element to the scalar ``value`` in place (``self[...] = value``: the handle
        and name stay). Returns None, as NumPy's."""
        if not is_scalar(value):
            raise TypeError(f"fill takes a scalar value, not {type(value).__name__}")
        self[...] = value  # type: ignore[index]

    # ---- statistics -----------------------------------------------------------------------

    def var(self, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, *, where: Any = True, mean: Any = None,
            correction: Optional[float] = None) -> Any:
        """Variance over ``axis``: ``sum(|x - mean|**2) / (N - ddof)``. ``correction=`` is the
        array API's name for ``ddof`` (give one of them, as NumPy's ``var`` says). Integers and
        bool give float64; a complex array its real dtype. ``dtype`` (a float or complex dtype)
        converts the array first. Not served: ``out=``, ``where=``, ``mean=`` (TypeError)."""
        return var_(_stat_input(self, "var", dtype, out, where, mean), axis=axis,
                    correction=_correction("var", ddof, correction), keepdims=keepdims)

    def std(self, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, *, where: Any = True, mean: Any = None,
            correction: Optional[float] = None) -> Any:
        """Standard deviation: ``sqrt(var(...))`` with ``var``'s arguments."""
        return std_(_stat_input(self, "std", dtype, out, where, mean), axis=axis,
                    correction=_correction("std", ddof, correction), keepdims=keepdims)

    def cumsum(self, axis: Optional[int] = None, dtype: Any = None, out: Any = None) -> Any:
        """Running sums along ``axis`` (None: of the flattened array), in ``sum``'s dtype
        (``cumulative_sum``: a scan of log2(n) steps, so float sums may differ from NumPy's in
        the last bits)."""
        _no_out("cumsum", out)
        x, axis = (_flat(self), 0) if axis is None else (self, axis)
        return cumulative_sum(x, axis=axis, dtype=dtype)

    def cumprod(self, axis: Optional[int] = None, dtype: Any = None, out: Any = None) -> Any:
        """Running products along ``axis`` (None: of the flattened array), in ``prod``'s
        dtype."""
        _no_out("cumprod", out)
        x, axis = (_flat(self), 0) if axis is None else (self, axis)
        return cumulative_prod(x, axis=axis, dtype=dtype)

    # ---- products -------------------------------------------------------------------------

    def dot(self, b: Any, out: Any = None) -> Any:
        """NumPy's ``dot``: a scalar or a 0-d operand multiplies; 1-D and 2-D operands are
        ``matmul`` (1-D with 1-D: the inner product, a 0-d array); otherwise the sum over the
        last axis of ``self`` and the second-to-last of ``b`` (its only axis when 1-D), by
        ``tensordot``. Float products run on the daemon's Matmul, in another order than NumPy's
        BLAS."""
        _no_out("dot", out)
        if is_scalar(b):
            return f.multiply(self, b)
        if isinstance(b, np.ndarray):
            raise TypeError(NDARRAY_OPERAND)
        if not isinstance(b, NumpyMethods):
            raise TypeError(f"dot takes a DistributedArray or a scalar, not {type(b).__name__}")
        a: Any = self
        if a.ndim == 0 or b.ndim == 0:
            return f.multiply(a, b)
        k = 0 if b.ndim == 1 else b.ndim - 2
        if a.shape[-1] != b.shape[k]:
            raise ValueError(f"dot: shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} "
                             f"(dim {a.ndim - 1}) != {b.shape[k]} (dim {k})")
        if a.ndim <= 2 and b.ndim <= 2:
            return matmul(a, b)
        return tensordot(a, b, axes=([a.ndim - 1], [k]))

    # ---- sorting and searching ------------------------------------------------------------

    def sort(self, axis: int = -1, kind: Optional[str] = None, order: Any = None, *,
             stable: Optional[bool] = None) -> None:
        """Sorts the array in place along ``axis``, as NumPy's ``a.sort()``: the sorted values
        (``distarray.sort``) are written back into this array (``self[...] = sorted``: the
        handle, name and layout stay), and it returns None. ``axis=None`` is TypeError, as
        NumPy's (``distarray.sort(a.flatten())`` sorts the flattened values). Every ``kind``
        gets the daemon's stable sort (NaNs last). Complex arrays have no order here
        (InvalidArgumentError), where NumPy sorts them by real, then imaginary part. A 'sum'-mode
        array comes out in 'replica' mode, as after any ``x[...] = value``."""
        _sort_kind("sort", kind, order, stable)
        if axis is None:
            raise TypeError("sort: axis=None is not an in-place sort (NumPy: 'NoneType' object "
                            "cannot be interpreted as an integer); use distarray.sort(a.flatten())")
        self[...] = sort_(self, axis=axis)  # type: ignore[index]

    def argsort(self, axis: Optional[int] = -1, kind: Optional[str] = None, order: Any = None,
                *, stable: Optional[bool] = None) -> Any:
        """The int64 positions that sort the array along ``axis`` (None: the flattened array),
        stable (equal elements keep their order) whatever ``kind``."""
        _sort_kind("argsort", kind, order, stable)
        x, axis = (_flat(self), 0) if axis is None else (self, axis)
        return argsort_(x, axis=axis)

    def nonzero(self) -> Tuple[Any, ...]:
        """The indices of the nonzero elements, one int64 array per axis (``distarray.nonzero``:
        their count, the results' length, is read back). A 0-d array is ValueError, as in
        NumPy 2."""
        return nonzero_(self)

    # ---- indexing -------------------------------------------------------------------------

    def take(self, indices: Any, axis: Optional[int] = None, out: Any = None,
             mode: str = "raise") -> Any:
        """The elements at ``indices`` along ``axis`` (None: of the flattened array), as NumPy's
        ``take``: the result's shape is ``shape[:axis] + indices.shape + shape[axis + 1:]``.
        ``indices`` is an integer, a list or NumPy array of integers (sent in the request), or a
        DistributedArray of integers (its values stay on the devices). ``mode``: 'raise'
        (positions outside the axis are IndexError; negative ones count from the end), 'wrap'
        (taken modulo the length) or 'clip' (clipped to [0, length - 1], negative ones too).
        Float indices are TypeError, where NumPy casts integral floats."""
        _no_out("take", out)
        if mode not in ("raise", "wrap", "clip"):
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
        x, axis = (_flat(self), 0) if axis is None else (self, axis)
        axis = normalize_axis(axis, x.ndim)
        n = x.shape[axis]
        held = isinstance(indices, NumpyMethods)
        if not held:
            indices = np.asarray(indices)
            if indices.size == 0 and indices.dtype.kind == "f":
                indices = indices.astype(np.int64)  # an empty list
        if indices.dtype.kind not in "iu":
            raise TypeError(f"take: indices must have an integer dtype, not {indices.dtype}")
        shape = tuple(indices.shape)
        size = int(np.prod(shape, dtype=np.int64))
        if mode != "raise" and size:
            if n == 0:
                raise IndexError("cannot do a non-empty take from an empty axes.")
            if held:
                indices = f.remainder(indices, n) if mode == "wrap" else f.clip(indices, 0, n - 1)
            else:
                indices = np.mod(indices, n) if mode == "wrap" else np.clip(indices, 0, n - 1)
        if len(shape) == 0 and not held:
            return x[(slice(None),) * axis + (int(indices),)]
        flat = indices if len(shape) == 1 else (reshape(indices, (-1,)) if held
                                                else indices.reshape(-1))
        out = take_(x, flat, axis=axis)
        if len(shape) == 1:
            return out
        return reshape(out, tuple(x.shape[:axis]) + shape + tuple(x.shape[axis + 1:]))

    def repeat(self, repeats: Any, axis: Optional[int] = None) -> Any:
        """Each element repeated ``repeats`` times along ``axis`` (None: the flattened array):
        ``distarray.repeat`` (an array of counts reads their total back)."""
        return repeat_(self, repeats, axis=axis)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """The ``offset``-th diagonal of the 2-D sub-arrays over ``axis1`` and ``axis2``, as
        NumPy's ``a.diagonal()``: those axes removed and the diagonal appended as the last (a
        copy, where NumPy's is a read-only view)."""
        return linalg.diagonal(_matrices_last(self, axis1, axis2), offset=offset)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
              out: Any = None) -> Any:
        """The sum along ``diagonal(offset, axis1, axis2)``, in ``dtype`` (default: ``sum``'s,
        int64 for small integers as NumPy's)."""
        _no_out("trace", out)
        return sum_(self.diagonal(offset, axis1, axis2), axis=-1, dtype=dtype)

    # ---- elementwise ----------------------------------------------------------------------

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        """Rounded to ``decimals`` places, halves to even, as NumPy's ``around``: floats are
        ``rint(x * 10**decimals) / 10**decimals`` (``/`` then ``*`` for negative ``decimals``),
        the real and imaginary parts of complex numbers separately; integers are unchanged for
        ``decimals >= 0``, else rounded in float64 and converted back (past the dtype's range
        they wrap, as NumPy's do). The dtype is NumPy's (bool gives float16)."""
        _no_out("round", out)
        decimals = operator.index(decimals)
        # NumPy's result dtype, and its error where it has one (bool with decimals != 0).
        model = np.round(np.ones(1, self.dtype), decimals)  # type: ignore[attr-defined]
        return _round(self, decimals, model.dtype)

    def conj(self) -> Any:
        """The complex conjugate. A real array returns itself, as NumPy's ``a.conj()`` does (its
        conjugate is itself); ``distarray.conj`` always copies."""
        if np.dtype(self.dtype).kind != "c":  # type: ignore[attr-defined]
            return self
        return conj_(self)

    def conjugate(self) -> Any:
        """``conj()``."""
        return self.conj()

    @property
    def real(self) -> Any:
        """The real part, as a new array (NumPy's is a view; write parts with ``x[...] =``)."""
        return real_(self)

    @property
    def imag(self) -> Any:
        """The imaginary part, as a new array (zeros of the dtype for a real array)."""
        return imag_(self)


def _correction(what: str, ddof: Any, correction: Any) -> float:
    if correction is not None:
        if ddof != 0:
            raise ValueError(f"{what}: ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def _stat_input(x: Any, what: str, dtype: Any, out: Any, where: Any, mean: Any) -> Any:
    _no_out(what, out)
    if where is not True:
        raise TypeError(f"{what}: where= is not served (select the elements first: x[mask])")
    if mean is not None:
        raise TypeError(f"{what}: mean= is not served (the mean is computed on the devices)")
    if dtype is None:
        return x
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        raise TypeError(f"{what}: dtype must be a float or complex dtype, not {dtype}")
    return x if x.dtype == dtype else x.astype(dtype)


def _matrices_last(x: Any, axis1: int, axis2: int) -> Any:
    """``x`` with ``axis1`` and ``axis2`` moved last, in that order (NumPy's diagonal axes)."""
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1, a2 = normalize_axis(axis1, x.ndim, "axis1"), normalize_axis(axis2, x.ndim, "axis2")
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    order = [i for i in range(x.ndim) if i not in (a1, a2)] + [a1, a2]
    return x if order == list(range(x.ndim)) else permute_dims(x, order)


def _round_float(x: Any, decimals: int) -> Any:
    if decimals == 0:
        return f.rint(x)
    scale = float(10.0 ** abs(decimals))
    if decimals > 0:
        return f.divide(f.rint(f.multiply(x, scale)), scale)
    return f.multiply(f.rint(f.divide(x, scale)), scale)


def _round(x: Any, decimals: int, dtype: np.dtype) -> Any:
    kind = np.dtype(x.dtype).kind
    if kind in "iu":
        if decimals >= 0:
            return x.astype(x.dtype)
        # NumPy rounds in float64 and casts back; through int64 (uint64) the cast wraps as
        # NumPy's does, where a float converted straight to a narrow integer would saturate.
        wide = np.int64 if kind == "i" else np.uint64
        return _round_float(x.astype(np.float64), decimals).astype(wide).astype(x.dtype)
    if kind == "c":
        re = _round_float(real_(x), decimals).astype(dtype)
        im = _round_float(imag_(x), decimals).astype(dtype)
        return f.add(re, f.multiply(im, 1j))
    if x.dtype != dtype:  # bool: NumPy rounds in float16
        x = x.astype(dtype)
    return _round_float(x, decimals)


__all__: List[str] = []
