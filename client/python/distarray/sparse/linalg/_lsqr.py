"""LSQR (``scipy.sparse.linalg.lsqr``, Paige and Saunders) as one RunGraph."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import _functions as f
from ..._array import DistributedArray
from .._csr import csr_matrix
from ._common import (
    _check_system, _check_x0, _nonnegative, _iteration_limit, _norm, _sym_ortho, _Solve,
    _bidiagonalization_start, _bidiagonalization_step, _least_squares_istop)


_LSQR_MESSAGES = (
    "The exact solution is  x = 0",
    "Ax - b is small enough, given atol, btol",
    "The least-squares solution is good enough, given atol",
    "The estimate of cond(Abar) has exceeded conlim",
    "Ax - b is small enough for this machine",
    "The least-squares solution is good enough for this machine",
    "Cond(Abar) seems to be too large for this machine",
    "The iteration limit has been reached",
)


def lsqr(A: Any, b: DistributedArray, damp: float = 0.0, atol: float = 1e-6, btol: float = 1e-6,
         conlim: float = 1e8, iter_lim: Optional[int] = None, show: bool = False,
         calc_var: bool = False, x0: Optional[DistributedArray] = None, *,
         timeout: Optional[float] = None):
    """LSQR for min ||b - A x||^2 + damp^2 ||x||^2, as ``scipy.sparse.linalg.lsqr`` (Paige and
    Saunders): returns ``(x, istop, itn, r1norm, r2norm, anorm, acond, arnorm, xnorm, var)``
    with SciPy's meanings. x and var are DistributedArrays (var: with ``calc_var``, the
    estimate of diag((A^T A + damp^2 I)^-1) SciPy's recurrence gives; else n zeros, as SciPy's);
    the others are Python numbers. ``iter_lim`` defaults to 2 n, as SciPy's.

    The whole solve is one RunGraph, so ``show`` prints SciPy's opening and closing lines but
    not its per-iteration ones. ``damp``, ``atol``, ``btol`` and ``conlim`` are numbers >= 0
    (``damp`` finite; ``conlim`` 0 turns its test off, as SciPy's)."""
    what = "lsqr"
    m, n = _check_system(A, b, what)
    if not isinstance(A, csr_matrix):
        raise TypeError(f"{what}: A is a distarray.sparse.csr_matrix")
    _check_x0(x0, n, b.dtype, what)
    damp = _nonnegative(damp, "damp", what, finite=True)
    atol = _nonnegative(atol, "atol", what)
    btol = _nonnegative(btol, "btol", what)
    conlim = _nonnegative(conlim, "conlim", what)
    iter_lim = _iteration_limit(iter_lim, 2 * n, "iter_lim", what)
    calc_var = bool(calc_var)
    eps = float(np.finfo(np.float64).eps)  # SciPy's, whatever the dtype
    dampsq = damp * damp
    ctol = 1.0 / conlim if conlim > 0 else 0.0
    if show:
        print("\nLSQR            Least-squares solution of  Ax = b")
        print(f"The matrix A has {m} rows and {n} columns")
        print(f"damp = {damp:20.14e}   calc_var = {calc_var:8g}")
        print(f"atol = {atol:8.2e}                 conlim = {conlim:8.2e}")
        print(f"btol = {btol:8.2e}               iter_lim = {iter_lim:8g}")

    s = _Solve(A, b)
    zero = s.one * 0.0
    bv = s.b()
    bnorm = s.scalar(_norm(bv))
    x = s.x0(s.cols) if x0 is not None else None
    u, v, alpha, beta = _bidiagonalization_start(s, bv, x)
    if x is None:
        x = v * 0.0
    arnorm0 = s.scalar(alpha * beta)  # 0: x is the answer, no iteration (SciPy's first exit)
    state = dict(
        x=x, u=u, v=v, w=v * 1.0, alpha=alpha, rhobar=alpha * 1.0, phibar=beta * 1.0,
        anorm=zero * 1.0, ddnorm=zero * 1.0, res2=zero * 1.0, xxnorm=zero * 1.0,
        z=zero * 1.0, cs2=zero - 1.0, sn2=zero * 1.0, r1norm=beta * 1.0, r2norm=beta * 1.0,
        acond=zero * 1.0, arnorm=alpha * beta, xnorm=zero * 1.0, istop=zero * 1.0,
        itn=zero * 1.0)
    vectors = {"x": s.cols, "u": s.rows, "v": s.cols, "w": s.cols}
    zeros = v * 0.0  # var without calc_var
    if calc_var:
        state["var"] = zeros
        vectors["var"] = s.cols

    def cond(c):
        return f.logical_and(c["istop"] == 0, arnorm0 != 0)

    def body(c):
        itn = c["itn"] + 1.0
        # The bidiagonalization; ||A|| grows by the old alpha and the new beta where beta > 0.
        u, v, alpha, beta, positive = _bidiagonalization_step(s, c["u"], c["v"], c["alpha"])
        anorm = f.where(positive, f.sqrt(c["anorm"] * c["anorm"] + c["alpha"] * c["alpha"]
                                         + beta * beta + dampsq), c["anorm"])
        # A rotation eliminates the damping (SciPy's branch on damp > 0, taken here at trace).
        rhobar, phibar = c["rhobar"], c["phibar"]
        if damp > 0:
            rhobar1 = f.sqrt(rhobar * rhobar + dampsq)
            cs1 = rhobar / rhobar1
            sn1 = damp / rhobar1
            psi = sn1 * phibar
            phibar = cs1 * phibar
        else:
            rhobar1 = rhobar
            psi = None
        # Another eliminates the subdiagonal beta: upper bidiagonal.
        cs, sn, rho = _sym_ortho(rhobar1, beta)
        theta = sn * alpha
        rhobar = -cs * alpha
        phi = cs * phibar
        phibar = sn * phibar
        tau = sn * phi
        # Updates of x and w.
        t1 = phi / rho
        t2 = -theta / rho
        dk = (1.0 / rho) * c["w"]
        x = c["x"] + t1 * c["w"]
        w = v + t2 * c["w"]
        ddnorm = c["ddnorm"] + s.scalar(f.sum(dk * dk))
        # A rotation on the right eliminates theta; it gives the estimate of ||x||.
        delta = c["sn2"] * rho
        gambar = -c["cs2"] * rho
        rhs = phi - delta * c["z"]
        zbar = rhs / gambar
        xnorm = f.sqrt(c["xxnorm"] + zbar * zbar)
        gamma = f.sqrt(gambar * gambar + theta * theta)
        cs2 = gambar / gamma
        sn2 = theta / gamma
        z = rhs / gamma
        xxnorm = c["xxnorm"] + z * z
        # The estimates of cond(Abar), ||rbar|| and ||Abar^T rbar||.
        acond = anorm * f.sqrt(ddnorm)
        res1 = phibar * phibar
        res2 = c["res2"] + psi * psi if psi is not None else c["res2"] * 1.0
        rnorm = f.sqrt(res1 + res2)
        arnorm = alpha * abs(tau)
        if damp > 0:  # r1norm = ||b - A x|| from rnorm^2 - damp^2 ||x||^2, its sign kept
            r1sq = rnorm * rnorm - dampsq * xxnorm
            r1norm = f.sqrt(abs(r1sq))
            r1norm = f.where(r1sq < 0, -r1norm, r1norm)
        else:
            r1norm = rnorm * 1.0
        # The stopping tests.
        test1 = rnorm / bnorm
        test2 = arnorm / (anorm * rnorm + eps)
        test3 = 1.0 / (acond + eps)
        t1 = test1 / (1.0 + anorm * xnorm / bnorm)
        rtol = btol + atol * anorm * xnorm / bnorm
        istop = _least_squares_istop(itn, iter_lim, test1, test2, test3, t1, rtol, atol, ctol)
        new = dict(
            x=x, u=u, v=v, w=w, alpha=alpha, rhobar=rhobar, phibar=phibar, anorm=anorm,
            ddnorm=ddnorm, res2=res2, xxnorm=xxnorm, z=z, cs2=cs2, sn2=sn2, r1norm=r1norm,
            r2norm=rnorm, acond=acond, arnorm=arnorm, xnorm=xnorm, istop=istop, itn=itn)
        if calc_var:
            new["var"] = c["var"] + dk * dk
        return new

    out = s.loop(state, vectors, cond, body, iter_lim)
    names = ("istop", "itn", "r1norm", "r2norm", "anorm", "acond", "arnorm", "xnorm")
    arrays, r = s.run(b, x0, {"x": out["x"], "var": out["var"] if calc_var else zeros},
                      {k: out[k] for k in names}, timeout)
    istop, itn = int(r["istop"]), int(r["itn"])
    if show:
        if itn == 0 and r["arnorm"] == 0:
            print(_LSQR_MESSAGES[0])
        else:
            print("\nLSQR finished")
            print(_LSQR_MESSAGES[istop])
            print(" ")
            print(f"istop ={istop:8g}   r1norm ={r['r1norm']:8.1e}   "
                  f"anorm ={r['anorm']:8.1e}   arnorm ={r['arnorm']:8.1e}")
            print(f"itn   ={itn:8g}   r2norm ={r['r2norm']:8.1e}   "
                  f"acond ={r['acond']:8.1e}   xnorm  ={r['xnorm']:8.1e}")
            print(" ")
    return (arrays["x"], istop, itn, r["r1norm"], r["r2norm"], r["anorm"], r["acond"],
            r["arnorm"], r["xnorm"], arrays["var"])
