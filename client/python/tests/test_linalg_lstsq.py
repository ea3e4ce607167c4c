"""distarray.linalg.lstsq against numpy.linalg.lstsq on fresh random data: tall, wide and square
matrices, full rank and rank-deficient, b a vector or a matrix, over the layouts of _layouts.py
(a and b in different ones); every returned field (x, residuals, rank, s: shapes, dtypes,
values); NumPy's result dtypes for mixed operands; float32/complex64 at their precision; rcond
None, ratios that drop singular values, and the ratios LAPACK replaces by epsilon (-1, 0, 1 and
more); empty operands; and the refusals (shapes as LinAlgError, operand and rcond types) with
the daemon still serving."""

from __future__ import annotations

import math

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, assert_intact, bystander, put

ORDER = sorted(LAYOUTS)
SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))


def tol(dtype) -> float:
    return 1e-4 if np.dtype(dtype) in SINGLE else 1e-11


def rand(rng, shape, dtype) -> np.ndarray:
    """Entries in [-1, 1) (complex: both parts), never zero."""
    x = rng.uniform(-1, 1, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    x[x == 0] = 0.5
    return x.astype(dtype)


def spectral(rng, m, n, values, dtype) -> np.ndarray:
    """An m x n matrix with the singular values ``values`` (min(m, n) of them, exact zeros
    allowed) between random orthonormal factors."""
    k = min(m, n)
    assert len(values) == k
    cplx = np.dtype(dtype).kind == "c"
    u = np.linalg.qr(rand(rng, (m, k), np.complex128 if cplx else np.float64))[0]
    v = np.linalg.qr(rand(rng, (n, k), np.complex128 if cplx else np.float64))[0]
    return ((u * np.asarray(values, np.float64)) @ np.conj(v.T)).astype(dtype)


def wide(dtype) -> np.dtype:
    return np.dtype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)


def run(client, a_np, b_np, la, lb, rcond=None):
    a = put(client, a_np, la)
    b = put(client, b_np, lb)
    result = distarray.linalg.lstsq(a, b) if rcond is None else \
        distarray.linalg.lstsq(a, b, rcond=rcond)
    assert type(result) is tuple and len(result) == 4
    return result


def compare(result, a_np, b_np, rcond=None, rtol=None, msg=""):
    """Every field of ``result`` against numpy.linalg.lstsq of the same operands in double
    precision (rounded to NumPy's result dtype for the dtype checks)."""
    x, residuals, rank, s = result
    for name, field in (("x", x), ("residuals", residuals), ("s", s)):
        assert isinstance(field, distarray.DistributedArray), f"{msg}: {name} {type(field)}"
    # NumPy's own result for the given dtypes: shapes, dtypes and (for double) the values.
    want_x, want_res, want_rank, want_s = np.linalg.lstsq(a_np, b_np, rcond=rcond)
    got_x, got_res, got_s = x.to_numpy(), residuals.to_numpy(), s.to_numpy()
    for name, got, want in (("x", got_x, want_x), ("residuals", got_res, want_res),
                            ("s", got_s, want_s)):
        assert got.shape == want.shape, f"{msg}: {name} shape {got.shape}, NumPy {want.shape}"
        assert got.dtype == want.dtype, f"{msg}: {name} dtype {got.dtype}, NumPy {want.dtype}"
    assert type(rank) is type(want_rank) and rank == want_rank, \
        f"{msg}: rank {rank!r}, NumPy {want_rank!r}"
    # The values against the double-precision solution, at the result dtype's precision.
    dtype = want_x.dtype
    t = tol(dtype) if rtol is None else rtol
    ref_x, ref_res, _, ref_s = np.linalg.lstsq(a_np.astype(wide(a_np.dtype)),
                                               b_np.astype(wide(b_np.dtype)), rcond=rcond)
    scale = max(np.abs(ref_x).max(initial=0), 1.0)
    # x's error grows with the condition number of the singular values kept.
    cond = ref_s[0] / ref_s[want_rank - 1] if want_rank > 0 else 1.0
    np.testing.assert_allclose(got_x, ref_x, rtol=t * cond, atol=t * cond * scale,
                               err_msg=f"{msg}: x")
    np.testing.assert_allclose(got_s, ref_s, rtol=t, atol=t * max(ref_s.max(initial=0), 1.0),
                               err_msg=f"{msg}: s")
    if got_res.size:
        # Squared residual norms: relative to |b|^2 (a nearly consistent system's is tiny). The
        # kept singular vectors of a wide spread of values (cond) are accurate to about
        # eps * cond, and so is the projection the residual leaves (a cond of 1e6 moved it by
        # 8e-11 of |b|^2 in one draw).
        bscale = float(np.sum(np.abs(b_np.astype(wide(b_np.dtype))) ** 2))
        rscale = max(t, 100 * float(np.finfo(dtype).eps) * cond) * bscale
        np.testing.assert_allclose(got_res, ref_res, rtol=t, atol=rscale,
                                   err_msg=f"{msg}: residuals")
        # And they are the returned x's: |b - a x|^2 per column.
        r = b_np.astype(wide(b_np.dtype)) - a_np.astype(wide(a_np.dtype)) @ got_x
        own = np.sum(np.abs(r) ** 2, axis=0)
        np.testing.assert_allclose(got_res, np.atleast_1d(own), rtol=10 * t, atol=rscale,
                                   err_msg=f"{msg}: residuals of x")


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("layout", ORDER)
def test_full_rank_matches_numpy(client, rng, dtype, layout):
    other = ORDER[(ORDER.index(layout) + 1) % len(ORDER)]  # b in another layout
    for m, n in [(9, 5), (5, 9), (6, 6), (12, 1), (1, 4)]:
        a_np = rand(rng, (m, n), dtype)
        for b_shape in [(m,), (m, 3), (m, 1)]:
            b_np = rand(rng, b_shape, dtype)
            for lb in (layout, other):
                result = run(client, a_np, b_np, layout, lb)
                compare(result, a_np, b_np, msg=f"a {a_np.shape} b {b_shape} {layout}/{lb}")
                assert int(result[2]) == min(m, n)
                # Residuals exactly when tall (full column rank): one per column of b.
                want = (b_shape[1] if len(b_shape) == 2 else 1,) if m > n else (0,)
                assert result[1].shape == want


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("layout", ORDER)
def test_rank_deficient_matches_numpy(client, rng, dtype, layout):
    other = ORDER[(ORDER.index(layout) + 2) % len(ORDER)]
    # Exact zeros among the singular values: the computed ones are rounding, far below the
    # default cut-off (max(M, N) epsilon times the largest), as the other values are far above.
    for m, n, values in [(10, 6, [2, 1.5, 0.7, 0, 0, 0]), (6, 10, [2, 1.3, 0.8, 0.6, 0, 0]),
                         (7, 7, [1.9, 1.2, 1, 0.9, 0.5, 0, 0])]:
        a_np = spectral(rng, m, n, values, dtype)
        rank = sum(v > 0 for v in values)
        for b_shape in [(m,), (m, 2)]:
            b_np = rand(rng, b_shape, dtype)
            result = run(client, a_np, b_np, layout, other)
            compare(result, a_np, b_np, msg=f"a {a_np.shape} rank {rank} b {b_shape}")
            assert int(result[2]) == rank
            assert result[1].shape == (0,)  # rank < N: no residuals, as NumPy
            # The minimum-norm solution: x lies in the row space of a (orthogonal to its null
            # space), which a plain solution of the consistent part need not.
            x = result[0].to_numpy()
            _, _, vh = np.linalg.svd(a_np)
            null = vh[rank:]
            assert np.abs(null @ x).max() <= 1e-10 * max(np.abs(x).max(), 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("layout", ["rows2", "uneven"])
def test_single_precision(client, rng, dtype, layout):
    # Singular values in [0.5, 2] (condition 4 at most): the single-precision solution is
    # within a few hundred epsilon of the double one.
    for m, n in [(11, 6), (6, 11), (7, 7)]:
        k = min(m, n)
        a_np = spectral(rng, m, n, np.sort(rng.uniform(0.5, 2, k))[::-1], dtype)
        for b_shape in [(m,), (m, 4)]:
            b_np = rand(rng, b_shape, dtype)
            result = run(client, a_np, b_np, layout, "cols3")
            compare(result, a_np, b_np, msg=f"{np.dtype(dtype)} a {a_np.shape} b {b_shape}")
    # Rank-deficient in single precision: float32's own epsilon decides (the rounding of the
    # zero singular values is about 1e-7, far above float64's cut-off).
    a_np = spectral(rng, 9, 5, [1.5, 1.1, 0.6, 0, 0], dtype)
    b_np = rand(rng, (9,), dtype)
    x, residuals, rank, s = run(client, a_np, b_np, layout, layout)
    assert rank == 3 and residuals.shape == (0,)
    want = np.linalg.lstsq(a_np.astype(wide(dtype)), b_np.astype(wide(dtype)), rcond=1e-5)[0]
    np.testing.assert_allclose(x.to_numpy(), want, rtol=tol(dtype), atol=tol(dtype))
    assert x.dtype == dtype and s.dtype == np.finfo(dtype).dtype


def test_result_dtypes_follow_numpy(client, rng):
    # NumPy: complex when either operand is, single precision only when both are float32 or
    # complex64; integers and bool count as double.
    pairs = [(np.float32, np.float64), (np.float32, np.int32), (np.float32, np.int8),
             (np.float32, np.bool_), (np.int64, np.int64), (np.int32, np.float32),
             (np.complex64, np.float32), (np.float32, np.complex64), (np.complex64, np.float64),
             (np.float64, np.complex64), (np.int16, np.complex128), (np.uint8, np.float64)]
    for da, db in pairs:
        a_np = spectral(rng, 8, 4, [2, 1.5, 1, 0.7], np.float64)
        if np.dtype(da).kind in "iu":
            a_np = rng.integers(-9, 10, (8, 4)) + 20 * np.eye(8, 4)
        a_np = a_np.astype(da)
        if np.dtype(db).kind in "fc":
            b_np = rand(rng, (8, 2), db)
        elif db is np.bool_:
            b_np = np.arange(16).reshape(8, 2) % 3 != rng.integers(0, 3)  # both values
        else:
            b_np = rng.integers(1, 3, (8, 2)).astype(db)
        result = run(client, a_np, b_np, "rows2", "replicated")
        single = np.linalg.lstsq(a_np, b_np)[0].dtype in SINGLE
        compare(result, a_np, b_np, rtol=1e-4 if single else 1e-10,
                msg=f"{np.dtype(da)} with {np.dtype(db)}")


@pytest.mark.parametrize("layout", ["rows2", "cols3"])
def test_rcond(client, rng, layout):
    values = [1.0, 0.5, 1e-2, 1e-4, 1e-6]
    a_np = spectral(rng, 8, 5, values, np.float64)
    b_np = rand(rng, (8, 3), np.float64)
    # Cut-offs between the values (never on one): singular values at or below rcond * s[0]
    # count as zero.
    for rcond, rank in [(0.7, 1), (0.3, 2), (0.05, 2), (1e-3, 3), (1e-5, 4), (1e-7, 5),
                        (np.float32(1e-3), 3), (np.array(1e-5), 4), (3e-3, 3)]:
        result = run(client, a_np, b_np, layout, "uneven", rcond=rcond)
        compare(result, a_np, b_np, rcond=rcond, msg=f"rcond {rcond!r}")
        assert result[2] == rank, rcond
        assert result[1].shape == ((3,) if rank == 5 else (0,))
    # Outside (0, 1) LAPACK (and so NumPy) uses epsilon: everything above it is kept, where a
    # literal cut-off of 1 or more would drop every value and a negative one keep even zeros.
    for rcond in (-1, -0.5, 0, 0.0, 1, 1.0, 2.5, math.inf, -math.inf, 7):
        result = run(client, a_np, b_np, layout, layout, rcond=rcond)
        compare(result, a_np, b_np, rcond=rcond, rtol=1e-9, msg=f"rcond {rcond!r}")
        assert result[2] == 5, rcond
    # A zero column: its singular value is (about) zero, at or below epsilon: dropped by
    # rcond=-1 (epsilon) rather than inverted.
    z_np = rand(rng, (7, 4), np.float64)
    z_np[:, 2] = 0
    y_np = rand(rng, (7,), np.float64)
    for rcond in (-1, 0, None, 5):
        result = run(client, z_np, y_np, layout, "rows2", rcond=rcond)
        compare(result, z_np, y_np, rcond=rcond, msg=f"zero column, rcond {rcond!r}")
        x = result[0].to_numpy()
        assert result[2] == 3 and np.isfinite(x).all() and x[2] == 0


def test_default_rcond_scales_with_the_larger_axis(client, rng):
    # A singular value of 1e-15 relative: above epsilon (kept by rcond=-1), below 100 epsilon
    # (dropped by the default for a 120 x 3 matrix, max(M, N) = 120).
    a_np = spectral(rng, 120, 3, [1.0, 0.5, 3e-15], np.float64)
    b_np = rand(rng, (120,), np.float64)
    a = put(client, a_np, "rows2")
    b = put(client, b_np, "uneven")
    assert distarray.linalg.lstsq(a, b)[2] == np.linalg.lstsq(a_np, b_np)[2] == 2
    assert distarray.linalg.lstsq(a, b, rcond=-1)[2] == \
        np.linalg.lstsq(a_np, b_np, rcond=-1)[2] == 3


def test_empty_operands(client, rng):
    cases = [((3, 0), (3,)), ((3, 0), (3, 2)), ((0, 2), (0,)), ((0, 2), (0, 3)),
             ((4, 3), (4, 0)), ((3, 5), (3, 0))]
    for a_shape, b_shape in cases:
        a_np = rand(rng, a_shape, np.float64)
        b_np = rand(rng, b_shape, np.float64)
        a = client.from_numpy(a_np)
        b = client.from_numpy(b_np)
        compare(distarray.linalg.lstsq(a, b), a_np, b_np, msg=f"a {a_shape} b {b_shape}")
    # An (M, 0) a: rank 0 equals N, so the residuals are |b|^2 per column (as NumPy).
    b_np = rand(rng, (3, 2), np.complex128)
    _, residuals, rank, _ = distarray.linalg.lstsq(
        client.from_numpy(np.zeros((3, 0), np.complex128)), client.from_numpy(b_np))
    assert rank == 0
    np.testing.assert_allclose(residuals.to_numpy(), np.sum(np.abs(b_np) ** 2, axis=0),
                               rtol=1e-13)
    assert residuals.dtype == np.float64


def test_refusals(client, rng):
    keep, keep_np = bystander(client, rng)
    a = client.from_numpy(rand(rng, (5, 3), np.float64))
    b = client.from_numpy(rand(rng, (5,), np.float64))
    lstsq = distarray.linalg.lstsq
    # Shapes: LinAlgError as NumPy's (a numpy.linalg.LinAlgError and a ValueError), naming the
    # argument.
    shapes = [
        (client.from_numpy(rand(rng, (5,), np.float64)), b, r"a must be a matrix .* 1 axes"),
        (client.from_numpy(rand(rng, (2, 5, 3), np.float64)), b, r"a must be a matrix .* 3 axes"),
        (a, client.from_numpy(rand(rng, (5, 2, 2), np.float64)), r"b must be .* 3 axes"),
        (a, client.from_numpy(np.asarray(rand(rng, (1,), np.float64)[0])), r"b must be .* 0 axes"),
        (a, client.from_numpy(rand(rng, (4,), np.float64)), r"b has 4 rows, a 5"),
        (a, client.from_numpy(rand(rng, (6, 2), np.float64)), r"b has 6 rows, a 5"),
    ]
    for x, y, message in shapes:
        for kind in (distarray.linalg.LinAlgError, np.linalg.LinAlgError, ValueError):
            with pytest.raises(kind, match=message):
                lstsq(x, y)
        # NumPy refuses the same operands with its LinAlgError.
        with pytest.raises(np.linalg.LinAlgError):
            np.linalg.lstsq(x.to_numpy(), y.to_numpy())
    # Operands that are not distarray arrays: TypeError naming the argument.
    with pytest.raises(TypeError, match="a is a ndarray"):
        lstsq(a.to_numpy(), b)
    with pytest.raises(TypeError, match="b is a list"):
        lstsq(a, [1.0, 2.0, 3.0, 4.0, 5.0])

    class Text:  # a stand-in with a non-numeric dtype (no distarray dtype is one)
        _linalg = True
        ndim, shape, dtype = 2, (5, 3), np.dtype("U4")

    with pytest.raises(TypeError, match="a of dtype <U4 is not a numeric"):
        lstsq(Text(), b)
    # rcond: a real scalar or None.
    for bad in ("1e-3", 1e-3j, np.complex128(0.1), True, np.array([1e-3, 1e-3]), [1e-3], b):
        with pytest.raises(TypeError, match="rcond is a real number"):
            lstsq(a, b, rcond=bad)
    with pytest.raises(ValueError, match="rcond is NaN"):
        lstsq(a, b, rcond=math.nan)
    assert_intact(keep, keep_np)
    # The daemon serves on: the same operands solve.
    x = lstsq(a, b)[0].to_numpy()
    np.testing.assert_allclose(x, np.linalg.lstsq(a.to_numpy(), b.to_numpy())[0], rtol=1e-10)
