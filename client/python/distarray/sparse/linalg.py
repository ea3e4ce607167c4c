"""Iterative solvers in SciPy's signatures (``scipy.sparse.linalg``), each traced into one
RunGraph program: the whole iteration, its convergence test included, runs on the devices with
no host round trip; the response carries the solution (an array) and the small results.

``A`` is a ``distarray.sparse.csr_matrix`` (or a dense 2-D DistributedArray for ``cg`` and
``minres``); ``b`` a 1-D DistributedArray. Vectors of A's rows stay split as A's row blocks;
vectors of its columns are kept whole on every device of a block (where ``A @ x`` reads them
without a copy), and the transposed products' partial sums are combined once per iteration.

Real float32 and float64 systems; complex ones are refused (TypeError).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from .. import _functions as f
from .._array import DistributedArray
from .._graph import Program, Var
from ._csr import csr_matrix

__all__ = ["cg", "lsmr", "lsqr", "minres"]


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


def _check_x0(x0: Any, n: int, dtype: Any, what: str) -> None:
    """x0, where given, is a vector of A's columns in A's dtype (checked here, so a wrong one is
    named before any work rather than failing inside the program)."""
    if x0 is None:
        return
    if not isinstance(x0, DistributedArray):
        raise TypeError(f"{what}: x0 is a DistributedArray or None (upload NumPy arrays with "
                        "from_numpy)")
    if x0.ndim != 1 or x0.shape[0] != n:
        raise ValueError(f"{what}: x0 has shape {tuple(x0.shape)}; A has {n} columns")
    if np.dtype(x0.dtype) != np.dtype(dtype):
        raise TypeError(f"{what}: x0 is {np.dtype(x0.dtype).name}, A is {np.dtype(dtype).name}")


def _real(value: Any, name: str, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: {name} is a real number, not {type(value).__name__}")
    return float(value)


def _nonnegative(value: Any, name: str, what: str, *, finite: bool = False) -> float:
    """A tolerance or limit: a real number >= 0 (NaN refused; infinity too where `finite`)."""
    v = _real(value, name, what)
    if not v >= 0 or (finite and math.isinf(v)):
        kind = "a finite number >= 0" if finite else "a number >= 0"
        raise ValueError(f"{what}: {name} is {kind}, not {value!r}")
    return v


def _finite(value: Any, name: str, what: str) -> float:
    v = _real(value, name, what)
    if not math.isfinite(v):
        raise ValueError(f"{what}: {name} is finite, not {value!r}")
    return v


def _iteration_limit(value: Any, default: int, name: str, what: str) -> int:
    """An iteration cap: a whole number >= 0 (0: no iteration, as SciPy; 1e4 is taken, as
    SciPy's loops take it), `default` for None."""
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: {name} is an integer or None, not {type(value).__name__}")
    if not (value >= 0 and math.isfinite(value) and value == int(value)):
        raise ValueError(f"{what}: {name} is a whole number >= 0, not {value!r}")
    return int(value)


def _refuse(what: str, **arguments: Any) -> None:
    """Host-side hooks the device loop cannot call: each given one is refused by name."""
    for name, value in arguments.items():
        if value is not None:
            raise NotImplementedError(
                f"{what}: {name} is not served (the iteration runs on the devices): give None")


def _check_preconditioner(M: Any, n: int, dtype: Any, what: str) -> None:
    """M, when given, is an n x n operator the devices can apply: a csr_matrix or a 2-D
    DistributedArray of the system's dtype (a SciPy LinearOperator or a function runs on the
    host, which the device loop cannot call)."""
    if M is None:
        return
    if isinstance(M, csr_matrix):
        shape, m_dtype = M.shape, np.dtype(M.dtype)
    elif isinstance(M, DistributedArray) and M.ndim == 2:
        shape, m_dtype = tuple(M.shape), np.dtype(M.dtype)
    else:
        raise NotImplementedError(
            f"{what}: M is served as a distarray.sparse.csr_matrix or a 2-D DistributedArray "
            f"(the iteration runs on the devices), not {type(M).__name__}")
    if tuple(shape) != (n, n):
        raise ValueError(f"{what}: M has shape {tuple(shape)}; A is {n}x{n}")
    if m_dtype != np.dtype(dtype):
        raise TypeError(f"{what}: M is {m_dtype.name}, A is {np.dtype(dtype).name}")


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


class _Solve:
    """One solve under construction: its program, the system's layouts, the 0-d values' layout
    and a 0-d 1 (every constant derives from it, so it has that layout and the system's dtype).
    The solvers share the products, the loop over a dict of named values and the run."""

    def __init__(self, A: Any, b: DistributedArray):
        self.A = A
        self.client = b._client
        self.rows, self.cols = _layouts(A)
        self.dtype = np.dtype(b.dtype)
        self.program = Program()
        self.scalars = _scalar_layout(self.cols)
        self.one = _constant(self.program, self.client, self.dtype, self.scalars)

    def scalar(self, value: Var) -> Var:
        """A reduction's result moved to the scalars' layout (as a loop carries it)."""
        return _carried(value, self.scalars, 0)

    def b(self) -> Var:
        """The input b, split as A's rows."""
        return self.program.input("b").reshard(self.rows, "replica", ndim=1)

    def x0(self, layout: dict) -> Var:
        return self.program.input("x0").reshard(layout, "replica", ndim=1)

    def times(self, d: Var) -> Var:
        """A @ d for a square A, d split as the rows: gathered whole on each device for the
        product, and the product back in the rows' layout."""
        return _matvec(self.A, d.reshard(self.cols, "replica", ndim=1)).reshard(
            self.rows, "replica", ndim=1)

    def times_by(self, M: Any) -> Callable[[Var], Var]:
        """r -> M @ r for another square operator M (a preconditioner), r split as A's rows:
        gathered where M's product reads it, the product back in A's rows' layout."""
        _, m_cols = _layouts(M)
        return lambda r: _matvec(M, r.reshard(m_cols, "replica", ndim=1)).reshard(
            self.rows, "replica", ndim=1)

    def rtimes(self, u: Var) -> Var:
        """A.T @ u (u split as the rows): one partial product per block, combined whole on every
        device, where the next A @ v reads it."""
        return (self.A.T @ u).reshard(self.cols, "replica", ndim=1)

    def loop(self, state: Dict[str, Var], vectors: Dict[str, dict],
             cond: Callable[[Dict[str, Var]], Var],
             body: Callable[[Dict[str, Var]], Dict[str, Var]], maxiter: int) -> Dict[str, Var]:
        """``while cond(s): s = body(s)`` over named values, at most `maxiter` times (none for
        0). `vectors` names the 1-D values and their layouts; the others are 0-d. The body must
        return every name, each already in its loop layout (reductions moved with ``scalar``;
        an elementwise result takes its first array operand's), so the loop carries it into
        its slot without a copy."""
        state = {k: _carried(v, vectors[k], 1) if k in vectors else self.scalar(v)
                 for k, v in state.items()}
        if maxiter <= 0:
            return state
        names = list(state)

        def step(values):
            new = body(dict(zip(names, values)))
            if set(new) != set(names):  # a solver's own mistake, named while tracing
                raise AssertionError(f"loop body returned {sorted(new)}, carries {names}")
            return tuple(new[k] for k in names)

        values = self.program.while_loop(lambda values: cond(dict(zip(names, values))), step,
                                         tuple(state[k] for k in names), max_iterations=maxiter)
        return dict(zip(names, values))

    def run(self, b: DistributedArray, x0: Optional[DistributedArray], outputs: Dict[str, Var],
            values: Dict[str, Var], timeout: Optional[float]
            ) -> Tuple[Dict[str, DistributedArray], Dict[str, float]]:
        """One RunGraph call: `outputs` come back as arrays, `values` as Python floats."""
        for name, var in outputs.items():
            self.program.output(name, var)
        for name, var in values.items():
            self.program.value_output(name, var)
        arguments = {"b": b}
        if x0 is not None:
            arguments["x0"] = x0
        run = self.client.run_graph(self.program, arguments, timeout=timeout)
        return run.outputs, {k: float(run.values[k]) for k in values}


def _bidiagonalization_start(s: _Solve, b: Var, x: Optional[Var]
                             ) -> Tuple[Var, Var, Var, Var]:
    """Golub-Kahan's first vectors, as SciPy's LSQR and LSMR start: beta u = b - A x,
    alpha v = A^T u, (u, v) unit where beta, alpha > 0. Returns (u, v, alpha, beta)."""
    u = b - (s.A @ x) if x is not None else b * 1.0
    beta = _norm(u)
    u = u * (1.0 / f.where(beta > 0, beta, 1.0))
    v = s.rtimes(u)
    alpha = f.where(beta > 0, _norm(v), s.one * 0.0)
    v = v * (1.0 / f.where(alpha > 0, alpha, 1.0))
    return u, v, alpha, beta


def _bidiagonalization_step(s: _Solve, u: Var, v: Var, alpha: Var
                            ) -> Tuple[Var, Var, Var, Var, Var]:
    """The next Golub-Kahan step: beta u = A v - alpha u, alpha v = A^T u - beta v, where
    beta > 0 (else u = 0 and v, alpha stay, as SciPy's). Returns (u, v, alpha, beta, beta > 0),
    the 0-d values in the scalars' layout."""
    u = (s.A @ v) - alpha * u
    beta = s.scalar(_norm(u))
    positive = beta > 0
    u = u * (1.0 / f.where(positive, beta, 1.0))
    v = f.where(positive, s.rtimes(u) - beta * v, v)
    alpha = f.where(positive, s.scalar(_norm(v)), alpha)
    v = v * (1.0 / f.where(f.logical_and(positive, alpha > 0), alpha, 1.0))
    return u, v, alpha, beta, positive


def _least_squares_istop(itn: Var, maxiter: int, test1: Var, test2: Var, test3: Var, t1: Var,
                         rtol: Var, atol: float, ctol: float) -> Var:
    """LSQR's and LSMR's stopping code from their tests, in SciPy's order (a later test wins):
    7 the cap, 6/5/4 the machine-precision forms of 3/2/1, 3 cond(A) past conlim, 2 a
    least-squares solution within atol, 1 A x = b within atol and btol; else 0."""
    istop = f.where(itn >= maxiter, 7.0, itn * 0.0)
    istop = f.where(1.0 + test3 <= 1.0, 6.0, istop)
    istop = f.where(1.0 + test2 <= 1.0, 5.0, istop)
    istop = f.where(1.0 + t1 <= 1.0, 4.0, istop)
    istop = f.where(test3 <= ctol, 3.0, istop)
    istop = f.where(test2 <= atol, 2.0, istop)
    return f.where(test1 <= rtol, 1.0, istop)


def cg(A: Any, b: DistributedArray, x0: Optional[DistributedArray] = None, *, rtol: float = 1e-5,
       atol: float = 0.0, maxiter: Optional[int] = None, M: Any = None,
       callback: Any = None, timeout: Optional[float] = None) -> Tuple[DistributedArray, int]:
    """Conjugate gradients for a symmetric positive definite A, as ``scipy.sparse.linalg.cg``:
    returns ``(x, info)``, info 0 when ||b - A x|| < max(atol, rtol ||b||) was reached, else the
    iterations run (``maxiter``, default 10 n). ``M``, the preconditioner (an approximation of
    A's inverse, symmetric positive definite), is an n x n ``csr_matrix`` or 2-D DistributedArray
    of A's dtype, applied on the devices each iteration (SciPy's preconditioned recurrence).
    ``callback`` is not served (the loop runs on the devices): give None. For b = 0 the
    solution is 0 with info 0, as SciPy's, whatever x0."""
    _refuse("cg", callback=callback)
    m, n = _check_system(A, b, "cg")
    if m != n:
        raise ValueError(f"cg: A must be square, not {m}x{n}")
    _check_x0(x0, n, b.dtype, "cg")
    _check_preconditioner(M, n, b.dtype, "cg")
    maxiter = 10 * n if maxiter is None else int(maxiter)
    s = _Solve(A, b)
    one = s.one
    precondition = (lambda r: r) if M is None else s.times_by(M)

    # x, r and the direction stay split as A's rows: each device updates its part, and only the
    # direction is gathered, once per iteration, for the product.
    bv = s.b()
    x = (s.x0(s.rows) if x0 is not None else bv * 0.0)
    r = bv - s.times(x) if x0 is not None else bv * 1.0
    bnrm2 = s.scalar(_norm(bv))
    tol = f.maximum(one * atol, bnrm2 * rtol)
    k = one * 0.0
    rho_prev = one * 1.0
    direction = r * 0.0
    if maxiter > 0:
        def cond(state):
            x, r, d, rho_prev, k = state
            # b = 0 has the solution 0 (below); without this test its first step is 0 / 0.
            running = f.logical_and(k < maxiter, bnrm2 > 0)
            return f.logical_and(running, s.scalar(_norm(r)) >= tol)

        def body(state):
            x, r, d, rho_prev, k = state
            z = precondition(r)
            rho = s.scalar(f.sum(r * z))
            beta = f.where(k > 0, rho / rho_prev, 0.0)
            d = z + beta * d
            q = s.times(d)
            alpha = rho / s.scalar(f.sum(d * q))
            return x + alpha * d, r - alpha * q, d, rho, k + 1.0

        x, r, direction, rho_prev, k = s.program.while_loop(
            cond, body, (x, r, direction, rho_prev, k), max_iterations=maxiter)
    x = f.where(bnrm2 > 0, x, 0.0)
    arrays, v = s.run(b, x0, {"x": x}, {"k": k, "bnrm2": bnrm2}, timeout)
    iterations = int(v["k"])
    if v["bnrm2"] == 0:
        return arrays["x"], 0
    return arrays["x"], 0 if iterations < maxiter else iterations


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

    def cond(s_):
        return f.logical_and(s_["istop"] == 0, s_["normar"] != 0)

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
    arrays, v = s.run(b, x0, {"x": out["x"]}, {k: out[k] for k in names}, timeout)
    return (arrays["x"], int(v["istop"]), int(v["itn"]), v["normr"], v["normar"],
            v["normA"], v["condA"], v["normx"])


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

    ``check=True`` tests A's symmetry as SciPy does, on the devices before the iteration, and
    raises ValueError ("non-symmetric matrix") for a non-symmetric A. ``M`` and ``callback``
    are not served (the loop runs on the devices): give None. ``show`` prints SciPy's opening
    and closing lines, not its per-iteration ones. ``rtol`` is a number >= 0, ``shift`` a
    finite one."""
    what = "minres"
    _refuse(what, M=M, callback=callback)
    m, n = _check_system(A, b, what)
    if m != n:
        raise ValueError(f"{what}: A must be square, not {m}x{n}")
    _check_x0(x0, n, b.dtype, what)
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
    # Every vector stays split as A's rows; only the Lanczos vector is gathered, once per
    # iteration, for the product.
    bv = s.b()
    x = s.x0(s.rows) if x0 is not None else bv * 0.0
    r1 = bv - s.times(x) if x0 is not None else bv * 1.0
    beta1sq = s.scalar(f.sum(r1 * r1))
    bnorm = s.scalar(_norm(bv))
    beta1 = f.sqrt(beta1sq)
    # SciPy returns x (x0 or 0) where r1 = 0, else b where b = 0, before any iteration.
    start = f.logical_and(beta1sq != 0, bnorm != 0)
    values: Dict[str, Var] = {}
    if check:  # ||A y||^2 against y^T A (A y), y = r1, to eps^(1/3) of the former (SciPy's)
        ay = s.times(r1)
        ss = s.scalar(f.sum(ay * ay))
        tt = s.scalar(f.sum(r1 * s.times(ay)))
        asymmetric = abs(ss - tt) > (ss + eps) * eps ** (1.0 / 3.0)
        values["asymmetric"] = f.logical_and(start, asymmetric)
        start = f.logical_and(start, f.logical_not(asymmetric))
    state = dict(
        x=x, r1=r1, r2=r1 * 1.0, w=r1 * 0.0, w2=r1 * 0.0, beta=beta1 * 1.0, oldb=zero * 1.0,
        dbar=zero * 1.0, epsln=zero * 1.0, phibar=beta1 * 1.0, rhs1=beta1 * 1.0,
        rhs2=zero * 1.0, tnorm2=zero * 1.0, gmax=zero * 1.0,
        gmin=one * float(np.finfo(b.dtype).max), cs=zero - 1.0, sn=zero * 1.0,
        arnorm=zero * 1.0, ynorm=zero * 1.0, istop=zero * 1.0, itn=zero * 1.0)
    vectors = {k: s.rows for k in ("x", "r1", "r2", "w", "w2")}

    def cond(c):
        return f.logical_and(f.logical_and(start, c["istop"] == 0), c["itn"] < maxiter)

    def body(c):
        itn = c["itn"] + 1.0
        # The Lanczos step (M = I, so SciPy's y is r2 at the top of each iteration).
        beta = c["beta"]
        v = c["r2"] * (1.0 / beta)
        y = s.times(v)
        if shift != 0:
            y = y - shift * v
        y = y - f.where(itn >= 2, beta / f.where(c["oldb"] != 0, c["oldb"], 1.0), 0.0) * c["r1"]
        alfa = s.scalar(f.sum(v * y))
        y = y - (alfa / beta) * c["r2"]
        r1, r2 = c["r2"], y
        oldb = beta
        beta = f.sqrt(s.scalar(f.sum(r2 * r2)))
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
        return dict(
            x=x, r1=r1, r2=r2, w=w, w2=w2, beta=beta, oldb=oldb, dbar=dbar, epsln=epsln,
            phibar=phibar, rhs1=rhs1, rhs2=rhs2, tnorm2=tnorm2, gmax=gmax, gmin=gmin, cs=cs,
            sn=sn, arnorm=arnorm, ynorm=ynorm, istop=istop, itn=itn)

    out = s.loop(state, vectors, cond, body, maxiter)
    values.update(istop=out["istop"], itn=out["itn"], started=start)
    if show:
        values.update(anorm=f.sqrt(out["tnorm2"]), acond=out["gmax"] / out["gmin"],
                      rnorm=out["phibar"] * 1.0, ynorm=out["ynorm"], arnorm=out["arnorm"])
    # b itself where b = 0 (and r1 != 0), as SciPy returns.
    x = f.where(f.logical_and(beta1sq != 0, bnorm == 0), bv, out["x"])
    arrays, r = s.run(b, x0, {"x": x}, values, timeout)
    if check and r["asymmetric"]:
        raise ValueError(f"{what}: non-symmetric matrix A (check=True)")
    istop, itn = int(r["istop"]), int(r["itn"])
    if show and r["started"]:
        last = "Exit  minres.   "
        print()
        print(last + f" istop   =  {istop:3g}               itn   ={itn:5g}")
        print(last + f" Anorm   =  {r['anorm']:12.4e}      Acond =  {r['acond']:12.4e}")
        print(last + f" rnorm   =  {r['rnorm']:12.4e}      ynorm =  {r['ynorm']:12.4e}")
        print(last + f" Arnorm  =  {r['arnorm']:12.4e}")
        print(last + _MINRES_MESSAGES[istop])
    return arrays["x"], maxiter if istop == 6 else 0
