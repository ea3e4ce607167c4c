"""Iterative solvers in SciPy's signatures (``scipy.sparse.linalg``), each traced into one
RunGraph program: the whole iteration, its convergence test included, runs on the devices with
no host round trip; the response carries the solution (an array) and the small results.

``A`` is a ``distarray.sparse.csr_matrix`` (or a dense 2-D DistributedArray for ``cg``); ``b``
a 1-D DistributedArray. Vectors of A's rows stay split as A's row blocks; vectors of its columns
are kept whole on every device of a block (where ``A @ x`` reads them without a copy), and the
transposed products' partial sums are combined once per iteration.

Real float32 and float64 systems; complex ones are refused (TypeError).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import _functions as f
from .._array import DistributedArray
from .._graph import Program, Var
from ._csr import csr_matrix

__all__ = ["cg", "lsmr"]


def _check_system(A: Any, b: Any, what: str) -> Tuple[int, int]:
    if not isinstance(b, DistributedArray):
        raise TypeError(f"{what}: b is a DistributedArray (upload NumPy arrays with from_numpy)")
    if isinstance(A, csr_matrix):
        shape, dtype = A.shape, A.dtype
    elif isinstance(A, DistributedArray) and A.ndim == 2:
        shape, dtype = tuple(A.shape), np.dtype(A.dtype)
    else:
        raise TypeError(f"{what}: A is a distarray.sparse.csr_matrix or a 2-D DistributedArray")
    if np.dtype(dtype).kind != "f":
        raise TypeError(f"{what}: real float32 or float64 systems only, not {np.dtype(dtype).name}")
    if b.ndim != 1 or b.shape[0] != shape[0]:
        raise ValueError(f"{what}: b has shape {tuple(b.shape)}; A is {shape[0]}x{shape[1]}")
    if np.dtype(b.dtype) != np.dtype(dtype):
        raise TypeError(f"{what}: b is {np.dtype(b.dtype).name}, A is {np.dtype(dtype).name}")
    return int(shape[0]), int(shape[1])


def _layouts(A: Any) -> Tuple[dict, dict]:
    """(rows, columns): where A @ x puts its rows, and where A @ x reads x without a copy."""
    if isinstance(A, csr_matrix):
        return A.row_index_map(), A.column_index_map()
    from .._index_map import from_proto_index_map

    n = A.shape[1]
    devices = sorted({c.device for c in A._info.index_map.chunks}) or [0]
    rows: dict = {}
    for device, chunks in from_proto_index_map(A._info.index_map).items():
        rows.setdefault(device, []).extend((c[0],) for c in chunks)
    return rows, {d: [(slice(0, n),)] for d in devices}


def _matvec(A: Any, x: Var) -> Var:
    if isinstance(A, csr_matrix):
        return A @ x
    return x.program.capture(A) @ x


def _norm(x: Var) -> Var:
    return f.sqrt(f.sum(x * x))


def _sym_ortho(a: Var, b: Var) -> Tuple[Var, Var, Var]:
    """SciPy's stable Givens rotation (c, s, r) with r = hypot(a, b) >= 0, c = a / r, s = b / r,
    and (0, 0, 0) for a = b = 0."""
    r = f.hypot(a, b)
    safe = f.where(r == 0, 1.0, r)
    return a / safe, b / safe, r


def _scalar_layout(cols: dict) -> dict:
    """Where a solver keeps its 0-d values: a copy on every device of the system, so they
    broadcast into the vectors' chunks without a copy, and a loop carries them in one layout."""
    return {device: [()] for device in cols}


def _constant(program: Program, client: Any, dtype: Any, scalars: dict) -> Var:
    """A 0-d 1 of `dtype` in the scalars' layout, an input of the program (constants derive
    from it)."""
    return program.capture(client.from_numpy(np.ones((), dtype=dtype), scalars))


def _carried(value: Var, layout: dict, ndim: int) -> Var:
    """`value` in the layout a loop carries it in (REPLICA)."""
    return value.reshard(layout, "replica", ndim=ndim)


def cg(A: Any, b: DistributedArray, x0: Optional[DistributedArray] = None, *, rtol: float = 1e-5,
       atol: float = 0.0, maxiter: Optional[int] = None, M: Any = None,
       callback: Any = None, timeout: Optional[float] = None) -> Tuple[DistributedArray, int]:
    """Conjugate gradients for a symmetric positive definite A, as ``scipy.sparse.linalg.cg``:
    returns ``(x, info)``, info 0 when ||b - A x|| < max(atol, rtol ||b||) was reached, else the
    iterations run (``maxiter``, default 10 n). ``M`` and ``callback`` are not served (the loop
    runs on the devices): give None."""
    if M is not None or callback is not None:
        raise NotImplementedError("cg: M (preconditioner) and callback are not served")
    m, n = _check_system(A, b, "cg")
    if m != n:
        raise ValueError(f"cg: A must be square, not {m}x{n}")
    maxiter = 10 * n if maxiter is None else int(maxiter)
    client = b._client
    rows, cols = _layouts(A)
    dtype = np.dtype(b.dtype)
    p = Program()
    scalars = _scalar_layout(cols)
    one = _constant(p, client, dtype, scalars)
    bv = p.input("b").reshard(cols, "replica", ndim=1)
    x = (p.input("x0") if x0 is not None else bv * 0.0).reshard(cols, "replica", ndim=1)
    r = bv - _matvec(A, x).reshard(cols, "replica", ndim=1) if x0 is not None else bv * 1.0
    bnrm2 = _carried(_norm(bv), scalars, 0)
    tol = f.maximum(one * atol, bnrm2 * rtol)
    k = one * 0.0
    rho_prev = one * 1.0
    direction = r * 0.0
    if maxiter > 0:
        def cond(state):
            x, r, d, rho_prev, k = state
            return f.logical_and(k < maxiter, _norm(r) >= tol)

        def body(state):
            x, r, d, rho_prev, k = state
            rho = _carried(f.sum(r * r), scalars, 0)
            beta = f.where(k > 0, rho / rho_prev, 0.0)
            d = r + beta * d
            q = _matvec(A, d).reshard(cols, "replica", ndim=1)
            alpha = rho / f.sum(d * q)
            return x + alpha * d, r - alpha * q, d, rho, k + 1.0

        x, r, direction, rho_prev, k = p.while_loop(cond, body, (x, r, direction, rho_prev, k),
                                                    max_iterations=maxiter)
    p.output("x", x)
    p.value_output("k", k)
    p.value_output("bnrm2", bnrm2)
    arguments = {"b": b}
    if x0 is not None:
        arguments["x0"] = x0
    run = client.run_graph(p, arguments, timeout=timeout)
    iterations = int(run.values["k"])
    if float(run.values["bnrm2"]) == 0:
        return run.outputs["x"], 0
    return run.outputs["x"], 0 if iterations < maxiter else iterations


def lsmr(A: Any, b: DistributedArray, damp: float = 0.0, atol: float = 1e-6, btol: float = 1e-6,
         conlim: float = 1e8, maxiter: Optional[int] = None, show: bool = False,
         x0: Optional[DistributedArray] = None, *, timeout: Optional[float] = None):
    """LSMR for min ||b - A x||^2 + damp^2 ||x||^2, as ``scipy.sparse.linalg.lsmr`` (Fong and
    Saunders): returns ``(x, istop, itn, normr, normar, norma, conda, normx)`` with SciPy's
    meanings. ``maxiter`` defaults to min(m, n), as SciPy's. The whole solve is one RunGraph."""
    m, n = _check_system(A, b, "lsmr")
    if not isinstance(A, csr_matrix):
        raise TypeError("lsmr: A is a distarray.sparse.csr_matrix")
    maxiter = min(m, n) if maxiter is None else int(maxiter)
    client = b._client
    rows, cols = _layouts(A)
    dtype = np.dtype(b.dtype)
    At = A.T
    p = Program()
    scalars = _scalar_layout(cols)
    one = _constant(p, client, dtype, scalars)
    zero = one * 0.0

    def at_times(u: Var) -> Var:
        return (At @ u).reshard(cols, "replica", ndim=1)

    bv = p.input("b").reshard(rows, "replica", ndim=1)
    normb = _norm(bv)
    x = p.input("x0").reshard(cols, "replica", ndim=1) if x0 is not None else None
    u = bv - (A @ x) if x is not None else bv * 1.0
    beta = _norm(u)
    u = u * (1.0 / f.where(beta > 0, beta, 1.0))
    v = at_times(u)
    alpha = f.where(beta > 0, _norm(v), zero)
    v = v * (1.0 / f.where(alpha > 0, alpha, 1.0))
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
    vectors = {"x": cols, "u": rows, "v": cols, "h": cols, "hbar": cols}

    def carried(values: dict) -> dict:
        return {k: _carried(v, vectors[k], 1) if k in vectors else _carried(v, scalars, 0)
                for k, v in values.items()}

    state = carried(state)
    names = list(state)
    ctol = 1.0 / conlim if conlim > 0 else 0.0

    def cond(values):
        s = dict(zip(names, values))
        return f.logical_and(s["istop"] == 0, s["normar"] != 0)

    def body(values):
        s = dict(zip(names, values))
        itn = s["itn"] + 1.0
        # Bidiagonalization.
        u = (A @ s["v"]) - s["alpha"] * s["u"]
        beta = _carried(_norm(u), scalars, 0)
        positive = beta > 0
        u = u * (1.0 / f.where(positive, beta, 1.0))
        v = f.where(positive, at_times(u) - beta * s["v"], s["v"])
        alpha = f.where(positive, _carried(_norm(v), scalars, 0), s["alpha"])
        v = v * (1.0 / f.where(f.logical_and(positive, alpha > 0), alpha, 1.0))
        # Rotations: eliminate damp, then the subdiagonal.
        chat, shat, alphahat = _sym_ortho(s["alphabar"], zero + damp)
        rhoold = s["rho"]
        c, sn, rho = _sym_ortho(alphahat, beta)
        thetanew = sn * alpha
        alphabar = c * alpha
        rhobarold = s["rhobar"]
        zetaold = s["zeta"]
        thetabar = s["sbar"] * rho
        rhotemp = s["cbar"] * rho
        cbar, sbar, rhobar = _sym_ortho(s["cbar"] * rho, thetanew)
        zeta = cbar * s["zetabar"]
        zetabar = -sbar * s["zetabar"]
        # Updates of h, hbar and x.
        hbar = s["h"] - (thetabar * rho / (rhoold * rhobarold)) * s["hbar"]
        x = s["x"] + (zeta / (rho * rhobar)) * hbar
        h = v - (thetanew / rho) * s["h"]
        # The estimate of ||r||.
        betaacute = chat * s["betadd"]
        betacheck = -shat * s["betadd"]
        betahat = c * betaacute
        betadd = -sn * betaacute
        thetatildeold = s["thetatilde"]
        ctildeold, stildeold, rhotildeold = _sym_ortho(s["rhodold"], thetabar)
        thetatilde = stildeold * rhobar
        rhodold = ctildeold * rhobar
        betad = -stildeold * s["betad"] + ctildeold * betahat
        tautildeold = (zetaold - thetatildeold * s["tautildeold"]) / rhotildeold
        taud = (zeta - thetatilde * tautildeold) / rhodold
        d = s["d"] + betacheck * betacheck
        normr = f.sqrt(d + (betad - taud) * (betad - taud) + betadd * betadd)
        # The estimates of ||A|| and cond(A).
        normA2 = s["normA2"] + beta * beta
        normA = f.sqrt(normA2)
        normA2 = normA2 + alpha * alpha
        maxrbar = f.maximum(s["maxrbar"], rhobarold)
        minrbar = f.where(itn > 1, f.minimum(s["minrbar"], rhobarold), s["minrbar"])
        condA = f.maximum(maxrbar, rhotemp) / f.minimum(minrbar, rhotemp)
        # The stopping tests, in SciPy's order (a later test wins).
        normar = abs(zetabar)
        normx = _carried(_norm(x), scalars, 0)
        test1 = normr / normb
        product = normA * normr
        test2 = f.where(product != 0, normar / f.where(product != 0, product, 1.0), np.inf)
        test3 = 1.0 / condA
        t1 = test1 / (1.0 + normA * normx / normb)
        rtol = btol + atol * normA * normx / normb
        istop = f.where(itn >= maxiter, 7.0, 0.0)
        istop = f.where(1.0 + test3 <= 1.0, 6.0, istop)
        istop = f.where(1.0 + test2 <= 1.0, 5.0, istop)
        istop = f.where(1.0 + t1 <= 1.0, 4.0, istop)
        istop = f.where(test3 <= ctol, 3.0, istop)
        istop = f.where(test2 <= atol, 2.0, istop)
        istop = f.where(test1 <= rtol, 1.0, istop)
        new = dict(
            x=x, u=u, v=v, h=h, hbar=hbar, alpha=alpha, beta=beta, zetabar=zetabar,
            alphabar=alphabar, rho=rho, rhobar=rhobar, cbar=cbar, sbar=sbar, betadd=betadd,
            betad=betad, rhodold=rhodold, tautildeold=tautildeold, thetatilde=thetatilde,
            zeta=zeta, d=d, normA2=normA2, maxrbar=maxrbar, minrbar=minrbar, normA=normA,
            condA=condA, normx=normx, normr=normr, normar=normar, istop=istop, itn=itn)
        # Every value is already in its loop layout (the reductions were moved there, and an
        # elementwise result takes its first array operand's), so the loop carries it into its
        # slot without a copy.
        return tuple(new[k] for k in names)

    values = tuple(state[k] for k in names)
    if maxiter > 0:
        values = p.while_loop(cond, body, values, max_iterations=maxiter)
    out = dict(zip(names, values))
    p.output("x", out["x"])
    for k in ("istop", "itn", "normr", "normar", "normA", "condA", "normx"):
        p.value_output(k, out[k])
    arguments = {"b": b}
    if x0 is not None:
        arguments["x0"] = x0
    run = client.run_graph(p, arguments, timeout=timeout)
    v = {k: float(run.values[k]) for k in ("istop", "itn", "normr", "normar", "normA", "condA",
                                          "normx")}
    return (run.outputs["x"], int(v["istop"]), int(v["itn"]), v["normr"], v["normar"],
            v["normA"], v["condA"], v["normx"])
