"""distarray.sparse.linalg's lsqr and minres against scipy.sparse.linalg's, in float64 on fresh
random sparse systems, on one device and split over several (plus one float32 solve each).

- lsqr: every field of SciPy's tuple (x, istop, itn, r1norm, r2norm, anorm, acond, arnorm, xnorm,
  var with calc_var) on well-conditioned tall, wide, square-singular and damped systems, x0
  given or not; the iteration cap (the same iterates as SciPy's, field for field); an
  ill-conditioned system, where x must meet the stopping test its istop names, the norm
  estimates must be x's and the others near SciPy's; b = 0.
- minres: x and info on symmetric indefinite systems, shifted, singular, with x0, with a dense
  operator, and ill-conditioned; the exact iteration count (SciPy's, through the cap: one
  iteration fewer stops short with info = maxiter and SciPy's iterate, SciPy's count converges);
  SciPy's early exits (b = 0, x0 exact, A = c I) and check=True.
- bad input of either: wrong types, shapes, dtypes, complex systems and invalid parameters fail
  before any work, naming the argument, and leave other arrays intact.
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


def test_minres_float32(client, rng, capsys):
    """float32: info 0 and x within 1e-4 of SciPy's float64 solve at rtol 1e-5; a whole float
    maxiter is taken; show=True prints SciPy's opening and closing lines."""
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
    with pytest.raises(NotImplementedError, match="minres: M is not served"):
        minres(a, b, M=a)
    with pytest.raises(NotImplementedError, match="minres: callback is not served"):
        minres(a, b, callback=lambda xk: None)
    # Positional misuse: minres's options are keywords, as SciPy's.
    with pytest.raises(TypeError):
        minres(a, b, None, 1e-5)
    assert_intact(keep, keep_np)
