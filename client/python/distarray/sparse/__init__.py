"""Sparse matrices on the daemon's devices, in SciPy's names (``distarray.sparse``).

A ``csr_matrix`` is CSR blocks held as three 1-D arrays (docs/api.md, "Sparse matrices"): its
rows split into near-equal contiguous blocks over ``devices``, one block per device. The client
builds the CSR (duplicates summed, entries in any order) with NumPy and uploads it::

    A = distarray.sparse.csr_matrix((data, (row, col)), shape=(m, n), devices=[0, 1])
    y = A @ x           # SpMV on the devices (x: a DistributedArray)
    z = A.T @ y         # the transpose's blocks stay on their devices: partial products, summed
    A.toarray()         # the dense DistributedArray

Products also work on traced values inside ``distarray.trace``/``Program`` bodies: the matrix's
arrays become program inputs, bound automatically by ``client.run_graph``.
``distarray.sparse.linalg`` has the iterative solvers (``cg``, ``lsmr``, ``lsqr``,
``minres``), each run as one RunGraph call.
"""

from ._csr import csr_matrix, isspmatrix_csr, random

__all__ = ["csr_matrix", "isspmatrix_csr", "random"]
