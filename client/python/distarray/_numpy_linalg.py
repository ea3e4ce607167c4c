"""``numpy.linalg``'s functions, and ``numpy.trace``, ``diagonal`` and ``cross``, on
DistributedArrays (``__array_function__``): NumPy's signatures mapped onto ``distarray.linalg``.

They join the table of ``_numpy_dispatch`` through ``serve`` when the package is imported
(``distarray/__init__``): ``distarray.linalg`` imports the program module, which imports the
array module, which imports ``_numpy_dispatch``, so that module cannot import this one's.
Where NumPy's signature differs from the array API's: ``eigh``/``eigvalsh`` take ``UPLO``
('U': the conjugate transpose, whose lower triangle the daemon reads); ``svd`` takes
``compute_uv`` (False: ``svdvals``) and ``hermitian`` (a hint: the general SVD is correct for a
Hermitian matrix); ``qr`` takes mode 'r' (R alone; 'raw' is refused); ``norm`` is NumPy's
(a vector norm over one axis, a matrix norm over two, the 2-norm of every element without
``ord`` and ``axis``); ``matrix_rank`` takes NumPy's absolute ``tol`` as well as ``rtol``;
``pinv``'s ``rcond`` defaults to NumPy's 1e-15 (``rtol=None``: the array API's default).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict

import numpy as np

from . import _api_elementwise, _api_linalg, _functions, _manipulation, _numpy_dispatch, linalg
from ._indexing import normalize_axis
from ._manipulation import ManipulationOps
from ._numpy_dispatch import _NO_VALUE, _operand, _refuse_extras, _tensordot
from ._ops import NDARRAY_OPERAND, ArrayOps


def _matrices_last(func: str, x: Any, axis1: Any, axis2: Any) -> Any:
    """``x`` with ``axis1`` and ``axis2`` moved to the end (in that order), the others keeping
    theirs: NumPy's ``trace`` and ``diagonal`` then are the array API's."""
    if x.ndim < 2:
        raise ValueError(f"numpy.{func}: the array must have at least two axes, not {x.ndim}")
    a1, a2 = normalize_axis(axis1, x.ndim), normalize_axis(axis2, x.ndim)
    if a1 == a2:
        raise ValueError(f"numpy.{func}: axis1 and axis2 cannot be the same")
    order = [d for d in range(x.ndim) if d not in (a1, a2)] + [a1, a2]
    return x if order == list(range(x.ndim)) else _manipulation.permute_dims(x, order)


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _refuse_extras("trace", out=out)
    x = _matrices_last("trace", _operand("trace", "a", a), axis1, axis2)
    return linalg.trace(x, offset=offset, dtype=dtype)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    x = _matrices_last("diagonal", _operand("diagonal", "a", a), axis1, axis2)
    return linalg.diagonal(x, offset=offset)


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    x1, x2 = _operand("cross", "a", a), _operand("cross", "b", b)
    if axis is not None:
        axisa = axisb = axisc = axis
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("numpy.cross takes arrays of at least one axis")
    axisa, axisb = normalize_axis(axisa, x1.ndim, "axisa"), normalize_axis(axisb, x2.ndim, "axisb")
    if x1.shape[axisa] != 3 or x2.shape[axisb] != 3:
        raise ValueError(
            f"numpy.cross: vectors of 3 elements are served (a has {x1.shape[axisa]} along "
            f"axis {axisa}, b {x2.shape[axisb]} along axis {axisb}); NumPy's 2-element "
            "cross products, deprecated, are not")
    if axisa != x1.ndim - 1:
        x1 = _manipulation.moveaxis(x1, axisa, -1)
    if axisb != x2.ndim - 1:
        x2 = _manipulation.moveaxis(x2, axisb, -1)
    result = linalg.cross(x1, x2, axis=-1)
    axisc = normalize_axis(axisc, result.ndim, "axisc")
    return result if axisc == result.ndim - 1 else _manipulation.moveaxis(result, -1, axisc)


def _linalg_unary(name: str) -> Callable[..., Any]:
    def unary(a, *args, **kwargs):
        return getattr(linalg, name)(_operand(f"linalg.{name}", "a", a), *args, **kwargs)

    return unary


def _linalg_binary(name: str) -> Callable[..., Any]:
    def binary(a, b, *args, **kwargs):
        return getattr(linalg, name)(_operand(f"linalg.{name}", "a", a),
                                     _operand(f"linalg.{name}", "b", b), *args, **kwargs)

    return binary


def _linalg_qr(a, mode="reduced"):
    x = _operand("linalg.qr", "a", a)
    if mode == "raw":
        raise TypeError("numpy.linalg.qr: mode='raw' (LAPACK's Householder reflectors) is not "
                        "served on DistributedArrays")
    if mode == "r":
        return linalg.qr(x, mode="reduced").R
    return linalg.qr(x, mode=mode)


def _hermitian_lower(func: str, a: Any, UPLO: str) -> Any:  # noqa: N803: NumPy's name
    """The operand whose lower triangle holds the Hermitian matrix ``UPLO`` names: ``x`` for
    'L', its conjugate transpose for 'U' (the daemon reads the lower triangle)."""
    x = _operand(f"linalg.{func}", "a", a)
    uplo = str(UPLO).upper()
    if uplo not in ("L", "U"):
        raise ValueError(f"numpy.linalg.{func}: UPLO argument must be 'L' or 'U'")
    if uplo == "L":
        return x
    x = _manipulation.matrix_transpose(x)
    return _api_elementwise.conj(x) if np.dtype(x.dtype).kind == "c" else x


def _linalg_eigh(a, UPLO="L"):  # noqa: N803
    return linalg.eigh(_hermitian_lower("eigh", a, UPLO))


def _linalg_eigvalsh(a, UPLO="L"):  # noqa: N803
    return linalg.eigvalsh(_hermitian_lower("eigvalsh", a, UPLO))


def _linalg_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``hermitian=True`` is NumPy's hint to factorize by eigh; the general SVD is correct for
    a Hermitian matrix too, so it runs that."""
    x = _operand("linalg.svd", "a", a)
    if not compute_uv:
        return linalg.svdvals(x)
    return linalg.svd(x, full_matrices=full_matrices)


def _linalg_norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002: NumPy's name
    """``numpy.linalg.norm``: a vector norm over one axis, a matrix norm over two (moved to the
    end for ``matrix_norm``), or (``ord=None``, no axis) the 2-norm of every element."""
    x = _operand("linalg.norm", "x", x)
    if axis is None:
        if ord is None:
            return linalg.vector_norm(x, keepdims=keepdims)
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        axis = (axis,)
    if len(axis) == 1:
        if isinstance(ord, str):
            raise ValueError(f"numpy.linalg.norm: invalid norm order '{ord}' for vectors")
        return linalg.vector_norm(x, axis=axis[0], keepdims=keepdims,
                                  ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError("numpy.linalg.norm: improper number of dimensions to norm")
    row, col = normalize_axis(axis[0], x.ndim), normalize_axis(axis[1], x.ndim)
    if row == col:
        raise ValueError("numpy.linalg.norm: duplicate axes given")
    order = [d for d in range(x.ndim) if d not in (row, col)] + [row, col]
    moved = x if order == list(range(x.ndim)) else _manipulation.permute_dims(x, order)
    kind = "fro" if ord in (None, "f") else ord
    if kind not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise ValueError("numpy.linalg.norm: invalid norm order for matrices")
    result = linalg.matrix_norm(moved, keepdims=keepdims, ord=kind)
    if keepdims and order != list(range(x.ndim)):
        result = _manipulation.moveaxis(result, (-2, -1), (row, col))
    return result


def _linalg_matrix_rank(A, tol=None, hermitian=False, *, rtol=None):  # noqa: N803
    """``numpy.linalg.matrix_rank``: ``tol`` an absolute threshold on the singular values,
    ``rtol`` one relative to the largest (default max(M, N) times the epsilon)."""
    x = _operand("linalg.matrix_rank", "A", A)
    if tol is not None and rtol is not None:
        raise ValueError("numpy.linalg.matrix_rank: `tol` and `rtol` can't be both set")
    if x.ndim < 2:  # NumPy's: 1 unless every element is zero
        return _functions.any(_functions.not_equal(x, 0)).astype(np.int64)
    if tol is None:
        return linalg.matrix_rank(x, rtol=rtol)
    if isinstance(tol, np.ndarray) and tol.ndim:
        raise TypeError(f"numpy.linalg.matrix_rank: tol is a NumPy array; {NDARRAY_OPERAND}")
    values = linalg.svdvals(x)
    threshold = tol[..., None] if isinstance(tol, (ArrayOps, ManipulationOps)) else tol
    return _functions.sum(_functions.greater(values, threshold).astype(np.int64), axis=-1)


def _linalg_pinv(a, rcond=None, hermitian=False, *, rtol=_NO_VALUE):
    """``numpy.linalg.pinv``: singular values at or below ``rcond`` (default 1e-15, NumPy's)
    times the largest count as zero; ``rtol=None`` is the array API's max(M, N) times the
    epsilon."""
    x = _operand("linalg.pinv", "a", a)
    if rcond is None:
        rcond = 1e-15 if rtol is _NO_VALUE else rtol
    elif rtol is not _NO_VALUE:
        raise ValueError("numpy.linalg.pinv: `rtol` and `rcond` can't be both set")
    return linalg.pinv(x, rtol=rcond)


def _linalg_lstsq(a, b, rcond=None):
    return linalg.lstsq(_operand("linalg.lstsq", "a", a), _operand("linalg.lstsq", "b", b),
                        rcond)


def _linalg_matmul(x1, x2, /):
    return _api_linalg.matmul(_operand("linalg.matmul", "x1", x1),
                              _operand("linalg.matmul", "x2", x2))


def _linalg_tensordot(x1, x2, /, *, axes=2):
    return _tensordot(x1, x2, axes)


def _linalg_table() -> Dict[str, Callable]:
    return {
        "solve": _linalg_binary("solve"),
        "inv": _linalg_unary("inv"),
        "cholesky": lambda a, /, *, upper=False: linalg.cholesky(
            _operand("linalg.cholesky", "a", a), upper=upper),
        "qr": _linalg_qr,
        "eigh": _linalg_eigh,
        "eigvalsh": _linalg_eigvalsh,
        "svd": _linalg_svd,
        "svdvals": _linalg_unary("svdvals"),
        "det": _linalg_unary("det"),
        "slogdet": _linalg_unary("slogdet"),
        "norm": _linalg_norm,
        "matrix_norm": _linalg_unary("matrix_norm"),
        "vector_norm": _linalg_unary("vector_norm"),
        "matrix_rank": _linalg_matrix_rank,
        "pinv": _linalg_pinv,
        "lstsq": _linalg_lstsq,
        "matrix_power": _linalg_unary("matrix_power"),
        "trace": _linalg_unary("trace"),
        "diagonal": _linalg_unary("diagonal"),
        "cross": _linalg_binary("cross"),
        "outer": _linalg_binary("outer"),
        "vecdot": _linalg_binary("vecdot"),
        "tensordot": _linalg_tensordot,
        "matmul": _linalg_matmul,
        "matrix_transpose": lambda x, /: _manipulation.matrix_transpose(
            _operand("linalg.matrix_transpose", "x", x)),
    }


_numpy_dispatch.serve({np.trace: _trace, np.diagonal: _diagonal, np.cross: _cross})
_numpy_dispatch.serve({getattr(np.linalg, name): impl for name, impl in _linalg_table().items()
                       if hasattr(np.linalg, name)})
