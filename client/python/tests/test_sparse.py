"""distarray.sparse against SciPy on fresh random matrices (empty rows and columns included, one
device and split): construction from COO, SciPy and dense input, products, the transpose, and
the solvers cg and lsmr, whose solutions, iteration counts and istop codes match SciPy's; bad
input fails clearly and leaves other arrays intact."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
import distarray.sparse
import distarray.sparse.linalg
from _layouts import assert_intact, bystander

scipy_sparse = pytest.importorskip("scipy.sparse")
scipy_linalg = pytest.importorskip("scipy.sparse.linalg")

DEVICE_SETS = [[0], [0, 1], [2, 0, 1, 3]]


def random_scipy(rng, m, n, density, dtype=np.float64, empty_rows=(), empty_cols=()):
    s = scipy_sparse.random(m, n, density=density, format="coo", dtype=np.float64,
                            random_state=rng)
    data = s.data - 0.5
    if np.dtype(dtype).kind == "c":
        data = data + 1j * (rng.random(len(data)) - 0.5)
    keep = ~np.isin(s.row, empty_rows) & ~np.isin(s.col, empty_cols)
    return scipy_sparse.coo_matrix((data[keep].astype(dtype), (s.row[keep], s.col[keep])),
                                   shape=(m, n)).tocsr()


def tolerance(dtype):
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11


@pytest.mark.parametrize("devices", DEVICE_SETS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_products_match_scipy(client, rng, devices, dtype):
    keep, keep_np = bystander(client, rng)
    s = random_scipy(rng, 41, 29, 0.15, dtype, empty_rows=(0, 40, 7), empty_cols=(3,))
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    assert a.shape == (41, 29) and a.nnz == s.nnz and a.dtype == np.dtype(dtype)
    x = (rng.random(29) - 0.5).astype(dtype)
    xd = client.from_numpy(x, distarray.on_device(1, devices[-1]))
    np.testing.assert_allclose((a @ xd).to_numpy(), s @ x, rtol=tolerance(dtype),
                               atol=tolerance(dtype))
    xs = (rng.random((29, 4)) - 0.5).astype(dtype)
    xsd = client.from_numpy(xs, distarray.split_index_map(xs.shape, 0, devices))
    np.testing.assert_allclose((a @ xsd).to_numpy(), s @ xs, rtol=tolerance(dtype),
                               atol=tolerance(dtype))
    y = (rng.random(41) - 0.5).astype(dtype)
    yd = client.from_numpy(y, distarray.split_index_map(y.shape, 0, devices))
    np.testing.assert_allclose((a.T @ yd).to_numpy(), s.T @ y, rtol=tolerance(dtype),
                               atol=tolerance(dtype))
    np.testing.assert_allclose(a.toarray().to_numpy(), s.toarray(), rtol=0, atol=0)
    np.testing.assert_allclose(a.T.toarray().to_numpy(), s.T.toarray(), rtol=0, atol=0)
    assert (a.to_scipy() != s).nnz == 0
    assert_intact(keep, keep_np)


def test_construction_forms_agree(client, rng):
    dense = np.zeros((6, 5))
    dense[0, 1], dense[2, 4], dense[5, 0] = 1.5, -2.0, 3.25
    row, col = np.nonzero(dense)
    forms = [
        distarray.sparse.csr_matrix(dense, client=client),
        distarray.sparse.csr_matrix((dense[row, col], (row, col)), shape=(6, 5), client=client),
        distarray.sparse.csr_matrix(scipy_sparse.csr_matrix(dense), devices=[1, 2], client=client),
    ]
    s = scipy_sparse.csr_matrix(dense)
    forms.append(distarray.sparse.csr_matrix((s.data, s.indices, s.indptr), shape=(6, 5),
                                             client=client))
    for a in forms:
        np.testing.assert_array_equal(a.toarray().to_numpy(), dense)
        assert a.nnz == 3
    # Duplicates are summed, unsorted entries accepted.
    dup = distarray.sparse.csr_matrix(([1.0, 2.0, 4.0], ([1, 1, 0], [2, 2, 0])), shape=(2, 3),
                                      client=client)
    assert dup.nnz == 2
    np.testing.assert_array_equal(dup.toarray().to_numpy(), [[4, 0, 0], [0, 0, 3]])
    # The same seed gives the same random matrix whatever the devices.
    r1 = distarray.sparse.random(30, 20, density=0.1, random_state=5, client=client)
    r2 = distarray.sparse.random(30, 20, density=0.1, random_state=5, devices=[3, 1],
                                 client=client)
    assert r1.nnz == 60
    np.testing.assert_array_equal(r1.toarray().to_numpy(), r2.toarray().to_numpy())


def test_bad_input_fails_clearly(client, rng):
    keep, keep_np = bystander(client, rng)
    with pytest.raises(ValueError, match=r"row\[1\]: 2 is out of range for 2 rows"):
        distarray.sparse.csr_matrix(([1.0, 1.0], ([0, 2], [0, 0])), shape=(2, 2), client=client)
    with pytest.raises(ValueError, match="lengths 2, 1 and 2 differ"):
        distarray.sparse.csr_matrix(([1.0, 1.0], ([0, 1], [0])), shape=(2, 2), client=client)
    with pytest.raises(ValueError, match="indptr: 2 offsets for 2 rows"):
        distarray.sparse.csr_matrix(([1.0], [0], [0, 1]), shape=(2, 2), client=client)
    with pytest.raises(TypeError, match="sparse values are"):
        distarray.sparse.csr_matrix(np.eye(2, dtype=np.float16), client=client)
    a = distarray.sparse.csr_matrix(np.eye(3), client=client)
    wrong = client.from_numpy(np.ones(4))
    with pytest.raises(distarray.InvalidArgumentError, match=r"spec.b: shape \(4,\)"):
        a @ wrong
    with pytest.raises(distarray.InvalidArgumentError, match="spec.b: dtype float32"):
        a @ client.from_numpy(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="upload NumPy arrays"):
        a @ np.ones(3)
    with pytest.raises(ValueError, match="cg: A must be square"):
        distarray.sparse.linalg.cg(distarray.sparse.csr_matrix(np.ones((2, 3)), client=client),
                                   client.from_numpy(np.ones(2)))
    with pytest.raises(TypeError, match="real float32 or float64"):
        distarray.sparse.linalg.lsmr(
            distarray.sparse.csr_matrix(np.eye(2, dtype=np.complex128), client=client),
            client.from_numpy(np.ones(2, np.complex128)))
    # cg's tolerances and cap: a NaN tolerance would otherwise "converge" at once.
    eye = distarray.sparse.csr_matrix(np.eye(2), client=client)
    ones = client.from_numpy(np.ones(2))
    with pytest.raises(ValueError, match="cg: rtol is a number >= 0, not nan"):
        distarray.sparse.linalg.cg(eye, ones, rtol=float("nan"))
    with pytest.raises(ValueError, match="cg: atol is a number >= 0, not -1"):
        distarray.sparse.linalg.cg(eye, ones, atol=-1)
    with pytest.raises(ValueError, match="cg: maxiter is a whole number >= 0, not -2"):
        distarray.sparse.linalg.cg(eye, ones, maxiter=-2)
    assert_intact(keep, keep_np)


def spd(rng, n, density):
    """A sparse symmetric positive definite matrix: B B^T + n I, B sparse."""
    b = scipy_sparse.random(n, n, density=density, random_state=rng)
    return (b @ b.T + n * scipy_sparse.identity(n)).tocsr()


@pytest.mark.parametrize("devices", [[0], [0, 1, 2]])
def test_cg_matches_scipy(client, rng, devices):
    n = 60
    s = spd(rng, n, 0.05)
    b = rng.random(n) - 0.5
    iterations = []
    want, want_info = scipy_linalg.cg(s, b, rtol=1e-10, callback=lambda xk: iterations.append(1))
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    x, info = distarray.sparse.linalg.cg(a, client.from_numpy(b), rtol=1e-10)
    assert info == want_info == 0
    np.testing.assert_allclose(x.to_numpy(), want, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(s @ x.to_numpy(), b, atol=1e-8 * np.linalg.norm(b))
    # A dense operator, rows split over the devices: the same solve.
    dense = client.from_numpy(s.toarray(), distarray.split_index_map((n, n), 0, devices))
    xd, info_d = distarray.sparse.linalg.cg(dense, client.from_numpy(b), rtol=1e-10)
    assert info_d == 0
    np.testing.assert_allclose(xd.to_numpy(), want, rtol=1e-8, atol=1e-10)
    if len(devices) == 1:
        # Whole on one device, a dense A is read by its upper triangle (cg's A is symmetric):
        # noise below the diagonal changes nothing.
        noisy = np.triu(s.toarray()) + np.tril(rng.random((n, n)) + 1.0, -1)
        xn, info_n = distarray.sparse.linalg.cg(
            client.from_numpy(noisy, distarray.split_index_map((n, n), 0, devices)),
            client.from_numpy(b), rtol=1e-10)
        assert info_n == 0
        np.testing.assert_allclose(xn.to_numpy(), want, rtol=1e-8, atol=1e-10)
    # A cap short of convergence reports the iterations run, as SciPy's info does.
    x3, info3 = distarray.sparse.linalg.cg(a, client.from_numpy(b), rtol=1e-14, maxiter=3)
    want3, want_info3 = scipy_linalg.cg(s, b, rtol=1e-14, maxiter=3)
    assert info3 == want_info3 == 3
    np.testing.assert_allclose(x3.to_numpy(), want3, rtol=1e-9, atol=1e-12)


def scipy_pcg(s, b, m_inv, rtol, maxiter):
    """SciPy's preconditioned CG with its iteration count (callback per iteration)."""
    count = []
    x, info = scipy_linalg.cg(s, b, rtol=rtol, maxiter=maxiter, M=m_inv,
                              callback=lambda xk: count.append(1))
    return x, info, len(count)


@pytest.mark.parametrize("devices", [[0], [2, 0, 1]])
def test_preconditioned_cg_matches_scipy(client, rng, devices):
    """M (Jacobi, as a CSR diagonal and as a dense matrix) on a badly scaled SPD system: SciPy's
    preconditioned recurrence, so the same x, info and iteration count, and fewer iterations
    than without M."""
    n = 80
    base = spd(rng, n, 0.05)
    scale = scipy_sparse.diags(np.logspace(0, 3, n))  # rows and columns over three decades
    s = (scale @ base @ scale).tocsr()
    b = rng.random(n) - 0.5
    jacobi = scipy_sparse.diags(1.0 / s.diagonal()).tocsr()
    want, want_info, want_its = scipy_pcg(s, b, jacobi, 1e-10, 10 * n)
    _, _, plain_its = scipy_pcg(s, b, None, 1e-10, 10 * n)
    assert want_its < plain_its  # the case is one where the preconditioner matters
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    bd = client.from_numpy(b)
    for name, m in (
            ("csr", distarray.sparse.csr_matrix(jacobi, devices=devices[::-1], client=client)),
            ("dense", client.from_numpy(jacobi.toarray(),
                                        distarray.split_index_map((n, n), 0, devices)))):
        x, info = distarray.sparse.linalg.cg(a, bd, rtol=1e-10, M=m)
        assert info == want_info == 0, name
        np.testing.assert_allclose(x.to_numpy(), want, rtol=1e-7, atol=1e-12, err_msg=name)
        assert np.linalg.norm(s @ x.to_numpy() - b) <= 1e-10 * np.linalg.norm(b), name
        # The iteration count: SciPy's, within one (a rounding can move the last test).
        for cap in (want_its - 2, want_its + 1):
            _, info_cap = distarray.sparse.linalg.cg(a, bd, rtol=1e-10, M=m, maxiter=cap)
            assert (info_cap == 0) == (cap >= want_its), (name, cap, info_cap)
    # A cap short of convergence: the iterate SciPy's preconditioned CG reaches.
    x3, info3 = distarray.sparse.linalg.cg(a, bd, rtol=1e-14, maxiter=3,
                                           M=distarray.sparse.csr_matrix(jacobi, client=client))
    want3, want_info3, _ = scipy_pcg(s, b, jacobi, 1e-14, 3)
    assert info3 == want_info3 == 3
    np.testing.assert_allclose(x3.to_numpy(), want3, rtol=1e-9, atol=1e-12)


def test_cg_of_a_zero_rhs_is_zero(client, rng):
    """b = 0: x = 0 and info 0, as SciPy's, with and without x0 and M (the first step would be
    0 / 0)."""
    n = 30
    s = spd(rng, n, 0.1)
    a = distarray.sparse.csr_matrix(s, devices=[0, 1], client=client)
    zero = client.from_numpy(np.zeros(n))
    x0 = client.from_numpy(rng.random(n) + 0.5)
    m = distarray.sparse.csr_matrix(scipy_sparse.diags(1.0 / s.diagonal()).tocsr(), client=client)
    for kwargs in ({}, {"x0": x0}, {"M": m}):
        x, info = distarray.sparse.linalg.cg(a, zero, **kwargs)
        assert info == 0, kwargs
        np.testing.assert_array_equal(x.to_numpy(), np.zeros(n), err_msg=str(kwargs))


def test_cg_preconditioner_refusals(client, rng):
    n = 6
    a = distarray.sparse.csr_matrix(spd(rng, n, 0.3), client=client)
    b = client.from_numpy(rng.random(n))
    with pytest.raises(NotImplementedError, match="M is served as"):
        distarray.sparse.linalg.cg(a, b, M=scipy_sparse.identity(n))
    with pytest.raises(NotImplementedError, match="M is served as"):
        distarray.sparse.linalg.cg(a, b, M=lambda r: r)
    with pytest.raises(ValueError, match=r"M has shape \(5, 5\)"):
        distarray.sparse.linalg.cg(a, b, M=distarray.sparse.csr_matrix(np.eye(5), client=client))
    with pytest.raises(TypeError, match="M is float32"):
        distarray.sparse.linalg.cg(a, b, M=client.from_numpy(np.eye(n, dtype=np.float32)))
    with pytest.raises(NotImplementedError, match="callback"):
        distarray.sparse.linalg.cg(a, b, callback=print)


LSMR_CASES = [  # name, m, n, density, smallest column scale
    ("square", 50, 50, 0.2, 1.0),  # an empty row and column: singular, least squares
    ("tall", 80, 30, 0.15, 1.0),   # overdetermined
    ("wide", 30, 70, 0.15, 1.0),   # underdetermined: the minimum-norm solution
    ("ill", 40, 40, 0.3, 1e-6),    # ill-conditioned: columns scaled over six decades
]


@pytest.mark.parametrize("case", LSMR_CASES, ids=[c[0] for c in LSMR_CASES])
@pytest.mark.parametrize("devices", [[0], [1, 0]])
def test_lsmr_matches_scipy(client, rng, case, devices):
    """The documented tolerance (docs/api.md, "Solvers"). At SciPy's default tolerances: the same
    istop, and x meets the stopping test its istop names, recomputed exactly (within 10 times the
    tolerance); the reported ||r|| and ||x|| are x's; the cond(A) estimate within a factor of 20
    of SciPy's, or above 10 where SciPy's is above 100.
    Near convergence, where the two stop depends on rounding, so the iterates are compared at
    tight tolerances (1e-10) on systems SciPy estimates as well conditioned (cond < 100): the same
    istop, iterations within 10% (at least 2), x within 1e-6 of SciPy's (relative), the ||A||
    estimate within 5% of SciPy's after as many iterations."""
    _, m, n, density, smallest = case
    s = random_scipy(rng, m, n, density, empty_rows=(0,), empty_cols=(1,))
    s = (s @ scipy_sparse.diags(np.geomspace(1.0, smallest, n))).tocsr()
    b = rng.random(m) - 0.5
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    bd = client.from_numpy(b)
    maxiter = 10 * min(m, n)  # room to converge: istop 1 or 2
    frobenius = scipy_sparse.linalg.norm(s)
    tol = 1e-6
    want = scipy_linalg.lsmr(s, b, atol=tol, btol=tol, maxiter=maxiter)
    x, istop, itn, normr, normar, norma, conda, normx = distarray.sparse.linalg.lsmr(
        a, bd, atol=tol, btol=tol, maxiter=maxiter)
    assert istop == want[1] and istop in (1, 2), (istop, want[1])
    xs = x.to_numpy()
    r = b - s @ xs
    if istop == 1:  # ||r|| <= btol ||b|| + atol ||A|| ||x||
        assert np.linalg.norm(r) <= 10 * tol * (np.linalg.norm(b) +
                                                frobenius * np.linalg.norm(xs))
    else:  # ||A^T r|| <= atol ||A|| ||r||
        assert np.linalg.norm(s.T @ r) <= 10 * tol * frobenius * np.linalg.norm(r)
    assert normr == pytest.approx(np.linalg.norm(r), rel=1e-3)
    assert normx == pytest.approx(np.linalg.norm(xs), rel=1e-9)
    if want[6] < 100:
        assert 1 / 20 <= conda / want[6] <= 20
    else:  # a running min/max of values rounding moves: it only has to say "ill conditioned"
        assert conda >= 10, (conda, want[6])

    tight = 1e-10
    want = scipy_linalg.lsmr(s, b, atol=tight, btol=tight, maxiter=maxiter)
    if want[6] >= 100 or want[1] not in (1, 2):
        return  # ill conditioned: only the stopping test above is determined
    x, istop, itn, normr, normar, norma, conda, normx = distarray.sparse.linalg.lsmr(
        a, bd, atol=tight, btol=tight, maxiter=maxiter)
    assert istop == want[1], (istop, want[1])
    assert abs(itn - want[2]) <= max(2, want[2] // 10), (itn, want[2])
    assert np.linalg.norm(x.to_numpy() - want[0]) <= 1e-6 * np.linalg.norm(want[0])
    # The ||A|| estimate is a sum over the iterations run (one more adds about 5%), so where the
    # counts differ both solves are compared after as many: the fewer of the two.
    k = min(itn, want[2])
    if itn != k:
        norma = distarray.sparse.linalg.lsmr(a, bd, atol=tight, btol=tight, maxiter=k)[5]
    want_norma = want[5] if want[2] == k else scipy_linalg.lsmr(
        s, b, atol=tight, btol=tight, maxiter=k)[5]
    assert norma == pytest.approx(want_norma, rel=0.05)


def test_lsmr_caps_and_damps_as_scipy(client, rng):
    s = random_scipy(rng, 40, 25, 0.2)
    b = rng.random(40) - 0.5
    a = distarray.sparse.csr_matrix(s, devices=[0, 1], client=client)
    capped = distarray.sparse.linalg.lsmr(a, client.from_numpy(b), maxiter=4)
    want = scipy_linalg.lsmr(s, b, maxiter=4)
    assert (capped[1], capped[2]) == (want[1], want[2]) == (7, 4)
    np.testing.assert_allclose(capped[0].to_numpy(), want[0], rtol=1e-9, atol=1e-12)
    damped = distarray.sparse.linalg.lsmr(a, client.from_numpy(b), damp=0.5)
    want = scipy_linalg.lsmr(s, b, damp=0.5)
    assert damped[1] == want[1]
    np.testing.assert_allclose(damped[0].to_numpy(), want[0], rtol=1e-6, atol=1e-9)
    # b = 0: x = 0 at once, as SciPy.
    zero = distarray.sparse.linalg.lsmr(a, client.from_numpy(np.zeros(40)))
    assert zero[1:3] == (0, 0)
    np.testing.assert_array_equal(zero[0].to_numpy(), np.zeros(25))


def test_lsmr_of_a_zero_rhs_from_x0_is_zero(client, rng):
    """b = 0 with an x0: SciPy's lsmr returns x = 0 without iterating, its norms those of x0's
    residual; so does ours (every field)."""
    s = random_scipy(rng, 40, 15, 0.3)
    a = distarray.sparse.csr_matrix(s, devices=[1, 0], client=client)
    x0 = rng.random(15) + 0.5
    want = scipy_linalg.lsmr(s, np.zeros(40), x0=x0)
    got = distarray.sparse.linalg.lsmr(a, client.from_numpy(np.zeros(40)),
                                       x0=client.from_numpy(x0))
    np.testing.assert_array_equal(got[0].to_numpy(), np.zeros(15))
    assert want[1] == got[1] == 0 and want[2] == got[2] == 0
    np.testing.assert_allclose(got[3:], want[3:], rtol=1e-12)
