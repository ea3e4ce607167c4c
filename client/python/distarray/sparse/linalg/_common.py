"""What the solvers share: argument checks, the layouts a solve keeps its values in, the
products, the loop over named values and the run (one RunGraph call), and the Golub-Kahan steps
and stopping codes LSQR and LSMR have in common."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from ... import _functions as f
from ..._array import DistributedArray
from ..._graph import Program, Var
from .._csr import csr_matrix


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
    from ..._index_map import from_proto_index_map

    n = A.shape[1]
    devices = sorted({c.device for c in A._info.index_map.chunks}) or [0]
    rows: dict = {}
    for device, chunks in from_proto_index_map(A._info.index_map).items():
        rows.setdefault(device, []).extend((c[0],) for c in chunks)
    return rows, {d: [(slice(0, n),)] for d in devices}


def _matvec(A: Any, x: Var, symmetric: bool = False) -> Var:
    """A @ x. `symmetric`: the caller's contract says a dense A is symmetric, so a float32 or
    float64 A held whole on one device is read by its upper triangle (MatmulOpSpec.a_symmetric:
    half the bytes of the product that bounds an iteration)."""
    if isinstance(A, csr_matrix):
        return A @ x
    a = x.program.capture(A)
    if symmetric and np.dtype(A.dtype) in (np.float32, np.float64):
        return f.matmul(a, x, a_symmetric=True)
    return a @ x


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

    def times(self, d: Var, symmetric: bool = False) -> Var:
        """A @ d for a square A, d split as the rows: gathered whole on each device for the
        product, and the product back in the rows' layout. `symmetric`: the solver requires a
        symmetric A (``_matvec``)."""
        return _matvec(self.A, d.reshard(self.cols, "replica", ndim=1), symmetric).reshard(
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
