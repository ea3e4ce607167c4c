"""The array API's ``linalg`` extension (``distarray.linalg``).

The factorizations and solvers (``cholesky``, ``det``, ``eigh``, ``eigvalsh``, ``inv``, ``qr``,
``slogdet``, ``solve``, ``svd``, ``svdvals``) are the daemon's Linalg op: the operand is gathered
onto one device (the one holding most of it), factorized there by LAPACK (host backend) or
cuSOLVER (GPUs), and every result is one chunk on that device (docs/api.md, "Linear algebra").
float32, float64, complex64 and complex128 run as they are; integers and bool are converted to
float64 and float16/bfloat16 to float32 (results stay float32). A singular matrix (``solve``,
``inv``) or one that is not positive definite (``cholesky``) raises ``LinAlgError``, as NumPy's.
``matrix_rank``, ``pinv`` and ``lstsq`` (NumPy's least squares) are composed from
``svd``/``svdvals``.

The rest needs no factorization: ``matmul``, ``matrix_transpose``, ``outer``, ``tensordot``,
``vecdot`` (the main namespace's), and ``cross``, ``diagonal``, ``trace``, ``vector_norm``,
``matrix_norm`` and ``matrix_power``, composed from the daemon's elementwise ops, reductions,
matmul and slices (the singular-value norms through ``svdvals``, negative powers through
``inv``).

``diagonal`` is a strided slice of the matrices laid end to end (``reshape`` to (..., n*m), then
``[offset::m+1]``), so it works on every layout; it moves the matrices when their split does not
survive the reshape.
"""
from __future__ import annotations

import math
import numbers
import operator
from typing import Any, List, NamedTuple, Optional, Tuple, Union

import grpc
import numpy as np

from . import _functions as f
from ._errors import FailedPreconditionError
from ._api_manipulation import broadcast_to
from ._api_linalg import matmul, outer, tensordot, vecdot
from ._api_statistics import max as _max
from ._api_statistics import min as _min
from ._api_statistics import sum as _sum
from ._indexing import normalize_axis
from ._like import new_like, zeros_fill
from ._manipulation import matrix_transpose, reshape, stack
from .v1 import distarray_pb2 as pb


def _matrices(x: Any, what: str) -> None:
    if x.ndim < 2:
        raise ValueError(f"linalg.{what} takes arrays of at least two axes, not {x.ndim}")


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The ``offset``-th diagonal of each matrix (the last two axes), as ``numpy.diagonal``
    with axis1=-2, axis2=-1 (a copy)."""
    _matrices(x, "diagonal")
    offset = operator.index(offset)
    n, m = x.shape[-2], x.shape[-1]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    flat = reshape(x, tuple(x.shape[:-2]) + (n * m,))
    if length == 0:
        return flat[..., 0:0]
    return flat[..., start:start + (length - 1) * (m + 1) + 1:m + 1]


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The sum of each matrix's ``offset``-th diagonal, in ``dtype`` (default: sum's)."""
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def _float_abs(x: Any) -> Any:
    """|x| in a floating dtype: complex magnitudes, integers converted to float64 first."""
    kind = np.dtype(x.dtype).kind
    if kind in "biu":
        x = x.astype(np.float64)
    return f.abs(x)


def vector_norm(x: Any, /, *, axis: Union[None, int, tuple] = None, keepdims: bool = False,
                ord: Union[int, float] = 2) -> Any:  # noqa: A002: the array API's name
    """The vector ``ord``-norm over ``axis`` (None: every element): 2 (Euclidean), 1, inf,
    -inf, 0 (the count of nonzero elements) or any other p (sum of |x|^p to the 1/p)."""
    a = _float_abs(x)
    if ord == math.inf:
        return _max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _sum(f.not_equal(a, 0).astype(a.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return f.sqrt(_sum(f.multiply(a, a), axis=axis, keepdims=keepdims))
    return f.pow(_sum(f.pow(a, ord), axis=axis, keepdims=keepdims), 1.0 / ord)


def matrix_norm(x: Any, /, *, keepdims: bool = False,
                ord: Union[int, float, str, None] = "fro") -> Any:  # noqa: A002
    """The matrix norm of each matrix (the last two axes): 'fro' (Frobenius), 1 and -1 (the
    largest and smallest column sums of |x|), inf and -inf (row sums), 'nuc', 2 and -2 (the sum,
    largest and smallest of the singular values)."""
    _matrices(x, "matrix_norm")
    if ord is None:
        ord = "fro"
    a = _float_abs(x)
    if ord == "fro":
        out = f.sqrt(_sum(f.multiply(a, a), axis=(-2, -1), keepdims=True))
    elif ord in (1, -1, math.inf, -math.inf):
        along, across = (-2, -1) if ord in (1, -1) else (-1, -2)
        pick = _max if ord > 0 else _min
        out = pick(_sum(a, axis=along, keepdims=True), axis=across, keepdims=True)
    elif ord in ("nuc", 2, -2):
        values = svdvals(x)
        reduce = _sum if ord == "nuc" else _max if ord == 2 else _min
        out = reduce(values, axis=-1, keepdims=True)[..., None]
    else:
        raise ValueError(f"linalg.matrix_norm: ord={ord!r} is not a matrix norm")
    return out if keepdims else reshape(out, tuple(out.shape[:-2]))


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-element vectors along ``axis`` (the operands broadcast)."""
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    axis = normalize_axis(axis, len(shape))

    def component(x: Any, i: int) -> Any:
        own = axis - (len(shape) - x.ndim)  # the axis in x's own numbering
        if own < 0 or x.shape[own] != 3:
            raise ValueError(f"linalg.cross: axis {axis} of the broadcast shapes {x1.shape} and "
                             f"{x2.shape} must hold 3 elements in both")
        key = [slice(None)] * x.ndim
        key[own] = i
        return x[tuple(key)]

    a = [component(x1, i) for i in range(3)]
    b = [component(x2, i) for i in range(3)]
    parts = [f.subtract(f.multiply(a[1], b[2]), f.multiply(a[2], b[1])),
             f.subtract(f.multiply(a[2], b[0]), f.multiply(a[0], b[2])),
             f.subtract(f.multiply(a[0], b[1]), f.multiply(a[1], b[0]))]
    return stack(parts, axis=axis)


def matrix_power(x: Any, n: int, /) -> Any:
    """``x`` (square matrices) to the integer power ``n``, by repeated squaring with matmul;
    ``n`` = 0 gives identities, a negative ``n`` the power of the inverse."""
    _matrices(x, "matrix_power")
    n = operator.index(n)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.matrix_power takes square matrices, not {x.shape[-2:]}")
    if n < 0:
        x, n = inv(x), -n
    if n == 0:
        identity = new_like(x, pb.Fill(eye=pb.Fill.Eye(k=0)), shape=x.shape[-2:])
        return identity if x.ndim == 2 else broadcast_to(identity, tuple(x.shape))
    result, square = None, x
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result


# ---------------------------------------------------------------------------------------------
# Factorizations and solvers: the daemon's Linalg op.


class LinAlgError(FailedPreconditionError, np.linalg.LinAlgError):
    """A matrix the factorization cannot take: singular (``solve``, ``inv``), not positive
    definite (``cholesky``), or an iteration that did not converge (``eigh``, ``svd``). The
    daemon's FAILED_PRECONDITION; also a ``numpy.linalg.LinAlgError`` (a ``ValueError``).
    ``lstsq`` raises it too, with code INVALID_ARGUMENT, for the operand shapes NumPy's lstsq
    refuses with LinAlgError (not 2-D, rows that differ)."""


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


_SERVED = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
           np.dtype(np.complex128)}


def _factor_dtype(dtype: Any) -> np.dtype:
    """The dtype the daemon factorizes ``dtype`` in: itself, float64 for integers and bool,
    float32 for the 16-bit floats."""
    dtype = np.dtype(dtype)
    if dtype in _SERVED:
        return dtype
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return np.dtype(np.float32)
    raise TypeError(f"linalg: no factorization of {dtype} arrays")


def _traced(x: Any) -> bool:
    """Whether ``x`` (a distarray array: the callers checked) is a traced value of a program (a
    Var): it has no shape or dtype yet, so the daemon checks them when the program runs. Told by
    the missing shape, as the other modules tell it: ``_graph`` imports the array module, whose
    methods use this one."""
    return getattr(x, "shape", None) is None


def _operand(x: Any, what: str, dtype: Any = None) -> Any:
    if getattr(x, "_linalg", None) is None:
        raise TypeError(f"linalg.{what} takes a distarray array, not {type(x).__name__}")
    if _traced(x):
        return x
    _matrices(x, what)
    target = _factor_dtype(x.dtype if dtype is None else dtype)
    return x if x.dtype == target else x.astype(target)


def _call(op: str, a: Any, b: Any = None, **options: Any) -> List[Any]:
    try:
        return a._linalg(op, a, b, **options)
    except FailedPreconditionError as error:
        raise LinAlgError(error.code, error.message) from None


def cholesky(x: Any, /, *, upper: bool = False) -> Any:
    """The Cholesky factor of each Hermitian positive-definite matrix: lower L with x = L L^H,
    or upper U with x = U^H U. Only that triangle of ``x`` is read (as LAPACK's potrf)."""
    return _call("cholesky", _operand(x, "cholesky"), upper=bool(upper))[0]


def det(x: Any, /) -> Any:
    """The determinant of each square matrix (from its LU factorization)."""
    return _call("det", _operand(x, "det"))[0]


def slogdet(x: Any, /) -> SlogdetResult:
    """sign and log|det| of each square matrix: sign 0 and logabsdet -inf for a singular one."""
    sign, logabsdet = _call("slogdet", _operand(x, "slogdet"))
    return SlogdetResult(sign, logabsdet)


def eigh(x: Any, /) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors (the columns) of each Hermitian matrix;
    only the lower triangle is read (NumPy's UPLO='L')."""
    values, vectors = _call("eigh", _operand(x, "eigh"), compute_uv=True)
    return EighResult(values, vectors)


def eigvalsh(x: Any, /) -> Any:
    """The eigenvalues (ascending, real) of each Hermitian matrix."""
    return _call("eigh", _operand(x, "eigvalsh"), compute_uv=False)[0]


def inv(x: Any, /) -> Any:
    """The inverse of each square matrix (LinAlgError for a singular one)."""
    return _call("inv", _operand(x, "inv"))[0]


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """x = Q R for each matrix: 'reduced' (Q m x k, R k x n, k = min(m, n)) or 'complete'
    (Q m x m, R m x n)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode is 'reduced' or 'complete', not {mode!r}")
    q, r = _call("qr", _operand(x, "qr"), full_matrices=mode == "complete")
    return QRResult(q, r)


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """x = U diag(S) Vh for each matrix, S descending; ``full_matrices``: U m x m and Vh n x n,
    else U m x k and Vh k x n (k = min(m, n))."""
    u, s, vh = _call("svd", _operand(x, "svd"), full_matrices=bool(full_matrices),
                     compute_uv=True)
    return SVDResult(u, s, vh)


def svdvals(x: Any, /) -> Any:
    """The singular values of each matrix, descending."""
    return _call("svd", _operand(x, "svdvals"), compute_uv=False)[0]


def solve(x1: Any, x2: Any, /) -> Any:
    """x with x1 @ x = x2 for square x1 (LinAlgError when singular). x2 is a vector (M,) only
    when it has one axis; otherwise (..., M, K). The stacks broadcast."""
    if getattr(x2, "_linalg", None) is None or getattr(x1, "_linalg", None) is None:
        raise TypeError("linalg.solve takes two distarray arrays")
    if _traced(x1) or _traced(x2):
        # In a program: a LinalgStatement, b of a's stack (the daemon broadcasts nothing there).
        if not (_traced(x1) and _traced(x2)):
            raise TypeError("linalg.solve inside a program takes two traced values "
                            "(capture arrays with Program.capture)")
        return _call("solve", x1, x2)[0]
    dtype = _factor_dtype(np.result_type(x1.dtype, x2.dtype))
    a = _operand(x1, "solve", dtype)
    m = a.shape[-1]
    if a.shape[-2] != m:
        raise ValueError(f"linalg.solve takes square matrices x1, not {a.shape[-2:]}")
    b = x2 if x2.dtype == dtype else x2.astype(dtype)
    if b.ndim == 0:
        raise ValueError("linalg.solve: x2 has no axes")
    if b.ndim == 1:
        if b.shape[0] != m:
            raise ValueError(f"linalg.solve: x2 of shape {b.shape} does not match x1's {a.shape}")
        stack = tuple(a.shape[:-2])
        if stack:
            b = broadcast_to(b, stack + (m,))
        return _call("solve", a, b)[0]
    if b.shape[-2] != m:
        raise ValueError(f"linalg.solve: x2 of shape {b.shape} does not match x1's {a.shape}")
    stack = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    if tuple(a.shape[:-2]) != stack:
        a = broadcast_to(a, stack + (m, m))
    if tuple(b.shape[:-2]) != stack:
        b = broadcast_to(b, stack + tuple(b.shape[-2:]))
    return _call("solve", a, b)[0]


def _default_rtol(x: Any) -> float:
    real = np.finfo(_factor_dtype(x.dtype)).eps
    return max(x.shape[-2], x.shape[-1]) * float(real)


def _cutoff(values: Any, rtol: Any, x: Any) -> Any:
    """rtol (a number or an array broadcasting against the stack) times each largest value."""
    if rtol is None:
        rtol = _default_rtol(x)
    largest = _max(values, axis=-1, keepdims=True) if values.shape[-1] else None
    if largest is None:
        return None
    if getattr(rtol, "shape", None) is not None:
        rtol = rtol[..., None]
    return f.multiply(largest, rtol)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    """The number of singular values of each matrix above ``rtol`` times the largest (default
    rtol: max(m, n) times the dtype's epsilon), as int64."""
    values = svdvals(x)
    cutoff = _cutoff(values, rtol, x)
    if cutoff is None:
        return _sum(values.astype(np.int64), axis=-1)  # no values: rank 0
    return _sum(f.greater(values, cutoff).astype(np.int64), axis=-1)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse of each matrix, from its reduced SVD: singular values
    at or below ``rtol`` times the largest count as zero."""
    from ._api_elementwise import conj

    u, s, vh = svd(x, full_matrices=False)
    cutoff = _cutoff(s, rtol, x)
    if cutoff is None:  # no singular values: an empty matrix, whose pseudo-inverse is empty
        return matrix_transpose(x).astype(u.dtype)
    inverse = f.where(f.greater(s, cutoff), f.divide(1.0, s), 0.0).astype(s.dtype)
    v_scaled = f.multiply(conj(matrix_transpose(vh)), inverse[..., None, :])
    return matmul(v_scaled, conj(matrix_transpose(u)))


# ---------------------------------------------------------------------------------------------
# Least squares: NumPy's lstsq, composed from the reduced SVD.


def _lstsq_error(message: str) -> LinAlgError:
    """NumPy's lstsq refuses operand shapes with LinAlgError; so does this one (code
    INVALID_ARGUMENT: the request never reached the daemon)."""
    return LinAlgError(grpc.StatusCode.INVALID_ARGUMENT, f"linalg.lstsq: {message}")


def _lstsq_dtype(a: Any, b: Any) -> np.dtype:
    """NumPy's result dtype: complex when either operand is, single precision (float32,
    complex64) only when both are (integers and bool count as float64, float16 and bfloat16 as
    float32, as in the other factorizations)."""
    factor = []
    for name, x in (("a", a), ("b", b)):
        try:
            factor.append(_factor_dtype(x.dtype))
        except TypeError:
            raise TypeError(f"linalg.lstsq: {name} of dtype {x.dtype} is not a numeric array "
                            "(integer, bool, float or complex)") from None
    complex_ = any(d.kind == "c" for d in factor)
    single = all(d in (np.dtype(np.float32), np.dtype(np.complex64)) for d in factor)
    if complex_:
        return np.dtype(np.complex64 if single else np.complex128)
    return np.dtype(np.float32 if single else np.float64)


def _lstsq_rcond(rcond: Any, dtype: np.dtype, m: int, n: int) -> float:
    """The cut-off ratio LAPACK's gelsd (NumPy's lstsq) applies: None is max(m, n) times the
    dtype's epsilon; a ratio that is not inside (0, 1), -1 (NumPy's old default) among them, is
    LAPACK's relative machine precision, dlamch('E'): half that epsilon."""
    eps = float(np.finfo(dtype).eps)
    if rcond is None:
        value = eps * max(m, n)
    else:
        # A real scalar (a 0-d NumPy array too); not bool, complex, a string or an array.
        real = rcond.ndim == 0 and rcond.dtype.kind in "iuf" if isinstance(rcond, np.ndarray) \
            else isinstance(rcond, numbers.Real) and not isinstance(rcond, (bool, np.bool_))
        if not real:
            raise TypeError(f"linalg.lstsq: rcond is a real number or None, not {rcond!r}")
        value = float(rcond)
        if math.isnan(value):
            raise ValueError("linalg.lstsq: rcond is NaN; give a cut-off ratio or None")
    return value if 0.0 < value < 1.0 else eps / 2


def _adjoint_matmul(m: Any, y: Any) -> Any:
    """m^H @ y; for complex operands conj(m^T @ conj(y)), which conjugates the narrow y and
    the result rather than the matrix m."""
    from ._api_elementwise import conj

    if np.dtype(m.dtype).kind != "c":
        return matmul(matrix_transpose(m), y)
    return conj(matmul(matrix_transpose(m), conj(y)))


def lstsq(a: Any, b: Any, rcond: Any = None) -> Tuple[Any, Any, np.int32, Any]:
    """The least-squares solution of ``a @ x = b``, as ``numpy.linalg.lstsq``: ``(x,
    residuals, rank, s)``.

    ``a`` is (M, N), ``b`` (M,) or (M, K); ``x`` is (N,) or (N, K), the minimum-norm solution
    V diag(1/s) U^H b from the reduced SVD, where singular values at or below ``rcond`` times the
    largest count as zero. ``residuals`` holds the squared 2-norm of each column of b - a x,
    shape (K,) or (1,), and is empty (0,) when ``rank`` < N or M <= N. ``rank`` (a NumPy int32,
    as NumPy's) is downloaded, since the residuals' shape depends on it; ``x``, ``residuals`` and
    ``s`` (the singular values of ``a``, descending) stay on the devices. The dtype is NumPy's:
    float32/complex64 only when both operands are single precision, complex when either is;
    residuals and s are its real counterpart. float32/complex64 are solved in single precision
    (NumPy solves in double and rounds), so their epsilon is float32's.

    ``rcond``: None is max(M, N) times the epsilon; a value outside (0, 1), such as NumPy's old
    default -1, is LAPACK's machine precision, half the epsilon (gelsd, which NumPy calls, uses
    dlamch('E'))."""
    for name, operand in (("a", a), ("b", b)):
        if getattr(operand, "_linalg", None) is None:
            raise TypeError(f"linalg.lstsq takes distarray arrays: {name} is a "
                            f"{type(operand).__name__}")
    if a.ndim != 2:
        raise _lstsq_error(f"a must be a matrix (M, N), not of {a.ndim} axes (shape {a.shape})")
    if b.ndim not in (1, 2):
        raise _lstsq_error(f"b must be (M,) or (M, K), not of {b.ndim} axes (shape {b.shape})")
    m, n = a.shape
    if b.shape[0] != m:
        raise _lstsq_error(f"b has {b.shape[0]} rows, a {m} (b {b.shape}, a {a.shape})")
    dtype = _lstsq_dtype(a, b)
    real = np.finfo(dtype).dtype
    cut = _lstsq_rcond(rcond, dtype, m, n)
    a = a if a.dtype == dtype else a.astype(dtype)
    b = b if b.dtype == dtype else b.astype(dtype)
    vector = b.ndim == 1
    if vector:
        b = reshape(b, (m, 1))
    k = b.shape[1]
    u = c = None
    if min(m, n) == 0:  # no singular values: x is zero, rank 0
        s = new_like(a, zeros_fill(), real, shape=(0,))
        x = new_like(a, zeros_fill(), dtype, shape=(n, k))
        rank = 0
    else:
        u, s, vh = svd(a, full_matrices=False)
        keep = f.greater(s, _cutoff(s, cut, a))
        rank = int(_sum(keep.astype(np.int64)).to_numpy())
        inverse = f.where(keep, f.divide(1.0, s), 0.0).astype(s.dtype)
        c = _adjoint_matmul(u, b)  # U^H b, (min(M, N), K)
        x = _adjoint_matmul(vh, f.multiply(c, inverse[:, None]))
    if rank == n and m > n:
        # Full column rank: a x = U U^H b, so the residual is b less its projection on U.
        r = b if c is None else f.subtract(b, matmul(u, c))
        magnitude = f.abs(r) if np.dtype(dtype).kind == "c" else r
        residuals = _sum(f.multiply(magnitude, magnitude), axis=0)
        if residuals.dtype != real:
            residuals = residuals.astype(real)
    else:
        residuals = new_like(a, zeros_fill(), real, shape=(0,))
    if vector:
        x = reshape(x, (n,))
    if x.dtype != dtype:
        x = x.astype(dtype)
    return x, residuals, np.int32(rank), s


__all__ = ["EighResult", "LinAlgError", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
           "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "lstsq", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]
