"""distarray.linalg's factorizations and solvers (the daemon's Linalg op) against numpy.linalg on
fresh random data, well- and ill-conditioned, over several layouts: cholesky, det, eigh,
eigvalsh, inv, matrix_rank, pinv, qr, slogdet, solve, svd, svdvals, the singular-value matrix
norms and negative matrix powers; results are one chunk on one device; singular and non-positive-
definite matrices, and NaN or infinity into svd or eigh, raise LinAlgError with the daemon still
serving; the array API's result namedtuples."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, put

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def tol(dtype) -> float:
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11


def rand(rng, shape, dtype, ill: bool = False) -> np.ndarray:
    """Entries in [-1, 1) (never zero; complex: both parts); ill: rows scaled down to 1e-5."""
    x = rng.uniform(-1, 1, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    x[x == 0] = 0.5
    if ill:
        x = x * np.logspace(0, -5, shape[-2])[:, None]
    return x.astype(dtype)


def square(rng, shape, dtype, ill: bool = False) -> np.ndarray:
    x = rand(rng, shape, dtype, ill)
    if not ill:
        x = x + shape[-1] * np.eye(shape[-1], dtype=dtype)
    return x


def hermitian(rng, shape, dtype, positive: bool = True) -> np.ndarray:
    r = rand(rng, shape, np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    h = (r + np.conj(np.swapaxes(r, -1, -2))) / 2
    if positive:
        h = h + shape[-1] * np.eye(shape[-1])
    return h.astype(dtype)


def one_chunk(array) -> None:
    assert len(array._info.index_map.chunks) == 1, array.index_map


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("ill", [False, True])
def test_solve_and_inv(client, rng, dtype, layout, ill):
    for shape, b_shape in [((7, 7), (7,)), ((7, 7), (7, 3)), ((3, 5, 5), (3, 5, 2)),
                           ((2, 4, 4), (4,)), ((2, 4, 4), (1, 4, 3))]:
        a_np = square(rng, shape, dtype, ill)
        b_np = rand(rng, b_shape, dtype)
        a = put(client, a_np, layout)
        b = put(client, b_np, layout)
        x = distarray.linalg.solve(a, b)
        want = np.linalg.solve(a_np.astype(np.complex128 if np.dtype(dtype).kind == "c"
                                           else np.float64), b_np)
        got = x.to_numpy()
        assert got.dtype == dtype and got.shape == want.shape, (shape, b_shape)
        # The residual, relative to the operands' scale (conditioning does not enter).
        residual = np.abs(a_np @ got - np.broadcast_to(b_np, want.shape) if b_np.ndim > 1
                          else np.einsum("...ij,...j->...i", a_np, got) - b_np).max()
        scale = np.abs(a_np).sum(-1).max() * np.abs(got).max() + np.abs(b_np).max()
        assert residual <= 10 * shape[-1] * tol(dtype) * scale, (shape, residual)
        if not ill:
            np.testing.assert_allclose(got, want, rtol=50 * tol(dtype), atol=50 * tol(dtype))
        ai = distarray.linalg.inv(a)
        one_chunk(ai)
        inverse = ai.to_numpy()
        assert inverse.dtype == dtype
        eye = np.broadcast_to(np.eye(shape[-1]), shape)
        assert np.abs(a_np @ inverse - eye).max() <= \
            10 * shape[-1] * tol(dtype) * np.abs(a_np).sum(-1).max() * np.abs(inverse).max()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["rows2", "cols3", "uneven"])
def test_cholesky(client, rng, dtype, layout):
    for shape in [(6, 6), (3, 4, 4)]:
        a_np = hermitian(rng, shape, dtype)
        a = put(client, a_np, layout)
        for upper in (False, True):
            got = distarray.linalg.cholesky(a, upper=upper).to_numpy()
            want = np.linalg.cholesky(a_np.astype(np.complex128 if np.dtype(dtype).kind == "c"
                                                  else np.float64), upper=upper)
            assert got.dtype == dtype
            np.testing.assert_allclose(got, want, rtol=20 * tol(dtype), atol=20 * tol(dtype))
            triangle = np.triu(got, 1) if not upper else np.tril(got, -1)
            assert not triangle.any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_qr(client, rng, dtype, layout):
    for shape in [(7, 4), (4, 7), (2, 5, 5)]:
        a_np = rand(rng, shape, dtype)
        a = put(client, a_np, layout)
        for mode in ("reduced", "complete"):
            result = distarray.linalg.qr(a, mode=mode)
            assert isinstance(result, distarray.linalg.QRResult)
            q, r = result.Q.to_numpy(), result.R.to_numpy()
            wq, wr = np.linalg.qr(a_np, mode=mode)
            assert q.shape == wq.shape and r.shape == wr.shape, (shape, mode)
            assert q.dtype == dtype and r.dtype == dtype
            n = max(shape[-2:])
            np.testing.assert_allclose(q @ r, a_np, atol=10 * n * tol(dtype))
            qh = np.conj(np.swapaxes(q, -1, -2))
            np.testing.assert_allclose(qh @ q, np.broadcast_to(np.eye(q.shape[-1]),
                                                               qh.shape[:-1] + (q.shape[-1],)),
                                       atol=10 * n * tol(dtype))
            assert not np.tril(r, -1).any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["rows2", "cols3", "replicated"])
def test_eigh_and_eigvalsh(client, rng, dtype, layout):
    for shape in [(8, 8), (3, 5, 5)]:
        a_np = hermitian(rng, shape, dtype, positive=False)
        a = put(client, a_np, layout)
        result = distarray.linalg.eigh(a)
        assert isinstance(result, distarray.linalg.EighResult)
        w, v = result.eigenvalues.to_numpy(), result.eigenvectors.to_numpy()
        want = np.linalg.eigvalsh(a_np.astype(np.complex128 if np.dtype(dtype).kind == "c"
                                              else np.float64))
        assert w.dtype == np.finfo(dtype).dtype and v.dtype == dtype
        np.testing.assert_allclose(w, want, atol=20 * shape[-1] * tol(dtype))
        np.testing.assert_allclose(a_np @ v, v * w[..., None, :], atol=20 * shape[-1] * tol(dtype))
        np.testing.assert_allclose(distarray.linalg.eigvalsh(a).to_numpy(), want,
                                   atol=20 * shape[-1] * tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("ill", [False, True])
def test_svd_and_svdvals(client, rng, dtype, layout, ill):
    for shape in [(7, 4), (4, 7), (2, 5, 5)]:
        a_np = rand(rng, shape, dtype, ill)
        a = put(client, a_np, layout)
        want = np.linalg.svd(a_np.astype(np.complex128 if np.dtype(dtype).kind == "c"
                                         else np.float64), compute_uv=False)
        n = max(shape[-2:])
        for full in (True, False):
            result = distarray.linalg.svd(a, full_matrices=full)
            assert isinstance(result, distarray.linalg.SVDResult)
            u, s, vh = (r.to_numpy() for r in result)
            wu, _, wvh = np.linalg.svd(a_np, full_matrices=full)
            assert u.shape == wu.shape and vh.shape == wvh.shape and s.shape == want.shape
            k = s.shape[-1]
            np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a_np,
                                       atol=10 * n * tol(dtype))
            np.testing.assert_allclose(s, want, atol=10 * n * tol(dtype))
        one_chunk(result.U)
        np.testing.assert_allclose(distarray.linalg.svdvals(a).to_numpy(), want,
                                   atol=10 * n * tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["rows2", "cols3", "uneven"])
def test_det_and_slogdet(client, rng, dtype, layout):
    for shape in [(6, 6), (4, 3, 3), (1, 1)]:
        a_np = rand(rng, shape, dtype) + 1.5 * np.eye(shape[-1], dtype=dtype)
        a = put(client, a_np, layout)
        wide = a_np.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
        got = distarray.linalg.det(a).to_numpy()
        assert got.dtype == dtype and got.shape == shape[:-2]
        np.testing.assert_allclose(got, np.linalg.det(wide), rtol=20 * shape[-1] * tol(dtype))
        result = distarray.linalg.slogdet(a)
        assert isinstance(result, distarray.linalg.SlogdetResult)
        sign, logabs = np.linalg.slogdet(wide)
        np.testing.assert_allclose(result.sign.to_numpy(), sign, atol=20 * tol(dtype))
        np.testing.assert_allclose(result.logabsdet.to_numpy(), logabs,
                                   atol=20 * shape[-1] * tol(dtype))


@pytest.mark.parametrize("layout", ["rows2", "cols3"])
def test_matrix_rank_pinv_norms_and_powers(client, rng, layout):
    # A rank-3 6 x 5 matrix: the product of 6 x 3 and 3 x 5 factors.
    low = rand(rng, (6, 3), np.float64) @ rand(rng, (3, 5), np.float64)
    x = put(client, low, layout)
    assert int(distarray.linalg.matrix_rank(x).to_numpy()) == np.linalg.matrix_rank(low) == 3
    full = square(rng, (5, 5), np.float64)
    assert int(distarray.linalg.matrix_rank(put(client, full, layout)).to_numpy()) == 5
    np.testing.assert_allclose(distarray.linalg.pinv(x).to_numpy(), np.linalg.pinv(low),
                               atol=1e-10)
    z = rand(rng, (2, 4, 3), np.complex128)
    np.testing.assert_allclose(distarray.linalg.pinv(client.from_numpy(z)).to_numpy(),
                               np.linalg.pinv(z), atol=1e-10)
    for ord_ in ("nuc", 2, -2):
        np.testing.assert_allclose(distarray.linalg.matrix_norm(x, ord=ord_).to_numpy(),
                                   np.linalg.matrix_norm(low, ord=ord_), rtol=1e-10, atol=1e-12)
    f = put(client, full, layout)
    np.testing.assert_allclose(distarray.linalg.matrix_power(f, -2).to_numpy(),
                               np.linalg.matrix_power(full, -2), rtol=1e-9, atol=1e-12)


def test_integer_inputs_compute_in_float64(client, rng):
    ints = rng.integers(-5, 6, (4, 4)).astype(np.int32) + 10 * np.eye(4, dtype=np.int32)
    got = distarray.linalg.inv(client.from_numpy(ints)).to_numpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.linalg.inv(ints), rtol=1e-12)


def test_results_sit_on_the_device_holding_most(client, rng):
    a_np = square(rng, (6, 6), np.float64)
    # Device 2 holds one row, device 0 the other five.
    a = client.from_numpy(a_np, LAYOUTS["uneven"](a_np.shape))
    inverse = distarray.linalg.inv(a)
    one_chunk(inverse)
    assert inverse.devices == (0,)


def test_errors_raise_linalgerror_and_the_daemon_serves_on(client, rng):
    keep_np = rand(rng, (5, 5), np.float64)
    keep = put(client, keep_np, "rows2")
    # Exactly singular: a zero column keeps LU's pivot in it exactly zero (equal rows may leave
    # a rounding residue, and then NumPy does not raise either).
    singular = rand(rng, (5, 5), np.float64)
    singular[:, 2] = 0
    s = put(client, singular, "rows2")
    b = client.from_numpy(rand(rng, (5,), np.float64))
    for call in (lambda: distarray.linalg.inv(s), lambda: distarray.linalg.solve(s, b)):
        with pytest.raises(distarray.linalg.LinAlgError, match="singular"):
            call()
        with pytest.raises(np.linalg.LinAlgError):
            call()
    indefinite = hermitian(rng, (4, 4), np.float64, positive=False)
    indefinite[0, 0] = -5
    with pytest.raises(distarray.linalg.LinAlgError, match="positive definite"):
        distarray.linalg.cholesky(client.from_numpy(indefinite))
    wide = client.from_numpy(rand(rng, (3, 4), np.float64))
    for fn in (distarray.linalg.inv, distarray.linalg.det, distarray.linalg.cholesky,
               distarray.linalg.eigh):
        with pytest.raises(ValueError, match="square"):
            fn(wide)
    with pytest.raises(ValueError):
        distarray.linalg.solve(s, client.from_numpy(rand(rng, (4,), np.float64)))
    with pytest.raises(ValueError):
        distarray.linalg.qr(wide, mode="r")
    np.testing.assert_array_equal(keep.to_numpy(), keep_np)
    assert distarray.linalg.det(s).to_numpy() == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_non_finite_input_to_svd_and_eigh_raises_linalgerror(client, rng, dtype, bad):
    """LAPACK's iterative solvers need not return on a NaN or an infinity (a host SVD of a matrix
    holding -inf spun without end); the daemon refuses them first, naming the matrix."""
    keep_np = rand(rng, (4, 4), np.float64)
    keep = put(client, keep_np, "rows2")
    a_np = hermitian(rng, (6, 6), dtype)
    a_np[4, 1] = bad
    a = put(client, a_np, "rows2")
    calls = {
        "svd": lambda: distarray.linalg.svd(a),
        "svd reduced": lambda: distarray.linalg.svd(a, full_matrices=False),
        "svdvals": lambda: distarray.linalg.svdvals(a),
        "eigh": lambda: distarray.linalg.eigh(a),
        "eigvalsh": lambda: distarray.linalg.eigvalsh(a),
        "matrix_rank": lambda: distarray.linalg.matrix_rank(a),
        "pinv": lambda: distarray.linalg.pinv(a),
    }
    for name, call in calls.items():
        with pytest.raises(distarray.linalg.LinAlgError, match="NaN or an infinity") as info:
            call()
        assert "spec.a" in str(info.value), name
        assert isinstance(info.value, np.linalg.LinAlgError), name
    stack_np = rand(rng, (3, 5, 4), dtype)
    stack_np[1, 2, 3] = bad
    with pytest.raises(distarray.linalg.LinAlgError, match="matrix 1 of the stack"):
        distarray.linalg.svdvals(client.from_numpy(stack_np))
    # The daemon serves on; the bystander is intact; a finite matrix still factorizes.
    np.testing.assert_array_equal(keep.to_numpy(), keep_np)
    fine = rand(rng, (6, 6), dtype)
    np.testing.assert_allclose(distarray.linalg.svdvals(client.from_numpy(fine)).to_numpy(),
                               np.linalg.svd(fine, compute_uv=False), rtol=tol(dtype) * 10)
