"""distarray.linalg inside traced programs: each call on traced values records a LinalgStatement,
whose results match NumPy's (and the eager calls') on fresh random matrices; a loop of solves
matches the same loop in NumPy; a program holding one runs eagerly; and a singular matrix met
inside the program is the daemon's FAILED_PRECONDITION, the client serving on."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from distarray import linalg


def spd(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.uniform(-1, 1, (n, n))
    return m @ m.T / n + np.eye(n)


@pytest.mark.parametrize("devices", [[0], [0, 1]], ids=["one_device", "two_devices"])
def test_factorizations_in_a_program_match_numpy(client, rng, devices):
    n = 20
    a_np = spd(rng, n)
    b_np = rng.uniform(-1, 1, n)

    def fn(a, b):
        q, r = linalg.qr(a)
        w, v = linalg.eigh(a)
        sign, logdet = linalg.slogdet(a)
        return {"x": linalg.solve(a, b), "l": linalg.cholesky(a), "q": q, "r": r, "w": w,
                "v": v, "s": linalg.svdvals(a), "inv": linalg.inv(a), "det": linalg.det(a),
                "sign": sign, "logdet": logdet}

    program = distarray.trace(fn)
    statements = [s.WhichOneof("op") for s in program.proto.statements]
    assert statements.count("linalg") == 8, statements
    a = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, 0, devices))
    b = client.from_numpy(b_np, distarray.split_index_map(b_np.shape, 0, devices))
    run = client.run_graph(program, a=a, b=b)
    assert run.execution == "eager"  # a factorization reads its status back
    out = {k: v.to_numpy() for k, v in run.outputs.items()}
    np.testing.assert_allclose(a_np @ out["x"], b_np, atol=1e-12)
    np.testing.assert_allclose(out["x"], np.linalg.solve(a_np, b_np), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["l"], np.linalg.cholesky(a_np), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["q"] @ out["r"], a_np, atol=1e-12)
    np.testing.assert_allclose(out["q"].T @ out["q"], np.eye(n), atol=1e-12)
    np.testing.assert_allclose(out["w"], np.linalg.eigvalsh(a_np), rtol=1e-10)
    np.testing.assert_allclose(out["v"] @ np.diag(out["w"]) @ out["v"].T, a_np, atol=1e-12)
    np.testing.assert_allclose(out["s"], np.linalg.svd(a_np, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(out["inv"] @ a_np, np.eye(n), atol=1e-11)
    np.testing.assert_allclose(out["det"], np.linalg.det(a_np), rtol=1e-10)
    want_sign, want_logdet = np.linalg.slogdet(a_np)
    assert out["sign"] == want_sign
    np.testing.assert_allclose(out["logdet"], want_logdet, rtol=1e-12)
    # The eager calls on the same arrays give the same bits: one code path in the daemon.
    np.testing.assert_array_equal(out["x"], linalg.solve(a, b).to_numpy())
    np.testing.assert_array_equal(out["r"], linalg.qr(a).R.to_numpy())


def test_inverse_iteration_loop_matches_numpy(client, rng):
    n, steps = 12, 5
    a_np = spd(rng, n)
    x_np = rng.uniform(-1, 1, n)

    def fn(a, x, k):
        def body(carried):
            v, i = carried
            y = linalg.solve(a, v)
            return y / distarray.sqrt((y * y).sum()), i + 1

        v, _ = distarray.while_loop(lambda c: (c[1] < steps).all(), body, (x, k),
                                    max_iterations=100)
        return {"v": v}

    program = distarray.trace(fn)
    run = client.run_graph(program, a=client.from_numpy(a_np), x=client.from_numpy(x_np),
                           k=client.from_numpy(np.zeros((), np.int32)))
    assert run.iterations == steps
    want = x_np
    for _ in range(steps):
        want = np.linalg.solve(a_np, want)
        want = want / np.linalg.norm(want)
    np.testing.assert_allclose(run.outputs["v"].to_numpy(), want, rtol=1e-10, atol=1e-12)


def test_a_singular_matrix_inside_a_program_is_failed_precondition(client, rng):
    n = 6
    program = distarray.trace(lambda a, b: {"x": linalg.solve(a, b)})
    singular = client.from_numpy(np.ones((n, n)))
    b = client.from_numpy(rng.uniform(-1, 1, n))
    with pytest.raises(distarray.FailedPreconditionError, match="singular"):
        client.run_graph(program, a=singular, b=b)
    # An integer matrix is refused by name before anything runs; a good one then solves.
    with pytest.raises(distarray.InvalidArgumentError, match=r"linalg\.spec\.a"):
        client.run_graph(program, a=client.from_numpy(np.eye(n, dtype=np.int32)), b=b)
    good = spd(rng, n)
    run = client.run_graph(program, a=client.from_numpy(good), b=b)
    np.testing.assert_allclose(good @ run.outputs["x"].to_numpy(), b.to_numpy(), atol=1e-12)


def test_solve_mixing_a_traced_value_and_an_array_is_refused(client):
    p = distarray.Program()
    a = p.input("a")
    with pytest.raises(TypeError, match="two traced values"):
        linalg.solve(a, client.from_numpy(np.ones(3)))
