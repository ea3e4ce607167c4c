"""NumPy's functions on DistributedArrays through ``__array_function__``: each function the SDK
serves, called as ``numpy.<name>(x)`` on arrays split over devices, against NumPy on the same
fresh random values (shape, dtype and values); NumPy's arguments distarray does not serve raise
TypeError naming them, NumPy arrays among the operands are refused with the upload hint, and
the functions it does not serve still raise the transfer policy's TypeError."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import assert_intact, bystander, put
from conftest import random_array

LAYOUT_NAMES = ["rows2", "cols3", "uneven"]


def close(result, expected, msg: str = "", rtol: float = 1e-10, atol: float = 1e-12) -> None:
    """``result`` (a DistributedArray) has NumPy's shape and dtype and values within rtol."""
    assert isinstance(result, distarray.DistributedArray), f"{msg}: {type(result).__name__}"
    got = result.to_numpy()
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"{msg}: shape {got.shape}, NumPy gives {expected.shape}"
    assert got.dtype == expected.dtype, f"{msg}: dtype {got.dtype}, NumPy gives {expected.dtype}"
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=msg)


def same(result, expected, msg: str = "") -> None:
    close(result, expected, msg, rtol=0, atol=0)


def values(rng, shape, dtype=np.float64):
    """Uniform in [-4, 4), never zero."""
    x = rng.uniform(-4, 4, shape)
    x[x == 0] = 0.5
    return x.astype(dtype)


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_std_var(client, rng, layout):
    for dtype in (np.float64, np.float32, np.int32):
        a_np = random_array(rng, (6, 5), dtype)
        a = put(client, a_np, layout)
        rtol = 1e-5 if dtype == np.float32 else 1e-10
        for f in (np.std, np.var):
            name = f"{f.__name__} {np.dtype(dtype)}"
            close(f(a), f(a_np), name, rtol)
            close(f(a, axis=0), f(a_np, axis=0), f"{name} axis 0", rtol)
            close(f(a, axis=(0, 1), keepdims=True), f(a_np, axis=(0, 1), keepdims=True),
                  f"{name} keepdims", rtol)
            close(f(a, 1, ddof=1), f(a_np, 1, ddof=1), f"{name} ddof", rtol)
            close(f(a, axis=-1, correction=2), f(a_np, axis=-1, correction=2), name, rtol)
            close(f(a, dtype=np.float32), f(a_np, dtype=np.float32), f"{name} dtype", 1e-5)
    z_np = values(rng, (4, 6)) + 1j * values(rng, (4, 6))
    z = put(client, z_np, layout)
    close(np.var(z, axis=1), np.var(z_np, axis=1), "var complex")
    close(np.std(z), np.std(z_np), "std complex")


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_cumulative(client, rng, layout):
    a_np = values(rng, (5, 7))
    a = put(client, a_np, layout)
    close(np.cumsum(a), np.cumsum(a_np), "cumsum flattened")
    close(np.cumsum(a, axis=1), np.cumsum(a_np, axis=1), "cumsum axis 1")
    close(np.cumprod(a, 0), np.cumprod(a_np, 0), "cumprod axis 0")
    i_np = random_array(rng, (5, 7), np.int16) // 256
    i = put(client, i_np, layout)
    same(np.cumsum(i, axis=0), np.cumsum(i_np, axis=0), "cumsum int16 (int64)")
    same(np.cumsum(i, axis=1, dtype=np.int32), np.cumsum(i_np, axis=1, dtype=np.int32))
    same(np.cumprod(i > 0, axis=1), np.cumprod(i_np > 0, axis=1), "cumprod bool")
    close(np.cumulative_sum(a, axis=0, include_initial=True),
          np.cumulative_sum(a_np, axis=0, include_initial=True), "cumulative_sum")
    close(np.cumulative_prod(a, axis=1), np.cumulative_prod(a_np, axis=1), "cumulative_prod")


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_diff(client, rng, layout):
    a_np = values(rng, (6, 5))
    a = put(client, a_np, layout)
    close(np.diff(a), np.diff(a_np), "diff")
    close(np.diff(a, n=2, axis=0), np.diff(a_np, n=2, axis=0), "diff n=2 axis 0")
    close(np.diff(a, axis=0, prepend=1.5), np.diff(a_np, axis=0, prepend=1.5), "prepend")
    edge_np = values(rng, (6, 2))
    close(np.diff(a, append=put(client, edge_np, "rows2")), np.diff(a_np, append=edge_np),
          "append an array")
    i_np = random_array(rng, (6, 5), np.int32)
    same(np.diff(put(client, i_np, layout), prepend=7), np.diff(i_np, prepend=7), "int prepend")
    b_np = i_np > 0
    same(np.diff(put(client, b_np, layout), axis=0), np.diff(b_np, axis=0), "bool: not_equal")
    assert np.diff(a, n=0) is a


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_roll_tile_repeat(client, rng, layout):
    a_np = values(rng, (5, 4))
    a = put(client, a_np, layout)
    for shift, axis in [(2, None), (-3, 0), (7, 1), ((1, 2), (0, 1)), ((1, 2), 1),
                        ([3, -1], [0, 0])]:
        same(np.roll(a, shift, axis), np.roll(a_np, shift, axis), f"roll {shift} {axis}")
    for reps in [2, (2, 1), (1, 3), (2, 1, 2), (0, 2)]:
        same(np.tile(a, reps), np.tile(a_np, reps), f"tile {reps}")
    same(np.repeat(a, 2), np.repeat(a_np, 2), "repeat flattened")
    same(np.repeat(a, 3, axis=1), np.repeat(a_np, 3, axis=1), "repeat axis 1")
    counts = [2, 0, 1, 3, 1]
    same(np.repeat(a, counts, axis=0), np.repeat(a_np, counts, axis=0), "repeat counts")


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_take(client, rng, layout):
    a_np = values(rng, (6, 5))
    a = put(client, a_np, layout)
    flat_idx = rng.integers(-30, 30, (3, 4))
    same(np.take(a, flat_idx), np.take(a_np, flat_idx), "take flattened, 2-D indices")
    idx = rng.integers(-5, 5, 7)
    same(np.take(a, idx, axis=1), np.take(a_np, idx, axis=1), "take axis 1")
    same(np.take(a, list(idx[:3]), axis=0), np.take(a_np, list(idx[:3]), axis=0), "a list")
    same(np.take(a, 4, axis=0), np.take(a_np, 4, axis=0), "a scalar index")
    held_np = rng.integers(0, 6, (2, 3))
    held = client.from_numpy(held_np, distarray.split_index_map((2, 3), 0, [3, 2]))
    same(np.take(a, held, axis=0), np.take(a_np, held_np, axis=0), "held 2-D indices")
    same(np.take(a, [], axis=1), np.take(a_np, np.array([], np.int64), axis=1), "no indices")
    with pytest.raises(IndexError):
        np.take(a, [6], axis=0)
    order_np = np.argsort(a_np, axis=1)
    order = put(client, order_np, layout)
    same(np.take_along_axis(a, order, axis=1), np.take_along_axis(a_np, order_np, axis=1))
    flat_order_np = np.argsort(a_np, axis=None)
    same(np.take_along_axis(a, put(client, flat_order_np, "rows2"), axis=None),
         np.take_along_axis(a_np, flat_order_np, axis=None), "take_along_axis flattened")


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_nonzero_where_argwhere(client, rng, layout):
    a_np = rng.integers(-2, 3, (6, 5)).astype(np.float64)
    a = put(client, a_np, layout)
    for got, expected in zip(np.nonzero(a), np.nonzero(a_np)):
        same(got, expected, "nonzero")
    got = np.where(a > 0)
    assert isinstance(got, tuple) and len(got) == 2
    for g, e in zip(got, np.where(a_np > 0)):
        same(g, e, "where(condition)")
    same(np.flatnonzero(a), np.flatnonzero(a_np), "flatnonzero")
    same(np.argwhere(a), np.argwhere(a_np), "argwhere")
    same(np.argwhere(a[0, 0] != 99), np.argwhere(a_np[0, 0] != 99), "argwhere 0-d")
    same(np.count_nonzero(a), np.asarray(np.count_nonzero(a_np)), "count_nonzero")
    same(np.count_nonzero(a, axis=0), np.count_nonzero(a_np, axis=0), "count_nonzero axis")
    same(np.count_nonzero(a, axis=1, keepdims=True),
         np.count_nonzero(a_np, axis=1, keepdims=True), "count_nonzero keepdims")
    with pytest.raises(ValueError, match="both or neither"):
        np.where(a > 0, a, None)


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_unique(client, rng, layout):
    a_np = rng.integers(-3, 4, (6, 5)).astype(np.float64)
    a_np[rng.random((6, 5)) < 0.2] = np.nan  # several NaNs: one value for numpy.unique
    a_np[0, 0] = np.nan
    a_np[5, 4] = np.nan
    a = put(client, a_np, layout)
    same(np.unique(a), np.unique(a_np), "unique")
    for flags in [dict(return_index=True), dict(return_inverse=True), dict(return_counts=True),
                  dict(return_index=True, return_inverse=True, return_counts=True),
                  dict(return_inverse=True, return_counts=True)]:
        got, expected = np.unique(a, **flags), np.unique(a_np, **flags)
        assert len(got) == len(expected), flags
        for g, e in zip(got, expected):
            same(g, e, f"unique {flags}")
    kept = np.unique(a, return_counts=True, equal_nan=False)
    nans = int(np.isnan(a_np).sum())
    assert int(np.isnan(kept[0].to_numpy()).sum()) == nans  # each NaN its own value
    i_np = rng.integers(-3, 4, (6, 5)).astype(np.int32)
    i = put(client, i_np, layout)
    for g, e in zip(np.unique(i, return_index=True, return_counts=True),
                    np.unique(i_np, return_index=True, return_counts=True)):
        same(g, e, "unique int32")
    # The array API's unique_* (NumPy's keep each NaN apart; their order is not sorted there).
    values_ = np.unique_values(i).to_numpy()
    np.testing.assert_array_equal(values_, np.sort(np.unique_values(i_np)))
    counts = np.unique_counts(i)
    expected = dict(zip(*np.unique_counts(i_np)))
    assert dict(zip(counts.values.to_numpy(), counts.counts.to_numpy())) == expected
    inverse = np.unique_inverse(i)
    np.testing.assert_array_equal(inverse.values.to_numpy()[inverse.inverse_indices.to_numpy()],
                                  i_np)
    every = np.unique_all(i)
    np.testing.assert_array_equal(i_np.reshape(-1)[every.indices.to_numpy()],
                                  every.values.to_numpy())


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_broadcast_triangles_meshgrid(client, rng, layout):
    a_np = values(rng, (4, 1, 3))
    a = put(client, a_np, layout)
    same(np.broadcast_to(a, (2, 4, 5, 3)), np.broadcast_to(a_np, (2, 4, 5, 3)), "broadcast_to")
    b_np = values(rng, (5, 1))
    got = np.broadcast_arrays(a, put(client, b_np, "rows2"))
    assert isinstance(got, tuple)
    for g, e in zip(got, np.broadcast_arrays(a_np, b_np)):
        same(g, e, "broadcast_arrays")
    m_np = values(rng, (3, 5, 6))
    m = put(client, m_np, layout)
    for k in (-2, 0, 3):
        same(np.tril(m, k), np.tril(m_np, k), f"tril {k}")
        same(np.triu(m, k=k), np.triu(m_np, k=k), f"triu {k}")
    x_np, y_np, z_np = values(rng, 4), values(rng, 3), values(rng, (2, 1))
    x, y, z = put(client, x_np, "rows2"), put(client, y_np, "uneven"), put(client, z_np, layout)
    for options in [{}, dict(indexing="ij"), dict(sparse=True), dict(sparse=True, indexing="ij")]:
        got = np.meshgrid(x, y, z, **options)
        assert isinstance(got, tuple)
        for g, e in zip(got, np.meshgrid(x_np, y_np, z_np, **options)):
            same(g, e, f"meshgrid {options}")
    with pytest.raises(ValueError, match="indexing"):
        np.meshgrid(x, y, indexing="yx")


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_products(client, rng, layout):
    a_np, b_np = values(rng, (4, 5)), values(rng, (5, 3))
    a, b = put(client, a_np, layout), put(client, b_np, "cols3")
    v_np, w_np = values(rng, 5), values(rng, 5)
    v, w = put(client, v_np, "rows2"), put(client, w_np, "uneven")
    close(np.outer(v, w), np.outer(v_np, w_np), "outer")
    close(np.outer(a, v), np.outer(a_np, v_np), "outer flattens")
    close(np.dot(a, b), np.dot(a_np, b_np), "dot matrices")
    close(np.dot(v, w), np.dot(v_np, w_np), "dot vectors")
    close(np.dot(a, v), np.dot(a_np, v_np), "dot matrix vector")
    c_np = values(rng, (2, 3, 5))
    d_np = values(rng, (4, 5, 2))
    c, d = put(client, c_np, layout), put(client, d_np, "rows2")
    close(np.dot(c, d), np.dot(c_np, d_np), "dot N-D")
    close(np.dot(c, v), np.dot(c_np, v_np), "dot N-D vector")
    close(np.dot(a, 2.5), np.dot(a_np, 2.5), "dot scalar")
    i_np = rng.integers(-9, 9, (3, 4))
    j_np = rng.integers(-9, 9, (4, 2))
    same(np.dot(put(client, i_np, layout), put(client, j_np, "rows2")), np.dot(i_np, j_np),
         "dot int64")
    close(np.tensordot(c, d, axes=([2, 0], [1, 2])), np.tensordot(c_np, d_np, ([2, 0], [1, 2])))
    close(np.tensordot(c, d, axes=(2, 1)), np.tensordot(c_np, d_np, axes=(2, 1)), "axes ints")
    close(np.tensordot(a, b, 1), np.tensordot(a_np, b_np, 1), "tensordot 1")
    close(np.linalg.vecdot(c, v), np.linalg.vecdot(c_np, v_np), "linalg.vecdot")
    e_np = values(rng, (3, 4, 5)) + 1j * values(rng, (3, 4, 5))
    e = put(client, e_np, layout)
    close(np.linalg.vecdot(e, e, axis=1), np.linalg.vecdot(e_np, e_np, axis=1), "vecdot cplx")
    close(np.trace(a), np.asarray(np.trace(a_np)), "trace")
    close(np.trace(c, 1, 2, 0), np.trace(c_np, 1, 2, 0), "trace offset axes")
    same(np.trace(put(client, i_np.astype(np.int32), layout), -1),
         np.asarray(np.trace(i_np.astype(np.int32), -1)), "trace int32")
    close(np.trace(a, dtype=np.float32), np.asarray(np.trace(a_np, dtype=np.float32)), "", 1e-5)
    same(np.diagonal(c), np.diagonal(c_np), "diagonal")
    same(np.diagonal(c, -1, 2, 1), np.diagonal(c_np, -1, 2, 1), "diagonal offset axes")
    p_np, q_np = values(rng, (4, 3)), values(rng, (3, 4))
    p, q = put(client, p_np, layout), put(client, q_np, "cols3")
    close(np.cross(p, p[::-1]), np.cross(p_np, p_np[::-1]), "cross")
    close(np.cross(p, q, axisb=0), np.cross(p_np, q_np, axisb=0), "cross axisb")
    close(np.cross(p, q, axisb=0, axisc=0), np.cross(p_np, q_np, axisb=0, axisc=0), "axisc")
    close(np.cross(q, q[:, ::-1], axis=0), np.cross(q_np, q_np[:, ::-1], axis=0), "cross axis")


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
def test_elementwise_and_copy(client, rng, layout):
    z_np = (values(rng, (4, 5)) + 1j * values(rng, (4, 5))).astype(np.complex64)
    z = put(client, z_np, layout)
    same(np.real(z), np.real(z_np), "real")
    same(np.imag(z), np.imag(z_np), "imag")
    a_np = values(rng, (4, 5)) * 100
    a = put(client, a_np, layout)
    same(np.real(a), np.real(a_np), "real of a real array")
    same(np.imag(a), np.imag(a_np), "imag of a real array")
    for decimals in (0, 1, 3, -1):
        same(np.round(a, decimals), np.round(a_np, decimals), f"round {decimals}")
        same(np.around(a.astype(np.float32), decimals),
             np.around(a_np.astype(np.float32), decimals), f"around float32 {decimals}")
    halves_np = np.arange(-6, 6) + 0.5  # ties go to even
    same(np.round(put(client, halves_np, "rows2")), np.round(halves_np), "round halves")
    i_np = random_array(rng, (4, 5), np.int32)
    i = put(client, i_np, layout)
    same(np.round(i), np.round(i_np), "round int32")
    same(np.round(i, -3), np.round(i_np, -3), "round int32 to thousands")
    b_np = i_np > 0
    same(np.round(put(client, b_np, layout)), np.round(b_np), "round bool (float16)")
    copied = np.copy(a)
    assert copied.handle != a.handle and copied.index_map == a.index_map
    same(copied, a_np, "copy")


@pytest.mark.parametrize("layout", ["rows2", "cols3"])
def test_linalg_solvers_and_factorizations(client, rng, layout):
    n = 6
    m_np = values(rng, (n, n)) + 4 * n * np.eye(n)
    m = put(client, m_np, layout)
    b_np = values(rng, (n, 2))
    b = put(client, b_np, layout)
    close(np.linalg.solve(m, b), np.linalg.solve(m_np, b_np), "solve", 1e-9)
    close(np.linalg.inv(m), np.linalg.inv(m_np), "inv", 1e-9)
    close(np.linalg.det(m), np.asarray(np.linalg.det(m_np)), "det", 1e-9)
    sign, logdet = np.linalg.slogdet(m)
    close(sign, np.asarray(np.linalg.slogdet(m_np)[0]), "slogdet sign")
    close(logdet, np.asarray(np.linalg.slogdet(m_np)[1]), "slogdet", 1e-9)
    spd_np = m_np @ m_np.T
    spd = put(client, spd_np, layout)
    close(np.linalg.cholesky(spd), np.linalg.cholesky(spd_np), "cholesky", 1e-9)
    close(np.linalg.cholesky(spd, upper=True), np.linalg.cholesky(spd_np, upper=True), "", 1e-9)
    # eigh reads one triangle: the other holds noise, which UPLO must ignore.
    lower_np = np.tril(spd_np) + np.triu(values(rng, (n, n)), 1)
    upper_np = np.triu(spd_np) + np.tril(values(rng, (n, n)), -1)
    for uplo, x_np in (("L", lower_np), ("U", upper_np)):
        x = put(client, x_np, layout)
        w, v = np.linalg.eigh(x, UPLO=uplo)
        w_np, v_np = np.linalg.eigh(x_np, UPLO=uplo)
        close(w, w_np, f"eigh {uplo} eigenvalues", 1e-9)
        close(np.abs(v), np.abs(v_np), f"eigh {uplo} eigenvectors (up to sign)", 1e-7, 1e-9)
        close(np.linalg.eigvalsh(x, UPLO=uplo), np.linalg.eigvalsh(x_np, UPLO=uplo), "", 1e-9)
    h_np = values(rng, (n, n)) + 1j * values(rng, (n, n))
    h_np = h_np + h_np.conj().T
    h_np[np.triu_indices(n, 1)] = 99 + 99j  # noise in the upper triangle
    close(np.linalg.eigvalsh(put(client, h_np, layout)), np.linalg.eigvalsh(h_np), "", 1e-9)
    h_np = h_np.conj().T  # the noise in the lower triangle: UPLO='U' reads the conjugate
    close(np.linalg.eigvalsh(put(client, h_np, layout), "U"), np.linalg.eigvalsh(h_np, "U"),
          "eigvalsh complex U", 1e-9)
    w, v = np.linalg.eigh(put(client, h_np, layout), UPLO="U")
    w_np, v_np = np.linalg.eigh(h_np, UPLO="U")
    close(w, w_np, "eigh complex U", 1e-9)
    close(np.abs(v), np.abs(v_np), "eigh complex U eigenvectors (up to phase)", 1e-7, 1e-9)
    with pytest.raises(ValueError, match="UPLO"):
        np.linalg.eigh(m, UPLO="X")
    r_np = values(rng, (7, 4))
    r = put(client, r_np, layout)
    q, rr = np.linalg.qr(r)
    q_np, rr_np = np.linalg.qr(r_np)
    close(np.abs(rr), np.abs(rr_np), "qr R (up to sign)", 1e-9)
    np.testing.assert_allclose(q.to_numpy() @ rr.to_numpy(), r_np, atol=1e-12)
    q, rr = np.linalg.qr(r, mode="complete")
    assert q.shape == (7, 7) and rr.shape == (7, 4)
    close(np.abs(np.linalg.qr(r, mode="r")), np.abs(np.linalg.qr(r_np, mode="r")), "qr r", 1e-9)
    u, s, vh = np.linalg.svd(r, full_matrices=False)
    close(s, np.linalg.svd(r_np)[1], "svd values", 1e-9)
    np.testing.assert_allclose((u.to_numpy() * s.to_numpy()) @ vh.to_numpy(), r_np, atol=1e-12)
    assert np.linalg.svd(r)[0].shape == (7, 7)
    close(np.linalg.svd(r, compute_uv=False), np.linalg.svd(r_np, compute_uv=False), "", 1e-9)
    close(np.linalg.svd(spd, hermitian=True)[1], np.linalg.svd(spd_np, hermitian=True)[1],
          "svd hermitian", 1e-9)
    close(np.linalg.svdvals(r), np.linalg.svdvals(r_np), "svdvals", 1e-9)
    y_np = values(rng, 7)
    for got, expected in zip(np.linalg.lstsq(r, put(client, y_np, layout)),
                             np.linalg.lstsq(r_np, y_np)):
        if isinstance(got, distarray.DistributedArray):
            close(got, expected, "lstsq", 1e-9)
        else:
            assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("layout", ["rows2", "cols3"])
def test_linalg_norms_rank_pinv(client, rng, layout):
    a_np = values(rng, (3, 5, 4))
    a = put(client, a_np, layout)
    m_np = a_np[0]
    m = put(client, m_np, layout)
    close(np.linalg.norm(a), np.asarray(np.linalg.norm(a_np)), "norm of every element")
    close(np.linalg.norm(a, keepdims=True), np.linalg.norm(a_np, keepdims=True), "keepdims")
    for ord_ in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        close(np.linalg.norm(m, ord_), np.asarray(np.linalg.norm(m_np, ord_)), f"norm {ord_}",
              1e-9)
        close(np.linalg.norm(a, ord_, axis=(2, 0)), np.linalg.norm(a_np, ord_, axis=(2, 0)),
              f"norm {ord_} axes (2, 0)", 1e-9)
        close(np.linalg.norm(a, ord_, axis=(-1, 1), keepdims=True),
              np.linalg.norm(a_np, ord_, axis=(-1, 1), keepdims=True), f"norm {ord_}", 1e-9)
    for ord_ in (None, 0, 1, 2, 3, 0.5, np.inf, -np.inf):
        close(np.linalg.norm(a, ord_, axis=1), np.linalg.norm(a_np, ord_, axis=1),
              f"vector norm {ord_}", 1e-9)
        close(np.linalg.norm(m[1], ord_), np.asarray(np.linalg.norm(m_np[1], ord_)), "", 1e-9)
    with pytest.raises(ValueError, match="for vectors"):
        np.linalg.norm(a, "fro", axis=0)
    with pytest.raises(ValueError, match="improper number"):
        np.linalg.norm(a, 1)
    close(np.linalg.matrix_norm(a, ord=1), np.linalg.matrix_norm(a_np, ord=1), "matrix_norm")
    close(np.linalg.vector_norm(a, axis=(0, 2), ord=3),
          np.linalg.vector_norm(a_np, axis=(0, 2), ord=3), "vector_norm", 1e-9)
    # A rank-2 matrix, and one singular value under an absolute tol.
    low_np = values(rng, (6, 2)) @ values(rng, (2, 5))
    low = put(client, low_np, layout)
    same(np.linalg.matrix_rank(low), np.asarray(np.linalg.matrix_rank(low_np)), "matrix_rank")
    s_np = np.linalg.svd(m_np, compute_uv=False)
    tol = float((s_np[-1] + s_np[-2]) / 2)
    same(np.linalg.matrix_rank(m, tol=tol), np.asarray(np.linalg.matrix_rank(m_np, tol=tol)))
    same(np.linalg.matrix_rank(m, rtol=0.5), np.asarray(np.linalg.matrix_rank(m_np, rtol=0.5)))
    same(np.linalg.matrix_rank(a, tol=tol), np.linalg.matrix_rank(a_np, tol=tol), "stacked")
    with pytest.raises(ValueError, match="can't be both set"):
        np.linalg.matrix_rank(m, tol=1, rtol=1)
    close(np.linalg.pinv(low), np.linalg.pinv(low_np), "pinv", 1e-7, 1e-9)
    close(np.linalg.pinv(low, rtol=None), np.linalg.pinv(low_np, rtol=None), "", 1e-7, 1e-9)
    close(np.linalg.pinv(m, 0.3), np.linalg.pinv(m_np, 0.3), "pinv rcond", 1e-7, 1e-9)
    with pytest.raises(ValueError, match="can't be both set"):
        np.linalg.pinv(m, 0.1, rtol=0.1)
    sq_np = values(rng, (4, 4)) + 8 * np.eye(4)
    sq = put(client, sq_np, layout)
    close(np.linalg.matrix_power(sq, 3), np.linalg.matrix_power(sq_np, 3), "matrix_power")
    close(np.linalg.matrix_power(sq, -2), np.linalg.matrix_power(sq_np, -2), "", 1e-9)
    close(np.linalg.trace(a, offset=1), np.linalg.trace(a_np, offset=1), "linalg.trace")
    same(np.linalg.diagonal(a, offset=-1), np.linalg.diagonal(a_np, offset=-1), "diagonal")
    t_np = values(rng, (5, 3))
    t = put(client, t_np, layout)
    close(np.linalg.cross(t, t[::-1]), np.linalg.cross(t_np, t_np[::-1]), "linalg.cross")
    close(np.linalg.outer(m[0], m[1]), np.linalg.outer(m_np[0], m_np[1]), "linalg.outer")
    close(np.linalg.tensordot(a, m, axes=([1, 2], [0, 1])),
          np.linalg.tensordot(a_np, m_np, axes=([1, 2], [0, 1])), "linalg.tensordot")
    close(np.linalg.matmul(a, sq), np.linalg.matmul(a_np, sq_np), "linalg.matmul")
    same(np.linalg.matrix_transpose(a), np.linalg.matrix_transpose(a_np), "matrix_transpose")


def test_numpy_only_arguments_are_refused(client, rng):
    keep, keep_np = bystander(client, rng)
    a_np = values(rng, (4, 4))
    a = put(client, a_np, "rows2")
    calls = {
        "out=": lambda: np.cumsum(a, out=a),
        "where=": lambda: np.std(a, where=a > 0),
        "mean=": lambda: np.var(a, mean=a),
        "mode='wrap'": lambda: np.take(a, [9], mode="wrap"),
        "axis=": lambda: np.unique(a, axis=0),
        "mode='raw'": lambda: np.linalg.qr(a, mode="raw"),
        "numpy.dot: out=": lambda: np.dot(a, a, out=a),
        "numpy.round: out=": lambda: np.round(a, out=a),
        "numpy.trace: out=": lambda: np.trace(a, out=a),
    }
    for words, call in calls.items():
        with pytest.raises(TypeError) as raised:
            call()
        assert words in str(raised.value), str(raised.value)
        assert "not served" in str(raised.value), str(raised.value)
    # A NumPy array is never an operand: upload it first.
    for call in (lambda: np.dot(a, a_np), lambda: np.outer(a_np, a),
                 lambda: np.linalg.solve(a, a_np[:, 0]), lambda: np.cross(a[:, :3], a_np[:, :3]),
                 lambda: np.diff(a, append=a_np), lambda: np.tensordot(a_np, a, 1)):
        with pytest.raises(TypeError, match="upload it first"):
            call()
    with pytest.raises(TypeError, match="numpy.outer of b a list"):
        np.outer(a, [1.0, 2.0])
    with pytest.raises(ValueError, match="ddof and correction"):
        np.std(a, ddof=1, correction=1)
    with pytest.raises(ValueError, match="3 elements"):
        np.cross(a[:, :2], a[:, :2])
    with pytest.raises(ValueError, match="not aligned"):
        np.dot(a, a[:3])
    with pytest.raises(ValueError, match="order must be non-negative"):
        np.diff(a, n=-1)
    with pytest.raises(TypeError, match="decimals=0 only"):
        np.round(a > 0, 2)
    assert_intact(keep, keep_np)


def test_unserved_functions_still_refuse(client, rng):
    keep, keep_np = bystander(client, rng)
    a_np = values(rng, (4, 4))
    a = put(client, a_np, "cols3")
    calls = {
        "numpy.median": lambda: np.median(a),
        "numpy.percentile": lambda: np.percentile(a, 50),
        "numpy.inner": lambda: np.inner(a, a),
        "numpy.kron": lambda: np.kron(a, a),
        "numpy.einsum": lambda: np.einsum("ij->i", a),
        "numpy.convolve": lambda: np.convolve(a[0], a[1]),
        "numpy.histogram": lambda: np.histogram(a),
        "numpy.linalg.eig": lambda: np.linalg.eig(a),
        "numpy.linalg.eigvals": lambda: np.linalg.eigvals(a),
        "numpy.linalg.cond": lambda: np.linalg.cond(a),
        "numpy.linalg.multi_dot": lambda: np.linalg.multi_dot([a, a, a]),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError) as raised:
            call()
        message = str(raised.value)
        assert name in message, message
        assert "numpy.asarray(x)" in message and "to_numpy()" in message, message
    # The explicit download still serves them.
    np.testing.assert_allclose(np.linalg.eigvals(np.asarray(a)), np.linalg.eigvals(a_np))
    assert_intact(keep, keep_np)


def test_every_name_served_is_numpys():
    """The table holds NumPy's own functions (a misspelt name would be dropped silently)."""
    from distarray import _numpy_dispatch

    for name in ("std", "var", "cumsum", "cumprod", "diff", "roll", "tile", "repeat", "take",
                 "take_along_axis", "nonzero", "unique", "count_nonzero", "broadcast_to",
                 "broadcast_arrays", "tril", "triu", "meshgrid", "outer", "tensordot", "trace",
                 "diagonal", "cross", "dot", "real", "imag", "round", "around", "copy", "where"):
        assert getattr(np, name) in _numpy_dispatch.HANDLED, name
    for name in ("solve", "inv", "cholesky", "qr", "eigh", "eigvalsh", "svd", "det", "slogdet",
                 "norm", "matrix_rank", "pinv", "lstsq", "vecdot"):
        assert getattr(np.linalg, name) in _numpy_dispatch.HANDLED, name
