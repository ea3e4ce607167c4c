"""MINRES (``scipy.sparse.linalg.minres``, SciPy 1.17's) as one RunGraph."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from ... import _functions as f
from ..._array import DistributedArray
from ..._graph import Var
from ._common import (
    _check_system, _check_x0, _check_preconditioner, _nonnegative, _finite, _iteration_limit,
    _refuse, _norm, _Solve)


_MINRES_MESSAGES = {
    -1: "beta2 = 0.  If M = I, b and x are eigenvectors",
    0: "beta1 = 0.  The exact solution is x0",
    1: "A solution to Ax = b was found, given rtol",
    2: "A least-squares solution was found, given rtol",
    3: "Reasonable accuracy achieved, given eps",
    4: "x has converged to an eigenvector",
    5: "acond has exceeded 0.1/eps",
    6: "The iteration limit was reached",
}


def minres(A: Any, b: DistributedArray, x0: Optional[DistributedArray] = None, *,
           rtol: float = 1e-5, shift: float = 0.0, maxiter: Optional[int] = None, M: Any = None,
           callback: Any = None, show: bool = False, check: bool = False,
           timeout: Optional[float] = None) -> Tuple[DistributedArray, int]:
    """MINRES for a symmetric (possibly indefinite or singular) A, solving (A - shift I) x = b,
    as ``scipy.sparse.linalg.minres`` (Paige and Saunders; SciPy 1.17's algorithm and stopping
    tests): returns ``(x, info)``, info 0 when a stopping test other than the cap ended the
    iteration, else ``maxiter`` (default 5 n).

    ``M``, the preconditioner (an approximation of A's inverse, symmetric positive definite,
    even where A is indefinite), is an n x n ``csr_matrix`` or 2-D DistributedArray of A's
    dtype, applied on the devices each iteration (SciPy's preconditioned Lanczos recurrence, so
    the same iterates). As SciPy's, an M whose r^T M r is negative for a residual r the solve
    meets raises ValueError: "indefinite preconditioner" for the first residual, "non-symmetric
    matrix" for a later one (both name M); r^T M r = 0 for the first residual returns x0 (or 0)
    with info 0. An M that is indefinite elsewhere goes unnoticed, as in SciPy.

    ``check=True`` tests A's symmetry, and M's where given, as SciPy does, on the devices before
    the iteration, and raises ValueError ("non-symmetric matrix", "non-symmetric
    preconditioner"). ``callback`` is not served (the loop runs on the devices): give None.
    ``show`` prints SciPy's opening and closing lines, not its per-iteration ones. ``rtol`` is a
    number >= 0, ``shift`` a finite one."""
    what = "minres"
    _refuse(what, callback=callback)
    m, n = _check_system(A, b, what)
    if m != n:
        raise ValueError(f"{what}: A must be square, not {m}x{n}")
    _check_x0(x0, n, b.dtype, what)
    _check_preconditioner(M, n, b.dtype, what)
    rtol = _nonnegative(rtol, "rtol", what)
    shift = _finite(shift, "shift", what)
    maxiter = _iteration_limit(maxiter, 5 * n, "maxiter", what)
    eps = float(np.finfo(b.dtype).eps)
    if show:
        print("Enter minres.   Solution of symmetric Ax = b")
        print(f"Enter minres.   n      =  {n:3g}     shift  =  {shift:23.14e}")
        print(f"Enter minres.   itnlim =  {maxiter:3g}     rtol   =  {rtol:11.2e}")
        print()

    s = _Solve(A, b)
    one = s.one
    zero = one * 0.0
    # SciPy's psolve: y = M r (r itself without M), the product landing in A's rows' layout.
    precondition = (lambda r: r) if M is None else s.times_by(M)
    # Every vector stays split as A's rows; only the Lanczos vector is gathered, once per
    # iteration, for the product (and the new residual, for M's, where M is given).
    bv = s.b()
    x = s.x0(s.rows) if x0 is not None else bv * 0.0
    r1 = bv - s.times(x) if x0 is not None else bv * 1.0
    y = precondition(r1)
    beta1sq = s.scalar(f.sum(r1 * y))
    bnorm = s.scalar(_norm(bv))
    beta1 = f.sqrt(beta1sq)
    values: Dict[str, Var] = {}
    # SciPy raises for r1^T M r1 < 0 (only an M can make it so), returns x (x0 or 0) where it is
    # 0, else b where b = 0, before any iteration.
    start = f.logical_and(beta1sq != 0, bnorm != 0)
    if M is not None:
        values["indefinite"] = beta1sq < 0
        start = f.logical_and(start, f.logical_not(values["indefinite"]))
    if check:  # ||A y||^2 against y^T A (A y), y = M r1, to eps^(1/3) of the former (SciPy's)
        ay = s.times(y)
        ss = s.scalar(f.sum(ay * ay))
        tt = s.scalar(f.sum(y * s.times(ay)))
        asymmetric = abs(ss - tt) > (ss + eps) * eps ** (1.0 / 3.0)
        values["asymmetric"] = f.logical_and(start, asymmetric)
        start = f.logical_and(start, f.logical_not(asymmetric))
        if M is not None:  # y^T y = r1^T M^T M r1 against r1^T M (M r1), likewise
            ss = s.scalar(f.sum(y * y))
            tt = s.scalar(f.sum(r1 * precondition(y)))
            asymmetric = abs(ss - tt) > (ss + eps) * eps ** (1.0 / 3.0)
            values["asymmetric_m"] = f.logical_and(start, asymmetric)
            start = f.logical_and(start, f.logical_not(asymmetric))
    state = dict(
        x=x, r1=r1, r2=r1 * 1.0, w=r1 * 0.0, w2=r1 * 0.0, beta=beta1 * 1.0, oldb=zero * 1.0,
        dbar=zero * 1.0, epsln=zero * 1.0, phibar=beta1 * 1.0, rhs1=beta1 * 1.0,
        rhs2=zero * 1.0, tnorm2=zero * 1.0, gmax=zero * 1.0,
        gmin=one * float(np.finfo(b.dtype).max), cs=zero - 1.0, sn=zero * 1.0,
        arnorm=zero * 1.0, ynorm=zero * 1.0, istop=zero * 1.0, itn=zero * 1.0)
    vectors = {k: s.rows for k in ("x", "r1", "r2", "w", "w2")}
    if M is not None:  # without M, y is r2 at the top of each iteration
        state["y"] = y
        vectors["y"] = s.rows

    def cond(c):
        return f.logical_and(f.logical_and(start, c["istop"] == 0), c["itn"] < maxiter)

    def body(c):
        itn = c["itn"] + 1.0
        # The Lanczos step (y = M r2, and r2 itself without M).
        beta = c["beta"]
        v = (c["r2"] if M is None else c["y"]) * (1.0 / beta)
        y = s.times(v)
        if shift != 0:
            y = y - shift * v
        y = y - f.where(itn >= 2, beta / f.where(c["oldb"] != 0, c["oldb"], 1.0), 0.0) * c["r1"]
        alfa = s.scalar(f.sum(v * y))
        y = y - (alfa / beta) * c["r2"]
        r1, r2 = c["r2"], y
        y = precondition(r2)
        oldb = beta
        betasq = s.scalar(f.sum(r2 * y))
        beta = f.sqrt(betasq)
        tnorm2 = c["tnorm2"] + (alfa * alfa + oldb * oldb + beta * beta)
        # Abar = const I: one iteration solves it (SciPy's istop -1, "terminate later").
        istop = f.where(f.logical_and(itn == 1, beta / beta1 <= 10 * eps), -1.0, c["istop"])
        # The previous rotation, then the next one.
        cs, sn, dbar = c["cs"], c["sn"], c["dbar"]
        oldeps = c["epsln"]
        delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        epsln = sn * beta
        dbar = -cs * beta
        root = f.sqrt(gbar * gbar + dbar * dbar)
        arnorm = c["phibar"] * root
        gamma = f.maximum(f.sqrt(gbar * gbar + beta * beta), eps)
        cs = gbar / gamma
        sn = beta / gamma
        phi = cs * c["phibar"]
        phibar = sn * c["phibar"]
        # Updates of the search directions and x.
        denom = 1.0 / gamma
        w1, w2 = c["w2"], c["w"]
        w = (v - oldeps * w1 - delta * w2) * denom
        x = c["x"] + phi * w
        gmax = f.maximum(c["gmax"], gamma)
        gmin = f.minimum(c["gmin"], gamma)
        z = c["rhs1"] / gamma
        rhs1 = c["rhs2"] - delta * z
        rhs2 = -epsln * z
        # The norm estimates and the stopping tests, in SciPy's order (a later test wins), run
        # only while no earlier iteration has set istop.
        anorm = f.sqrt(tnorm2)
        ynorm = s.scalar(_norm(x))
        epsx = anorm * ynorm * eps
        rnorm = phibar
        product = anorm * ynorm
        test1 = f.where(product == 0, np.inf, rnorm / f.where(product == 0, 1.0, product))
        test2 = f.where(anorm == 0, np.inf, root / f.where(anorm == 0, 1.0, anorm))
        acond = gmax / gmin
        new = f.where(1.0 + test2 <= 1.0, 2.0, zero)
        new = f.where(1.0 + test1 <= 1.0, 1.0, new)
        new = f.where(itn >= maxiter, 6.0, new)
        new = f.where(acond >= 0.1 / eps, 4.0, new)
        new = f.where(epsx >= beta1, 3.0, new)
        new = f.where(test2 <= rtol, 2.0, new)
        new = f.where(test1 <= rtol, 1.0, new)
        istop = f.where(istop == 0, new, istop)
        carried = dict(
            x=x, r1=r1, r2=r2, w=w, w2=w2, beta=beta, oldb=oldb, dbar=dbar, epsln=epsln,
            phibar=phibar, rhs1=rhs1, rhs2=rhs2, tnorm2=tnorm2, gmax=gmax, gmin=gmin, cs=cs,
            sn=sn, arnorm=arnorm, ynorm=ynorm, istop=istop, itn=itn)
        if M is not None:
            # r2^T M r2 < 0: SciPy raises ("non-symmetric matrix") before this iteration's
            # updates; -2, a code of this loop's own, stops it, and the host raises.
            carried.update(y=y, istop=f.where(betasq < 0, -2.0, istop))
        return carried

    out = s.loop(state, vectors, cond, body, maxiter)
    values.update(istop=out["istop"], itn=out["itn"], started=start)
    if show:
        values.update(anorm=f.sqrt(out["tnorm2"]), acond=out["gmax"] / out["gmin"],
                      rnorm=out["phibar"] * 1.0, ynorm=out["ynorm"], arnorm=out["arnorm"])
    # b itself where b = 0 (and r1 != 0), as SciPy returns.
    x = f.where(f.logical_and(beta1sq != 0, bnorm == 0), bv, out["x"])
    arrays, r = s.run(b, x0, {"x": x}, values, timeout)
    if M is not None and r["indefinite"]:
        raise ValueError(f"{what}: indefinite preconditioner M (r^T M r < 0 for the first "
                         "residual r = b - A x0, or b without x0)")
    if check and r["asymmetric"]:
        raise ValueError(f"{what}: non-symmetric matrix A (check=True)")
    if check and M is not None and r["asymmetric_m"]:
        raise ValueError(f"{what}: non-symmetric preconditioner M (check=True)")
    istop, itn = int(r["istop"]), int(r["itn"])
    if istop == -2:
        # SciPy's message; with A's symmetry unchecked there, it names the matrix, but only an M
        # that is not positive definite makes r^T M r negative.
        raise ValueError(f"{what}: non-symmetric matrix (SciPy's error): r^T M r < 0 for the "
                         f"residual of iteration {itn}, so M is not positive definite")
    if show and r["started"]:
        last = "Exit  minres.   "
        print()
        print(last + f" istop   =  {istop:3g}               itn   ={itn:5g}")
        print(last + f" Anorm   =  {r['anorm']:12.4e}      Acond =  {r['acond']:12.4e}")
        print(last + f" rnorm   =  {r['rnorm']:12.4e}      ynorm =  {r['ynorm']:12.4e}")
        print(last + f" Arnorm  =  {r['arnorm']:12.4e}")
        print(last + _MINRES_MESSAGES[istop])
    return arrays["x"], maxiter if istop == 6 else 0
