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

from ._cg import cg
from ._lsmr import lsmr
from ._lsqr import lsqr
from ._minres import minres

__all__ = ["cg", "lsmr", "lsqr", "minres"]
