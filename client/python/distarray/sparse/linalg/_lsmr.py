"""LSMR (``scipy.sparse.linalg.lsmr``, Fong and Saunders) as one RunGraph."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import _functions as f
from ..._array import DistributedArray
from .._csr import csr_matrix
from ._common import (
    _check_system, _check_x0, _norm, _sym_ortho, _Solve, _bidiagonalization_start,
    _bidiagonalization_step, _least_squares_istop)


def lsmr(A: Any, b: DistributedArray, damp: float = 0.0, atol: float = 1e-6, btol: float = 1e-6,
         conlim: float = 1e8, maxiter: Optional[int] = None, show: bool = False,
         x0: Optional[DistributedArray] = None, *, timeout: Optional[float] = None):
    """LSMR for min ||b - A x||^2 + damp^2 ||x||^2, as ``scipy.sparse.linalg.lsmr`` (Fong and
    Saunders): returns ``(x, istop, itn, normr, normar, norma, conda, normx)`` with SciPy's
    meanings. ``maxiter`` defaults to min(m, n), as SciPy's. The whole solve is one RunGraph."""
    m, n = _check_system(A, b, "lsmr")
    if not isinstance(A, csr_matrix):
        raise TypeError("lsmr: A is a distarray.sparse.csr_matrix")
    _check_x0(x0, n, b.dtype, "lsmr")
    maxiter = min(m, n) if maxiter is None else int(maxiter)
    s = _Solve(A, b)
    one = s.one
    zero = one * 0.0

    bv = s.b()
    normb = _norm(bv)
    x = s.x0(s.cols) if x0 is not None else None
    u, v, alpha, beta = _bidiagonalization_start(s, bv, x)
    if x is None:
        x = v * 0.0
    state = dict(
        x=x, u=u, v=v, h=v * 1.0, hbar=v * 0.0, alpha=alpha, beta=beta,
        zetabar=alpha * beta, alphabar=alpha * 1.0, rho=one * 1.0, rhobar=one * 1.0,
        cbar=one * 1.0, sbar=zero * 1.0, betadd=beta * 1.0, betad=zero * 1.0,
        rhodold=one * 1.0, tautildeold=zero * 1.0, thetatilde=zero * 1.0, zeta=zero * 1.0,
        d=zero * 1.0, normA2=alpha * alpha, maxrbar=zero * 1.0, minrbar=one * 1e100,
        normA=f.sqrt(alpha * alpha), condA=one * 1.0, normx=zero * 1.0, normr=beta * 1.0,
        normar=alpha * beta, istop=zero * 1.0, itn=zero * 1.0)
    vectors = {"x": s.cols, "u": s.rows, "v": s.cols, "h": s.cols, "hbar": s.cols}
    ctol = 1.0 / conlim if conlim > 0 else 0.0

    # SciPy's early exits: A^T r = 0 at the start keeps x (x0 or 0); else b = 0 gives x = 0.
    # Neither iterates.
    normb_scalar = s.scalar(normb)
    zero_b = f.logical_and(normb_scalar == 0, alpha * beta != 0)

    def cond(s_):
        return f.logical_and(f.logical_and(s_["istop"] == 0, s_["normar"] != 0),
                             normb_scalar > 0)

    def body(s_):
        itn = s_["itn"] + 1.0
        u, v, alpha, beta, _ = _bidiagonalization_step(s, s_["u"], s_["v"], s_["alpha"])
        # Rotations: eliminate damp, then the subdiagonal.
        chat, shat, alphahat = _sym_ortho(s_["alphabar"], zero + damp)
        rhoold = s_["rho"]
        c, sn, rho = _sym_ortho(alphahat, beta)
        thetanew = sn * alpha
        alphabar = c * alpha
        rhobarold = s_["rhobar"]
        zetaold = s_["zeta"]
        thetabar = s_["sbar"] * rho
        rhotemp = s_["cbar"] * rho
        cbar, sbar, rhobar = _sym_ortho(s_["cbar"] * rho, thetanew)
        zeta = cbar * s_["zetabar"]
        zetabar = -sbar * s_["zetabar"]
        # Updates of h, hbar and x.
        hbar = s_["h"] - (thetabar * rho / (rhoold * rhobarold)) * s_["hbar"]
        x = s_["x"] + (zeta / (rho * rhobar)) * hbar
        h = v - (thetanew / rho) * s_["h"]
        # The estimate of ||r||.
        betaacute = chat * s_["betadd"]
        betacheck = -shat * s_["betadd"]
        betahat = c * betaacute
        betadd = -sn * betaacute
        thetatildeold = s_["thetatilde"]
        ctildeold, stildeold, rhotildeold = _sym_ortho(s_["rhodold"], thetabar)
        thetatilde = stildeold * rhobar
        rhodold = ctildeold * rhobar
        betad = -stildeold * s_["betad"] + ctildeold * betahat
        tautildeold = (zetaold - thetatildeold * s_["tautildeold"]) / rhotildeold
        taud = (zeta - thetatilde * tautildeold) / rhodold
        d = s_["d"] + betacheck * betacheck
        normr = f.sqrt(d + (betad - taud) * (betad - taud) + betadd * betadd)
        # The estimates of ||A|| and cond(A).
        normA2 = s_["normA2"] + beta * beta
        normA = f.sqrt(normA2)
        normA2 = normA2 + alpha * alpha
        maxrbar = f.maximum(s_["maxrbar"], rhobarold)
        minrbar = f.where(itn > 1, f.minimum(s_["minrbar"], rhobarold), s_["minrbar"])
        condA = f.maximum(maxrbar, rhotemp) / f.minimum(minrbar, rhotemp)
        # The stopping tests.
        normar = abs(zetabar)
        normx = s.scalar(_norm(x))
        test1 = normr / normb
        product = normA * normr
        test2 = f.where(product != 0, normar / f.where(product != 0, product, 1.0), np.inf)
        test3 = 1.0 / condA
        t1 = test1 / (1.0 + normA * normx / normb)
        rtol = btol + atol * normA * normx / normb
        istop = _least_squares_istop(itn, maxiter, test1, test2, test3, t1, rtol, atol, ctol)
        return dict(
            x=x, u=u, v=v, h=h, hbar=hbar, alpha=alpha, beta=beta, zetabar=zetabar,
            alphabar=alphabar, rho=rho, rhobar=rhobar, cbar=cbar, sbar=sbar, betadd=betadd,
            betad=betad, rhodold=rhodold, tautildeold=tautildeold, thetatilde=thetatilde,
            zeta=zeta, d=d, normA2=normA2, maxrbar=maxrbar, minrbar=minrbar, normA=normA,
            condA=condA, normx=normx, normr=normr, normar=normar, istop=istop, itn=itn)

    out = s.loop(state, vectors, cond, body, maxiter)
    names = ("istop", "itn", "normr", "normar", "normA", "condA", "normx")
    x = f.where(zero_b, 0.0, out["x"])
    arrays, v = s.run(b, x0, {"x": x}, {k: out[k] for k in names}, timeout)
    return (arrays["x"], int(v["istop"]), int(v["itn"]), v["normr"], v["normar"],
            v["normA"], v["condA"], v["normx"])
