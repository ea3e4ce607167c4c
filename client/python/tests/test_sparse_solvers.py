"""distarray.sparse.linalg's lsqr and minres against scipy.sparse.linalg's, in float64 on fresh
random sparse systems, on one device and split over several (plus float32 solves of each).

- lsqr: every field of SciPy's tuple (x, istop, itn, r1norm, r2norm, anorm, acond, arnorm, xnorm,
  var with calc_var) on well-conditioned tall, wide, square-singular and damped systems, x0
  given or not; the iteration cap (the same iterates as SciPy's, field for field); an
  ill-conditioned system, where x must meet the stopping test its istop names, the norm
  estimates must be x's and the others near SciPy's; b = 0.
- minres: x and info on symmetric indefinite systems, shifted, singular, with x0, with a dense
  operator, and ill-conditioned; the exact iteration count (SciPy's, through the cap: one
  iteration fewer stops short with info = maxiter and SciPy's iterate, SciPy's count converges);
  SciPy's early exits (b = 0, x0 exact, A = c I) and check=True.
- minres with a preconditioner M (Jacobi or a sparse non-diagonal SPD one, as a csr_matrix or
  a dense array) on symmetric indefinite systems scaled over two decades, shifted or from x0:
  x, info and the iteration count against SciPy's with the same M; an M that is not positive
  definite as SciPy handles it (raised for the first residual or at SciPy's iteration, or
  unnoticed), r^T M r = 0, A = c M^-1 in one iteration, check=True of M.
- bad input of either: wrong types, shapes, dtypes, complex systems and invalid parameters (M
  of another shape or dtype, or one that runs on the host) fail before any work, naming the
  argument, and leave other arrays intact.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import distarray
import distarray.sparse
import distarray.sparse.linalg
from _layouts import assert_intact, bystander

scipy_sparse = pytest.importorskip("scipy.sparse")
scipy_linalg = pytest.importorskip("scipy.sparse.linalg")

DEVICE_SETS = [[0], [2, 0, 1, 3]]
LSQR_FIELDS = ("istop", "itn", "r1norm", "r2norm", "anorm", "acond", "arnorm", "xnorm")


def random_system(rng, m, n, density, diagonal=0.0, smallest=1.0, empty=()):
    """A sparse m x n matrix: entries uniform in [-0.5, 0.5), plus `diagonal` on the main
    diagonal (well conditioned for diagonal 3), columns scaled from 1 down to `smallest`; the
    rows and columns in `empty` have no entry."""
    s = scipy_sparse.random(m, n, density=density, format="coo", random_state=rng)
    s = scipy_sparse.coo_matrix((s.data - 0.5, (s.row, s.col)), shape=(m, n))
    s = (s + diagonal * scipy_sparse.eye(m, n)).tocoo()
    keep = ~np.isin(s.row, empty) & ~np.isin(s.col, empty) & (s.data != 0)
    s = scipy_sparse.coo_matrix((s.data[keep], (s.row[keep], s.col[keep])), shape=(m, n))
    return (s @ scipy_sparse.diags(np.geomspace(1.0, smallest, n))).tocsr()


def random_symmetric(rng, n, density, smallest=1.0, empty=()):
    """A sparse symmetric indefinite n x n matrix: a symmetric part in [-0.5, 0.5) plus a
    diagonal of magnitudes 2 to 4 and random signs (cond about 3), scaled D A D with D from 1
    down to `smallest`; `empty` rows and columns have no entry (singular)."""
    s = scipy_sparse.random(n, n, density=density, format="coo", random_state=rng)
    s = scipy_sparse.coo_matrix((s.data - 0.5, (s.row, s.col)), shape=(n, n))
    signs = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    s = ((s + s.T) * 0.5 + scipy_sparse.diags(signs * rng.uniform(2, 4, n))).tocoo()
    keep = ~np.isin(s.row, empty) & ~np.isin(s.col, empty) & (s.data != 0)
    s = scipy_sparse.coo_matrix((s.data[keep], (s.row[keep], s.col[keep])), shape=(n, n))
    d = scipy_sparse.diags(np.geomspace(1.0, smallest, n))
    return (d @ s @ d).tocsr()


def rhs(rng, m):
    return rng.uniform(-1, 1, m) + np.where(rng.random(m) < 0.5, -0.1, 0.1)  # never 0


def rel(got, want) -> float:
    return float(np.linalg.norm(np.asarray(got) - want) / np.linalg.norm(want))


def run_lsqr(client, s, b, devices, x0=None, **options):
    """(ours with x and var downloaded, SciPy's): the same system and options."""
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    x0d = None if x0 is None else client.from_numpy(x0, distarray.on_device(1, devices[-1]))
    got = distarray.sparse.linalg.lsqr(a, client.from_numpy(b), x0=x0d, **options)
    assert isinstance(got[0], distarray.DistributedArray)
    assert isinstance(got[9], distarray.DistributedArray)
    assert isinstance(got[1], int) and isinstance(got[2], int)
    assert all(isinstance(v, float) for v in got[3:9])
    got = (got[0].to_numpy(),) + tuple(got[1:9]) + (got[9].to_numpy(),)
    want = scipy_linalg.lsqr(s, b, x0=x0, **options)
    return got, want


def assert_lsqr_matches(got, want, *, scalars, anorm, arnorm, x, var):
    """Every field against SciPy's: istop and itn equal, the others within the relative
    tolerances given (`scalars` for r1norm, r2norm and xnorm; `anorm` for anorm and acond)."""
    assert (got[1], got[2]) == (want[1], want[2]), (got[1:3], want[1:3])
    limits = dict(r1norm=scalars, r2norm=scalars, xnorm=scalars, anorm=anorm, acond=anorm,
                  arnorm=arnorm)
    for i, name in enumerate(LSQR_FIELDS[2:], start=3):
        assert got[i] == pytest.approx(want[i], rel=limits[name], abs=1e-300), name
    assert got[0].shape == want[0].shape and got[9].shape == want[9].shape
    assert rel(got[0], want[0]) <= x, "x"
    if np.any(want[9]):
        assert rel(got[9], want[9]) <= var, "var"
    else:
        np.testing.assert_array_equal(got[9], want[9])


LSQR_CASES = [  # name, m, n, density, diagonal, damp, tolerance, x0 given
    ("tall", 60, 40, 0.2, 3.0, 0.0, 1e-8, False),    # overdetermined, least squares
    ("wide", 30, 50, 0.2, 3.0, 0.0, 1e-8, True),     # underdetermined: x0 + the min-norm step
    ("square", 50, 50, 0.2, 3.0, 0.0, 1e-10, False),  # an empty row and column: singular
    ("damped", 60, 40, 0.2, 0.0, 0.5, 1e-6, True),   # no diagonal, damp 0.5 regularizes
]
# The damped system stops at 1e-6 (about 18 iterations): past about 20, its anorm and arnorm
# amplify rounding some 50 times an iteration (in SciPy's own solve of a b perturbed by 1e-16
# too), so at 1e-8 the two would part beyond the tolerances below about once in a hundred.


@pytest.mark.parametrize("case", LSQR_CASES, ids=[c[0] for c in LSQR_CASES])
@pytest.mark.parametrize("devices", DEVICE_SETS)
def test_lsqr_matches_scipy(client, rng, case, devices):
    """Well-conditioned systems (SciPy's cond estimate below 100): the same istop and
    iterations, x within 1e-8 of SciPy's (relative), the estimates within 1e-9 (norms of r and
    x), 1e-6 (||A||, cond A) and 1e-4 (||A^T r||, tiny at the end), var within 1e-3; and the
    estimates are those of the returned x: r1norm = ||b - A x||,
    r2norm^2 = r1norm^2 + damp^2 ||x - x0||^2, xnorm = ||x - x0||,
    arnorm = ||A^T r - damp^2 (x - x0)||."""
    _, m, n, density, diagonal, damp, tol, with_x0 = case
    s = random_system(rng, m, n, density, diagonal, empty=(1,) if m == n else ())
    b = rhs(rng, m)
    x0 = rng.uniform(-1, 1, n) if with_x0 else None
    got, want = run_lsqr(client, s, b, devices, x0=x0, damp=damp, atol=tol, btol=tol,
                         calc_var=True)
    assert want[1] in (1, 2) and want[6] < 100, want[1:9]  # the case is what it claims
    assert_lsqr_matches(got, want, scalars=1e-9, anorm=1e-6, arnorm=1e-4, x=1e-8, var=1e-3)
    x = got[0]
    r = b - s @ x
    dx = x - (x0 if x0 is not None else 0)
    assert got[3] == pytest.approx(np.linalg.norm(r), rel=1e-6)
    assert got[4] == pytest.approx(np.hypot(got[3], damp * np.linalg.norm(dx)), rel=1e-6)
    assert got[8] == pytest.approx(np.linalg.norm(dx), rel=1e-6)
    assert got[7] == pytest.approx(np.linalg.norm(s.T @ r - damp ** 2 * dx), rel=1e-3)


@pytest.mark.parametrize("devices", DEVICE_SETS)
def test_lsqr_caps_as_scipy(client, rng, devices):
    """A cap short of convergence: istop 7 after exactly iter_lim iterations, and every field
    SciPy's to rounding (the same iterates), on a plain and an ill-conditioned system, damped
    and from x0. iter_lim 0: SciPy's values before any iteration."""
    plain = random_system(rng, 50, 35, 0.2)
    ill = random_system(rng, 40, 40, 0.3, 3.0, smallest=1e-6)
    for s, damp, with_x0, iter_lim in ((plain, 0.0, False, 4), (ill, 0.0, True, 5),
                                       (plain, 0.3, True, 1), (ill, 1e-3, False, 6)):
        b = rhs(rng, s.shape[0])
        x0 = rng.uniform(-1, 1, s.shape[1]) if with_x0 else None
        got, want = run_lsqr(client, s, b, devices, x0=x0, damp=damp, iter_lim=iter_lim,
                             calc_var=True)
        assert got[1:3] == (7, iter_lim)
        assert_lsqr_matches(got, want, scalars=1e-9, anorm=1e-9, arnorm=1e-9, x=1e-9, var=1e-9)
    b = rhs(rng, plain.shape[0])
    x0 = rng.uniform(-1, 1, plain.shape[1])
    got, want = run_lsqr(client, plain, b, devices, x0=x0, iter_lim=0)
    assert got[1:3] == (0, 0)
    assert_lsqr_matches(got, want, scalars=1e-12, anorm=0, arnorm=1e-12, x=0, var=0)
    np.testing.assert_array_equal(got[0], x0)


@pytest.mark.parametrize("devices", DEVICE_SETS)
def test_lsqr_ill_conditioned(client, rng, devices):
    """Columns scaled over four decades (cond about 1e4; an empty row and column besides).
    Lanczos vectors lose orthogonality over the ~n iterations, so the iterates part from SciPy's
    under rounding and which test stops the solve may differ: both stop with istop 1 or 2; x
    meets the test its istop names, recomputed from x with the reported ||A||; the reported
    ||r||, ||A^T r|| and ||x|| are x's; iterations within 40% of SciPy's; ||A|| at least the
    largest singular value and within 25% of SciPy's (a sum over the iterations run); cond(A)
    above 1e3 and within a factor of 2 of SciPy's; var 0 for the empty column, elsewhere
    positive and finite. var's entries for the weak directions depend on the iterations run
    (SciPy's and ours part there by up to 50x), so they are compared with SciPy's only where
    the iterates agree (the tests above). Over six decades the counts part by up to 2x, and the
    other estimates with them, so four decades it is."""
    m = n = 40
    s = random_system(rng, m, n, 0.3, 3.0, smallest=1e-4, empty=(1,))
    b = rhs(rng, m)
    tol = 1e-6
    got, want = run_lsqr(client, s, b, devices, atol=tol, btol=tol, iter_lim=10 * n,
                         calc_var=True)
    x, istop, itn, r1norm, r2norm, anorm, acond, arnorm, xnorm, var = got
    assert istop in (1, 2) and want[1] in (1, 2), (istop, want[1])
    assert abs(itn - want[2]) <= 0.4 * want[2], (itn, want[2])
    r = b - s @ x
    if istop == 1:
        assert np.linalg.norm(r) <= 1.01 * tol * (np.linalg.norm(b) + anorm * np.linalg.norm(x))
    else:
        assert np.linalg.norm(s.T @ r) <= 1.01 * tol * anorm * np.linalg.norm(r)
    assert r1norm == pytest.approx(np.linalg.norm(r), rel=1e-6)
    assert r2norm == r1norm
    assert arnorm == pytest.approx(np.linalg.norm(s.T @ r), rel=1e-3)
    assert xnorm == pytest.approx(np.linalg.norm(x), rel=1e-3)
    largest = scipy_linalg.svds(s, k=1, return_singular_vectors=False)[0]
    assert largest * (1 - 1e-9) <= anorm and anorm == pytest.approx(want[5], rel=0.25)
    assert acond > 1e3 and 1 / 2 <= acond / want[6] <= 2, (acond, want[6])
    np.testing.assert_array_equal(var[1], 0)  # the empty column: x's entry is never touched
    ours, theirs = np.delete(var, 1), np.delete(want[9], 1)
    assert np.all(theirs > 0) and np.all(ours > 0) and np.all(np.isfinite(ours))


def test_lsqr_zero_rhs_and_float32(client, rng, capsys):
    """b = 0: x = 0 at once, every field SciPy's (zeros). float32: a well-conditioned solve
    against SciPy's in float64: the same istop, iterations within 1, x and the estimates within
    1e-4; show=True prints SciPy's opening lines and its closing ones with the results."""
    s = random_system(rng, 45, 30, 0.2, 3.0)
    got, want = run_lsqr(client, s, np.zeros(45), [0, 1], calc_var=True)
    assert got[1:9] == (0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0) == tuple(want[1:9])
    np.testing.assert_array_equal(got[0], np.zeros(30))
    np.testing.assert_array_equal(got[9], np.zeros(30))
    b = rhs(rng, 45)
    a = distarray.sparse.csr_matrix(s.astype(np.float32), devices=[1, 2], client=client)
    capsys.readouterr()
    out = distarray.sparse.linalg.lsqr(a, client.from_numpy(b.astype(np.float32)), atol=1e-5,
                                       btol=1e-5, calc_var=True, show=True)
    shown = capsys.readouterr().out
    assert "The matrix A has 45 rows and 30 columns" in shown and "LSQR finished" in shown
    assert f"istop ={out[1]:8g}" in shown and f"itn   ={out[2]:8g}" in shown
    assert ("Ax - b is small enough" if out[1] == 1 else "least-squares solution is good") \
        in shown
    want = scipy_linalg.lsqr(s, b, atol=1e-5, btol=1e-5, calc_var=True)
    assert out[0].dtype == np.float32 and out[9].dtype == np.float32
    assert out[1] == want[1] and abs(out[2] - want[2]) <= 1
    assert rel(out[0].to_numpy(), want[0]) <= 1e-4
    for i in (3, 4, 5, 6, 8):
        assert out[i] == pytest.approx(want[i], rel=1e-4), LSQR_FIELDS[i - 1]
    assert rel(out[9].to_numpy(), want[9]) <= 1e-3


def minres_count(s, b, **options):
    """SciPy's (x, info) and the iterations it ran (its callback runs once per iteration)."""
    calls = []
    x, info = scipy_linalg.minres(s, b, callback=lambda xk: calls.append(1), **options)
    return x, info, len(calls)


MINRES_CASES = [  # name, shift, empty rows and columns, x0 given, rtol
    ("indefinite", 0.0, (), False, 1e-10),
    ("shifted", 0.7, (), False, 1e-10),
    ("singular", 0.0, (3, 17), False, 1e-10),  # b is 0 there: a consistent singular system
    ("x0", 0.0, (), True, 1e-10),
    ("default-rtol", 0.0, (), True, 1e-5),
]


@pytest.mark.parametrize("case", MINRES_CASES, ids=[c[0] for c in MINRES_CASES])
@pytest.mark.parametrize("devices", DEVICE_SETS)
def test_minres_matches_scipy(client, rng, case, devices):
    """Symmetric indefinite systems (cond about 3): info 0 as SciPy's, x within 1e-10 of
    SciPy's (relative); ||b - (A - shift I) x|| <= 10 rtol ||A - shift I||_F ||x|| (the test
    reads the recurrence's residual, which rounding moves from the true one); and the same
    iteration count k: maxiter k - 1 stops short (info k - 1) at SciPy's iterate there, maxiter
    k converges."""
    _, shift, empty, with_x0, rtol = case
    n = 50
    s = random_symmetric(rng, n, 0.1, empty=empty)
    b = rhs(rng, n)
    b[list(empty)] = 0
    x0 = rng.uniform(-1, 1, n) if with_x0 else None
    if x0 is not None:
        x0[list(empty)] = 0
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    bd = client.from_numpy(b)
    x0d = None if x0 is None else client.from_numpy(x0)
    want, want_info, k = minres_count(s, b, x0=x0, rtol=rtol, shift=shift)
    assert want_info == 0 and k > 2
    x, info = distarray.sparse.linalg.minres(a, bd, x0d, rtol=rtol, shift=shift)
    assert info == 0
    x = x.to_numpy()
    assert x.shape == (n,) and x.dtype == np.float64
    assert rel(x, want) <= 1e-10
    shifted = s - shift * scipy_sparse.identity(n)
    assert np.linalg.norm(b - shifted @ x) <= 10 * rtol * scipy_sparse.linalg.norm(shifted) * \
        np.linalg.norm(x)
    short, info = distarray.sparse.linalg.minres(a, bd, x0d, rtol=rtol, shift=shift,
                                                 maxiter=k - 1)
    want_short, want_info = scipy_linalg.minres(s, b, x0=x0, rtol=rtol, shift=shift,
                                                maxiter=k - 1)
    assert info == want_info == k - 1
    assert rel(short.to_numpy(), want_short) <= 1e-10
    _, info = distarray.sparse.linalg.minres(a, bd, x0d, rtol=rtol, shift=shift, maxiter=k)
    assert info == 0


@pytest.mark.parametrize("devices", DEVICE_SETS)
def test_minres_dense_and_ill_conditioned(client, rng, devices):
    """A dense operator (rows split over the devices): SciPy's x and info. An ill-conditioned
    system (D A D, D over three decades: cond about 1e6): info 0 as SciPy's, x within 1e-3 of
    SciPy's (the iterates part under rounding over ~400 iterations) and ||r|| within 10 rtol
    ||A||_F ||x|| sqrt(iterations / n) (the ||A|| estimate sums over the iterations run)."""
    n = 40
    s = random_symmetric(rng, n, 0.15)
    b = rhs(rng, n)
    dense = client.from_numpy(s.toarray(), distarray.split_index_map((n, n), 0, devices))
    x, info = distarray.sparse.linalg.minres(dense, client.from_numpy(b), rtol=1e-10)
    want, want_info = scipy_linalg.minres(s, b, rtol=1e-10)
    assert info == want_info == 0
    assert rel(x.to_numpy(), want) <= 1e-10

    n = 50
    s = random_symmetric(rng, n, 0.1, smallest=1e-3)
    b = rhs(rng, n)
    rtol = 1e-10
    want, want_info, k = minres_count(s, b, rtol=rtol, maxiter=40 * n)
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    x, info = distarray.sparse.linalg.minres(a, client.from_numpy(b), rtol=rtol, maxiter=40 * n)
    assert info == want_info == 0 and k > n
    x = x.to_numpy()
    assert rel(x, want) <= 1e-3
    assert np.linalg.norm(b - s @ x) <= 10 * rtol * scipy_sparse.linalg.norm(s) * \
        np.linalg.norm(x) * np.sqrt(k / n)


def test_minres_early_exits_as_scipy(client, rng):
    """SciPy's exits: b = 0 gives x = 0 (b itself, also from a nonzero x0); an exact x0
    (r = 0 in exact arithmetic) comes back as it is; A = c I is solved in one iteration (istop
    -1), so even maxiter 1 reports info 0, where another system reports 1; maxiter 0 returns
    x0; check=True passes a symmetric A (the same solve) and refuses another as SciPy does."""
    n = 30
    s = random_symmetric(rng, n, 0.2)
    a = distarray.sparse.csr_matrix(s, devices=[0, 1], client=client)
    x0 = rng.uniform(-1, 1, n)
    for start in (None, x0):
        x, info = distarray.sparse.linalg.minres(
            a, client.from_numpy(np.zeros(n)), None if start is None else client.from_numpy(start))
        want, want_info = scipy_linalg.minres(s, np.zeros(n), x0=start)
        assert info == want_info == 0
        np.testing.assert_array_equal(x.to_numpy(), want)
        np.testing.assert_array_equal(want, np.zeros(n))
    # Integers: A x0 is exact, so r = b - A x0 = 0.
    diag = rng.integers(1, 9, n) * np.where(rng.random(n) < 0.5, -1, 1)
    exact = scipy_sparse.diags(diag.astype(np.float64)).tocsr()
    whole = rng.integers(-20, 20, n).astype(np.float64)
    whole[whole == 0] = 7
    b = exact @ whole
    x, info = distarray.sparse.linalg.minres(
        distarray.sparse.csr_matrix(exact, devices=[2, 3], client=client), client.from_numpy(b),
        client.from_numpy(whole))
    want, want_info = scipy_linalg.minres(exact, b, x0=whole)
    assert info == want_info == 0
    np.testing.assert_array_equal(x.to_numpy(), whole)
    np.testing.assert_array_equal(want, whole)
    # A = c I: one iteration.
    c = rng.uniform(0.5, 2) * (1 if rng.random() < 0.5 else -1)
    scaled = (c * scipy_sparse.identity(n)).tocsr()
    b = rhs(rng, n)
    ci = distarray.sparse.csr_matrix(scaled, devices=[1, 0], client=client)
    for maxiter in (None, 1):
        x, info = distarray.sparse.linalg.minres(ci, client.from_numpy(b), maxiter=maxiter)
        want, want_info = scipy_linalg.minres(scaled, b, maxiter=maxiter)
        assert info == want_info == 0
        np.testing.assert_allclose(x.to_numpy(), b / c, rtol=1e-14)
        assert rel(x.to_numpy(), want) <= 1e-15
    b = rhs(rng, n)
    x, info = distarray.sparse.linalg.minres(a, client.from_numpy(b), maxiter=1)
    want, want_info = scipy_linalg.minres(s, b, maxiter=1)
    assert info == want_info == 1
    # One iteration's x is b times a factor of b^T A b, a sum whose rounding is relative to
    # ||b|| ||A b|| / |b^T A b| (large where the quotient is near 0 for an indefinite A).
    quotient = abs(b @ (s @ b)) / (np.linalg.norm(b) * np.linalg.norm(s @ b))
    assert rel(x.to_numpy(), want) <= 1e-14 / quotient
    x, info = distarray.sparse.linalg.minres(a, client.from_numpy(b), client.from_numpy(x0),
                                             maxiter=0)
    assert info == 0
    np.testing.assert_array_equal(x.to_numpy(), x0)
    # check=True.
    x, info = distarray.sparse.linalg.minres(a, client.from_numpy(b), rtol=1e-10, check=True)
    want, _ = scipy_linalg.minres(s, b, rtol=1e-10, check=True)
    assert info == 0 and rel(x.to_numpy(), want) <= 1e-10
    lopsided = (s + scipy_sparse.random(n, n, density=0.1, random_state=rng)
                + scipy_sparse.coo_matrix(([1.0], ([0], [1])), shape=(n, n))).tocsr()
    with pytest.raises(ValueError, match="non-symmetric"):
        scipy_linalg.minres(lopsided, b, check=True)
    with pytest.raises(ValueError, match="minres: non-symmetric matrix"):
        distarray.sparse.linalg.minres(
            distarray.sparse.csr_matrix(lopsided, devices=[0, 1], client=client),
            client.from_numpy(b), check=True)


def spd_preconditioner(rng, op, kind):
    """An SPD approximation of inv(op) for a symmetric op with no zero on its diagonal:
    "jacobi" diag(1 / |op_ii|), or "spd" R K R with R = diag(|op_ii|^-1/2) and K a sparse
    symmetric matrix, entries in [-0.5, 0.5) plus a diagonal of its row sums of |K| plus 0.5
    (strictly diagonally dominant, so positive definite), not diagonal."""
    scale = 1.0 / abs(op.diagonal())
    if kind == "jacobi":
        return scipy_sparse.diags(scale).tocsr()
    k = scipy_sparse.random(op.shape[0], op.shape[0], density=0.1, format="coo", random_state=rng)
    k = scipy_sparse.coo_matrix((k.data - 0.5, (k.row, k.col)), shape=k.shape)
    k = (k + k.T) * 0.5
    k = k + scipy_sparse.diags(abs(k).sum(axis=1).A1 + 0.5)
    root = scipy_sparse.diags(np.sqrt(scale))
    return (root @ k @ root).tocsr()


MINRES_M_CASES = [  # name, M's kind, M as a csr_matrix or dense, shift, x0 given
    ("jacobi", "jacobi", "csr", False, False),
    ("jacobi-dense", "jacobi", "dense", False, False),
    ("spd-x0", "spd", "csr", False, True),
    ("spd-dense-shifted", "spd", "dense", True, False),
]


@pytest.mark.parametrize("case", MINRES_M_CASES, ids=[c[0] for c in MINRES_M_CASES])
@pytest.mark.parametrize("devices", DEVICE_SETS)
def test_preconditioned_minres_matches_scipy(client, rng, case, devices):
    """An SPD M (Jacobi, or a sparse non-diagonal one, as a csr_matrix or a dense array) on a
    symmetric indefinite system scaled over two decades (D A D: cond about 3e4), shifted or
    not, from x0 or not: SciPy's preconditioned recurrence with the same M, so info 0, x near
    SciPy's and SciPy's iteration count k, far fewer than without M (so a solve that ignored M
    fails each check). With Jacobi's M, whose iterates agree with SciPy's to rounding: x within
    1e-10 of SciPy's (relative) and the exact count (maxiter k - 1 stops short at SciPy's
    iterate there with info k - 1, maxiter k converges). With the other, x within 1e-6 and the
    count within one (maxiter k - 2 stops short at SciPy's iterate, k + 1 converges): there
    SciPy's own solve moves by up to about 1e-7 when the system's rows and columns are
    permuted (another summation order), and such a rounding can move the last test across
    rtol (1 of 160 such solves in a trial). x meets the stopping test in M's
    norm: ||r||_M <= 10 rtol Anorm ||x||, r = b - (A - shift I) x, where SciPy's ||A||
    estimate Anorm (sqrt of its tnorm2: each alpha^2 once, each beta^2 twice, beta1 = ||b -
    A x0||_M among them) is at most sqrt(2 ||M^1/2 (A - shift I) M^1/2||_F^2 + beta1^2)."""
    _, kind, form, shifted, with_x0 = case
    n = 50
    s = random_symmetric(rng, n, 0.1, smallest=1e-2)
    b = rhs(rng, n)
    # Half the smallest |diagonal| entry, of either sign: the shifted diagonal has no zero, and
    # the shift moves x's largest entries (rows of the smallest diagonal entries) by a third
    # or more.
    shift = 0.5 * abs(s.diagonal()).min() * (1 if rng.random() < 0.5 else -1) if shifted else 0.0
    op = (s - shift * scipy_sparse.identity(n)).tocsr()
    m = spd_preconditioner(rng, op, kind)
    assert np.linalg.eigvalsh(m.toarray()).min() > 0
    x0 = rng.uniform(-1, 1, n) if with_x0 else None
    rtol = 1e-10
    want, want_info, k = minres_count(s, b, x0=x0, rtol=rtol, shift=shift, M=m)
    _, plain_info, plain_k = minres_count(s, b, x0=x0, rtol=rtol, shift=shift)
    assert want_info == plain_info == 0 and 2 < k and 2 * k < plain_k  # M matters here
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    if form == "csr":
        md = distarray.sparse.csr_matrix(m, devices=devices[::-1], client=client)
    else:
        md = client.from_numpy(m.toarray(), distarray.split_index_map((n, n), 0, devices[::-1]))
    bd = client.from_numpy(b)
    x0d = None if x0 is None else client.from_numpy(x0)
    x, info = distarray.sparse.linalg.minres(a, bd, x0d, rtol=rtol, shift=shift, M=md)
    assert info == 0
    x = x.to_numpy()
    assert x.shape == (n,) and x.dtype == np.float64
    close, slack = (1e-10, 0) if kind == "jacobi" else (1e-6, 1)
    assert rel(x, want) <= close
    r = b - op @ x
    m_dense, od = m.toarray(), op.toarray()
    frobenius2 = np.trace(m_dense @ od @ m_dense @ od)  # ||M^1/2 op M^1/2||_F^2
    r0 = b if x0 is None else b - op @ x0
    anorm = np.sqrt(2 * frobenius2 + r0 @ (m @ r0))
    assert np.sqrt(r @ (m @ r)) <= 10 * rtol * anorm * np.linalg.norm(x)
    cap = k - 1 - slack
    short, info = distarray.sparse.linalg.minres(a, bd, x0d, rtol=rtol, shift=shift, M=md,
                                                 maxiter=cap)
    want_short, want_info = scipy_linalg.minres(s, b, x0=x0, rtol=rtol, shift=shift, M=m,
                                                maxiter=cap)
    assert info == want_info == cap
    assert rel(short.to_numpy(), want_short) <= close
    _, info = distarray.sparse.linalg.minres(a, bd, x0d, rtol=rtol, shift=shift, M=md,
                                             maxiter=k + slack)
    assert info == 0


@pytest.mark.parametrize("devices", DEVICE_SETS)
def test_minres_preconditioner_exits_as_scipy(client, rng, devices):
    """What SciPy does with an M that is not positive definite, and its early exits with M:
    r^T M r < 0 for the first residual raises "indefinite preconditioner" (even at maxiter 0,
    from x0 too); for a later one, "non-symmetric matrix" at SciPy's iteration, and a cap
    before it returns SciPy's iterate; an indefinite M whose negative direction no residual
    reaches solves as SciPy's (the same x and iteration count); r^T M r = 0 for the first
    residual returns 0 with info 0; A = c M^-1 is solved in one iteration (istop -1, so
    maxiter 1 reports info 0); check=True passes a symmetric M (the same solve) and refuses a
    non-symmetric one, and still a non-symmetric A, as SciPy does."""
    minres = distarray.sparse.linalg.minres
    n = 40
    s = random_symmetric(rng, n, 0.1, smallest=1e-2)
    b = rhs(rng, n)
    a = distarray.sparse.csr_matrix(s, devices=devices, client=client)
    bd = client.from_numpy(b)
    x0 = rng.uniform(-1, 1, n)
    # Negative definite: r^T M r < 0 for every r.
    negative = -spd_preconditioner(rng, s, "jacobi")
    nd = distarray.sparse.csr_matrix(negative, devices=devices, client=client)
    for start, maxiter in ((None, None), (x0, None), (None, 0)):
        with pytest.raises(ValueError, match="indefinite preconditioner"):
            scipy_linalg.minres(s, b, x0=start, M=negative, maxiter=maxiter)
        with pytest.raises(ValueError, match="minres: indefinite preconditioner M"):
            minres(a, bd, None if start is None else client.from_numpy(start), M=nd,
                   maxiter=maxiter)
    # A tridiagonal A and b on the first 5 entries: the residual of iteration i reaches entry
    # 4 + i, so M's large negative entry at 10 is first met at iteration 6.
    diag = np.where(rng.random(n) < 0.5, -1.0, 1.0) * rng.uniform(1, 2, n)
    off = rng.uniform(0.5, 1.5, n - 1) * np.where(rng.random(n - 1) < 0.5, -1.0, 1.0)
    tri = scipy_sparse.diags([off, diag, off], [-1, 0, 1]).tocsr()
    near = np.zeros(n)
    near[:5] = rhs(rng, 5)
    d = rng.uniform(0.5, 2, n)
    d[10] = -1e8
    later = scipy_sparse.diags(d).tocsr()
    calls = []
    with pytest.raises(ValueError, match="non-symmetric matrix"):
        scipy_linalg.minres(tri, near, M=later, callback=lambda xk: calls.append(1))
    assert len(calls) + 1 == 6  # the iteration SciPy raised in
    td = distarray.sparse.csr_matrix(tri, devices=devices, client=client)
    ld = client.from_numpy(later.toarray(), distarray.split_index_map((n, n), 0, devices))
    near_d = client.from_numpy(near)
    with pytest.raises(ValueError, match=r"minres: non-symmetric matrix.* iteration 6, so M "
                                         "is not positive definite"):
        minres(td, near_d, M=ld)
    x, info = minres(td, near_d, M=ld, maxiter=5)
    want, want_info = scipy_linalg.minres(tri, near, M=later, maxiter=5)
    assert info == want_info == 5
    assert rel(x.to_numpy(), want) <= 1e-10
    # Row and column 7 empty and b = 0 there: no residual has an entry at 7, so M's negative
    # entry there is never met, in SciPy's solve or ours.
    sing = random_symmetric(rng, n, 0.1, smallest=1e-2, empty=(7,))
    bs = rhs(rng, n)
    bs[7] = 0
    d = np.ones(n)
    d[sing.diagonal() != 0] = 1.0 / abs(sing.diagonal()[sing.diagonal() != 0])
    d[7] = -1.0
    unseen = scipy_sparse.diags(d).tocsr()
    want, want_info, k = minres_count(sing, bs, rtol=1e-10, M=unseen)
    assert want_info == 0 and k > 2
    sd = distarray.sparse.csr_matrix(sing, devices=devices, client=client)
    ud = distarray.sparse.csr_matrix(unseen, devices=devices, client=client)
    x, info = minres(sd, client.from_numpy(bs), rtol=1e-10, M=ud)
    assert info == 0 and rel(x.to_numpy(), want) <= 1e-10
    _, info = minres(sd, client.from_numpy(bs), rtol=1e-10, M=ud, maxiter=k - 1)
    assert info == k - 1
    # A positive semidefinite M, nonzero only where b is zero: r^T M r = 0, so x = 0 (x0's
    # default).
    d = np.zeros(n)
    d[:3] = rng.uniform(0.5, 2, 3)
    bz = b.copy()
    bz[:3] = 0
    zero_m = scipy_sparse.diags(d).tocsr()
    want, want_info = scipy_linalg.minres(s, bz, M=zero_m)
    assert want_info == 0 and not np.any(want)
    x, info = minres(a, client.from_numpy(bz),
                     M=distarray.sparse.csr_matrix(zero_m, devices=devices, client=client))
    assert info == 0
    np.testing.assert_array_equal(x.to_numpy(), np.zeros(n))
    # A = c M^-1, M positive diagonal: M A = c I, one iteration.
    d = rng.uniform(0.5, 2, n)
    c = rng.uniform(0.5, 2) * (1 if rng.random() < 0.5 else -1)
    scaled = scipy_sparse.diags(c / d).tocsr()
    for maxiter in (None, 1):
        x, info = minres(distarray.sparse.csr_matrix(scaled, devices=devices, client=client), bd,
                         M=distarray.sparse.csr_matrix(scipy_sparse.diags(d).tocsr(),
                                                       devices=devices, client=client),
                         maxiter=maxiter)
        want, want_info = scipy_linalg.minres(scaled, b, M=scipy_sparse.diags(d),
                                              maxiter=maxiter)
        assert info == want_info == 0
        np.testing.assert_allclose(x.to_numpy(), b * d / c, rtol=1e-14)
        assert rel(x.to_numpy(), want) <= 1e-15
    # check=True: a symmetric M passes (the same solve as without check, near SciPy's as in
    # test_preconditioned_minres_matches_scipy); a non-symmetric one, or A, does not.
    m = spd_preconditioner(rng, s, "spd")
    md = distarray.sparse.csr_matrix(m, devices=devices, client=client)
    x, info = minres(a, bd, rtol=1e-10, M=md, check=True)
    unchecked, _ = minres(a, bd, rtol=1e-10, M=md)
    want, want_info = scipy_linalg.minres(s, b, rtol=1e-10, M=m, check=True)
    assert info == want_info == 0 and rel(x.to_numpy(), want) <= 1e-6
    np.testing.assert_array_equal(x.to_numpy(), unchecked.to_numpy())
    lopsided = (m + scipy_sparse.coo_matrix(([0.5 * abs(m).max()], ([0], [1])),
                                            shape=(n, n))).tocsr()
    with pytest.raises(ValueError, match="non-symmetric preconditioner"):
        scipy_linalg.minres(s, b, M=lopsided, check=True)
    with pytest.raises(ValueError, match="minres: non-symmetric preconditioner M"):
        minres(a, bd, M=distarray.sparse.csr_matrix(lopsided, devices=devices, client=client),
               check=True)
    skewed = (s + scipy_sparse.coo_matrix(([1.0], ([0], [1])), shape=(n, n))).tocsr()
    with pytest.raises(ValueError, match="non-symmetric matrix"):
        scipy_linalg.minres(skewed, b, M=m, check=True)
    with pytest.raises(ValueError, match="minres: non-symmetric matrix A"):
        minres(distarray.sparse.csr_matrix(skewed, devices=devices, client=client), bd, M=md,
               check=True)


def test_minres_float32(client, rng, capsys):
    """float32: info 0 and x within 1e-4 of SciPy's float64 solve at rtol 1e-5, with and without
    M; a whole float maxiter is taken; show=True prints SciPy's opening and closing lines."""
    n = 40
    s = random_symmetric(rng, n, 0.1)
    b = rhs(rng, n)
    a = distarray.sparse.csr_matrix(s.astype(np.float32), devices=[0, 1, 2], client=client)
    capsys.readouterr()
    x, info = distarray.sparse.linalg.minres(a, client.from_numpy(b.astype(np.float32)),
                                             maxiter=1e3, show=True)  # a float, as SciPy's
    shown = capsys.readouterr().out
    assert "Enter minres.   itnlim =  1000" in shown
    stop = re.search(r"Exit  minres\.    istop   =    ([12]) ", shown)
    assert stop, shown
    assert ("A solution to Ax = b was found" if stop.group(1) == "1" else
            "A least-squares solution was found") in shown
    want, want_info = scipy_linalg.minres(s, b)
    assert info == want_info == 0
    assert x.dtype == np.float32 and rel(x.to_numpy(), want) <= 1e-4
    # A float32 Jacobi M on a system scaled over two decades, against SciPy's float64 solve.
    s = random_symmetric(rng, n, 0.1, smallest=1e-2)
    m = spd_preconditioner(rng, s, "jacobi")
    x, info = distarray.sparse.linalg.minres(
        distarray.sparse.csr_matrix(s.astype(np.float32), devices=[0, 1, 2], client=client),
        client.from_numpy(b.astype(np.float32)),
        M=distarray.sparse.csr_matrix(m.astype(np.float32), devices=[2, 3], client=client))
    want, want_info = scipy_linalg.minres(s, b, M=m)
    assert info == want_info == 0
    assert x.dtype == np.float32 and rel(x.to_numpy(), want) <= 1e-4


def test_bad_input_fails_clearly(client, rng):
    keep, keep_np = bystander(client, rng)
    lsqr, minres = distarray.sparse.linalg.lsqr, distarray.sparse.linalg.minres
    s = random_symmetric(rng, 6, 0.5)
    a = distarray.sparse.csr_matrix(s, devices=[0, 1], client=client)
    b = client.from_numpy(rhs(rng, 6))
    wide = distarray.sparse.csr_matrix(random_system(rng, 4, 6, 0.5, 1.0), client=client)
    b4 = client.from_numpy(rhs(rng, 4))
    for solver in (lsqr, minres):
        name = solver.__name__
        with pytest.raises(TypeError, match=f"{name}: A is a distarray.sparse.csr_matrix"):
            solver(s, b)
        with pytest.raises(TypeError, match=f"{name}: A is a distarray.sparse.csr_matrix"):
            solver(client.from_numpy(rhs(rng, 6)), b)  # 1-D
        with pytest.raises(TypeError, match=f"{name}: b is a DistributedArray"):
            solver(a, rhs(rng, 6))
        with pytest.raises(ValueError, match=rf"{name}: b has shape \(5,\); A is 6x6"):
            solver(a, client.from_numpy(rhs(rng, 5)))
        with pytest.raises(ValueError, match=rf"{name}: b has shape \(6, 1\)"):
            solver(a, client.from_numpy(rhs(rng, 6)[:, None]))
        with pytest.raises(TypeError, match=f"{name}: b is float32, A is float64"):
            solver(a, client.from_numpy(rhs(rng, 6).astype(np.float32)))
        with pytest.raises(TypeError, match=f"{name}: real float32 or float64 systems only, "
                                            "not complex128"):
            solver(distarray.sparse.csr_matrix(s.astype(np.complex128), client=client),
                   client.from_numpy(rhs(rng, 6).astype(np.complex128)))
        with pytest.raises(TypeError, match=f"{name}: x0 is a DistributedArray or None"):
            solver(a, b, x0=rhs(rng, 6))
        with pytest.raises(ValueError, match=rf"{name}: x0 has shape \(4,\); A has 6 columns"):
            solver(a, b, x0=client.from_numpy(rhs(rng, 4)))
        with pytest.raises(TypeError, match=f"{name}: x0 is float32, A is float64"):
            solver(a, b, x0=client.from_numpy(rhs(rng, 6).astype(np.float32)))
    # lsqr: a dense operator is not served (its transpose products are the CSR blocks');
    # its parameters.
    with pytest.raises(TypeError, match="lsqr: A is a distarray.sparse.csr_matrix"):
        lsqr(client.from_numpy(s.toarray()), b)
    with pytest.raises(ValueError, match=r"lsqr: b has shape \(6,\); A is 4x6"):
        lsqr(wide, b)
    for option, value, error in (
            ("damp", -0.1, ValueError), ("damp", np.inf, ValueError), ("damp", "0.1", TypeError),
            ("damp", 1j, TypeError), ("atol", -1e-6, ValueError), ("btol", np.nan, ValueError),
            ("atol", None, TypeError), ("conlim", -1.0, ValueError),
            ("iter_lim", -1, ValueError), ("iter_lim", 2.5, ValueError),
            ("iter_lim", True, TypeError)):
        with pytest.raises(error, match=f"lsqr: {option} is"):
            lsqr(wide, b4, **{option: value})
    # minres: a square system; its parameters; what the device loop cannot call.
    with pytest.raises(ValueError, match="minres: A must be square, not 4x6"):
        minres(wide, b4)
    with pytest.raises(TypeError, match="minres: real float32 or float64 systems only, not int64"):
        minres(client.from_numpy(np.eye(6, dtype=np.int64)),
               client.from_numpy(np.ones(6, np.int64)))
    for option, value, error in (
            ("rtol", -1e-5, ValueError), ("rtol", np.nan, ValueError), ("rtol", "1e-5", TypeError),
            ("shift", np.nan, ValueError), ("shift", -np.inf, ValueError),
            ("shift", 1j, TypeError), ("maxiter", -3, ValueError), ("maxiter", "10", TypeError),
            ("maxiter", np.inf, ValueError), ("maxiter", 1j, TypeError)):
        with pytest.raises(error, match=f"minres: {option} is"):
            minres(a, b, **{option: value})
    # M: an n x n csr_matrix or 2-D DistributedArray of A's dtype; what runs on the host
    # (SciPy's matrices and operators, functions, NumPy arrays) is refused as cg refuses it.
    for host_m in (s, scipy_linalg.aslinearoperator(s), lambda r: r, s.toarray(),
                   client.from_numpy(rhs(rng, 6))):  # the last one 1-D
        with pytest.raises(NotImplementedError,
                           match="minres: M is served as a distarray.sparse.csr_matrix or a 2-D "
                                 "DistributedArray"):
            minres(a, b, M=host_m)
    with pytest.raises(ValueError, match=r"minres: M has shape \(5, 5\); A is 6x6"):
        minres(a, b, M=distarray.sparse.csr_matrix(np.eye(5), client=client))
    with pytest.raises(ValueError, match=r"minres: M has shape \(6, 5\); A is 6x6"):
        minres(a, b, M=client.from_numpy(np.eye(6, 5)))
    with pytest.raises(TypeError, match="minres: M is float32, A is float64"):
        minres(a, b, M=client.from_numpy(np.eye(6, dtype=np.float32)))
    with pytest.raises(TypeError, match="minres: M is float32, A is float64"):
        minres(a, b, M=distarray.sparse.csr_matrix(np.eye(6, dtype=np.float32), client=client))
    with pytest.raises(NotImplementedError, match="minres: callback is not served"):
        minres(a, b, callback=lambda xk: None)
    # Positional misuse: minres's options are keywords, as SciPy's.
    with pytest.raises(TypeError):
        minres(a, b, None, 1e-5)
    assert_intact(keep, keep_np)
