"""Conjugate gradients (``scipy.sparse.linalg.cg``), preconditioned or not, as one RunGraph."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ... import _functions as f
from ..._array import DistributedArray
from ._common import (
    _check_system, _check_x0, _refuse, _check_preconditioner, _iteration_limit, _nonnegative,
    _norm, _Solve)


def cg(A: Any, b: DistributedArray, x0: Optional[DistributedArray] = None, *, rtol: float = 1e-5,
       atol: float = 0.0, maxiter: Optional[int] = None, M: Any = None,
       callback: Any = None, timeout: Optional[float] = None) -> Tuple[DistributedArray, int]:
    """Conjugate gradients for a symmetric positive definite A, as ``scipy.sparse.linalg.cg``:
    returns ``(x, info)``, info 0 when ||b - A x|| < max(atol, rtol ||b||) was reached, else the
    iterations run (``maxiter``, default 10 n). ``M``, the preconditioner (an approximation of
    A's inverse, symmetric positive definite), is an n x n ``csr_matrix`` or 2-D DistributedArray
    of A's dtype, applied on the devices each iteration (SciPy's preconditioned recurrence).
    ``callback`` is not served (the loop runs on the devices): give None. For b = 0 the
    solution is 0 with info 0, as SciPy's, whatever x0. A dense A held whole on one device is
    read by its upper triangle (A is symmetric by cg's contract; half the bytes per product)."""
    _refuse("cg", callback=callback)
    m, n = _check_system(A, b, "cg")
    if m != n:
        raise ValueError(f"cg: A must be square, not {m}x{n}")
    _check_x0(x0, n, b.dtype, "cg")
    _check_preconditioner(M, n, b.dtype, "cg")
    # A NaN tolerance would make the test false at once: x0 back with info 0, a silent "converged".
    rtol = _nonnegative(rtol, "rtol", "cg")
    atol = _nonnegative(atol, "atol", "cg")
    maxiter = _iteration_limit(maxiter, 10 * n, "maxiter", "cg")
    s = _Solve(A, b)
    one = s.one
    precondition = (lambda r: r) if M is None else s.times_by(M)

    # x, r and the direction stay split as A's rows: each device updates its part, and only the
    # direction is gathered, once per iteration, for the product.
    bv = s.b()
    x = (s.x0(s.rows) if x0 is not None else bv * 0.0)
    r = bv - s.times(x, symmetric=True) if x0 is not None else bv * 1.0
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
            q = s.times(d, symmetric=True)
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
