"""Programs traced from Python functions, run by RunGraph on the daemon."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

import distarray

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def numpy_seed_loop(a):
    n = 0
    while np.all(a < 1000):
        a = a + 1
        n += 1
    return a, n


@pytest.mark.parametrize("devices", [[0], [0, 1]], ids=["one_device", "two_devices"])
def test_seed_loop_against_numpy(client, rng, devices):
    seed = rng.integers(0, 50, 2000).astype(np.float32)
    expected, iterations = numpy_seed_loop(seed)
    program = distarray.trace(lambda a: distarray.while_loop(
        lambda v: (v < 1000).all(), lambda v: v + 1, a, max_iterations=100_000))
    x = client.from_numpy(seed, distarray.split_index_map(seed.shape, 0, devices))
    run = client.run_graph(program, {"a": x})
    assert run.iterations == iterations and not run.hit_iteration_cap
    assert run.execution == ("device_graph" if len(devices) == 1 else "eager")
    out = run.outputs["out"]
    assert out.dtype == np.float32 and out.devices == tuple(devices)
    np.testing.assert_array_equal(out.to_numpy(), expected)
    np.testing.assert_array_equal(x.to_numpy(), seed)  # the input keeps its values


def test_body_result_is_renamed_not_copied():
    p = distarray.Program()
    a = p.input("a")
    (out,) = [distarray.while_loop(lambda v: (v < 10).all(), lambda v: v * 2, a,
                                   max_iterations=50)]
    p.output("a_out", out)
    loop = [s for s in p.proto.statements if s.WhichOneof("op") == "while_loop"][0].while_loop
    kinds = [s.WhichOneof("op") for s in loop.body]
    assert kinds == ["elementwise", "elementwise", "reduce"], kinds  # no copy statement
    assert loop.body[0].target == p.proto.statements[0].target  # written into the carried var
    assert loop.max_iterations == 50
    assert list(p.proto.inputs) == ["a"] and list(p.proto.outputs) == ["a_out"]


def test_two_carried_values_swap_and_value_outputs(client, rng):
    x_np, y_np = rng.uniform(size=16), rng.uniform(size=16)

    def fn(x, y, n):
        x2, y2, n2 = distarray.while_loop(
            lambda c: (c[2] < 5).all(),
            lambda c: (c[1], c[0] + 1, c[2] + 1),  # swap: copies keep the assignment simultaneous
            (x, y, n), max_iterations=100)
        return {"x": x2, "y": y2, "total": (x2 + y2).sum()}

    program = distarray.trace(fn, value_outputs=["total"])
    n = client.from_numpy(np.zeros((), np.int32))
    run = client.run_graph(program, x=client.from_numpy(x_np), y=client.from_numpy(y_np), n=n)
    ex, ey = x_np, y_np
    for _ in range(5):
        ex, ey = ey, ex + 1
    assert run.iterations == 5
    np.testing.assert_allclose(run.outputs["x"].to_numpy(), ex)
    np.testing.assert_allclose(run.outputs["y"].to_numpy(), ey)
    assert set(run.outputs) == {"x", "y"}
    total = run.values["total"]
    assert isinstance(total, np.ndarray) and total.shape == () and total.dtype == np.float64
    np.testing.assert_allclose(total, (ex + ey).sum())


@pytest.mark.parametrize("sign", [1, -1])
def test_cond(client, rng, sign):
    x_np = sign * rng.uniform(1, 2, size=(4, 3))

    def fn(x):
        return distarray.cond((x.sum() > 0), lambda v: v * 2, lambda v: -v, x)

    run = client.run_graph(distarray.trace(fn), x=client.from_numpy(x_np))
    np.testing.assert_allclose(run.outputs["out"].to_numpy(), x_np * 2 if sign > 0 else -x_np)


def test_registered_programs_and_cap(client):
    program = distarray.trace(lambda a: distarray.while_loop(
        lambda v: (v < 100).all(), lambda v: v + 1, a, max_iterations=10))
    program_id = client.register_program(program)
    x = client.from_numpy(np.zeros(8, np.float32))
    first = client.run_graph(program_id, a=x)
    assert first.hit_iteration_cap and first.iterations == 10
    np.testing.assert_array_equal(first.outputs["out"].to_numpy(), np.full(8, 10.0))
    second = client.run_graph(program_id, a=x, output_names={"out": "graph-test-out"})
    assert second.graph_cache_hit
    assert second.outputs["out"].name == "graph-test-out"
    client.delete("graph-test-out")
    client.delete_program(program_id)
    with pytest.raises(distarray.NotFoundError):
        client.run_graph(program_id, a=x)


def test_tracing_errors(client):
    p = distarray.Program()
    a = p.input("a")
    with pytest.raises(TypeError, match="cond"):
        if a > 0:  # Python control flow cannot see traced values
            pass
    with pytest.raises(TypeError, match="condition"):
        distarray.while_loop(lambda v: True, lambda v: v, a, max_iterations=1)
    with pytest.raises(ValueError, match="returned 2 values"):
        distarray.while_loop(lambda v: (v > 0).all(), lambda v: (v, v), a, max_iterations=1)
    x = client.from_numpy(np.zeros(3))
    with pytest.raises(TypeError):
        a + x  # arrays enter programs as inputs
    # The daemon checks types per run and names the statement.
    program = distarray.trace(lambda a: distarray.while_loop(
        lambda v: v < 3, lambda v: v + 1, a, max_iterations=5))  # condition not 0-d
    with pytest.raises(distarray.InvalidArgumentError, match="condition|0-d"):
        client.run_graph(program, a=x)


def test_seed_loop_example(daemon, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["seed_loop.py", "--address", daemon.address,
                                      "--size", "1000"])
    runpy.run_path(str(EXAMPLES / "seed_loop.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert out.count("equals NumPy") == 2, out


def test_outputs_named_like_inputs_keep_the_loops_updates(client, rng):
    # The loop carries a copy of a value; naming the outputs after the inputs must not rename
    # the copy that feeds the loop (a renamed loop variable would be local to the body).
    a_np = rng.integers(0, 7, 64).astype(np.float32)
    d_np = rng.integers(0, 100, 64).astype(np.float32)
    p = distarray.Program()
    a, d = p.input("a"), p.input("d")
    out = distarray.while_loop(lambda c: (c[0] < 20).any(), lambda c: (c[0] + 1, c[0]), (a, d),
                               max_iterations=1000)
    p.output("a", out[0])
    p.output("d", out[1])
    run = client.run_graph(p, {"a": client.from_numpy(a_np), "d": client.from_numpy(d_np)})
    steps = int(20 - a_np.min())
    np.testing.assert_array_equal(run.outputs["a"].to_numpy(), a_np + steps)
    np.testing.assert_array_equal(run.outputs["d"].to_numpy(), a_np + steps - 1)


@pytest.mark.parametrize("devices", [[0], [0, 1]], ids=["one_device", "rows_over_two"])
def test_jacobi_stencil_by_item_assignment_in_a_loop(client, rng, devices):
    """u[1:-1, 1:-1] = 0.25 * (four neighbours) in a traced loop, against NumPy; the caller's
    array keeps its values (an input is copied before the first write)."""
    n, steps = 34, 25
    u_np = rng.uniform(-1, 1, (n, n)).astype(np.float32)

    def step(u):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return u

    program = distarray.trace(lambda u, k: distarray.while_loop(
        lambda c: (c[1] < steps).all(), lambda c: (step(c[0]), c[1] + 1), (u, k),
        max_iterations=1000)[0])
    u = client.from_numpy(u_np, distarray.split_index_map(u_np.shape, 0, devices))
    run = client.run_graph(program, u=u, k=client.from_numpy(np.zeros((), np.int32)))
    want = u_np.copy()
    for _ in range(steps):
        want[1:-1, 1:-1] = np.float32(0.25) * (want[:-2, 1:-1] + want[2:, 1:-1]
                                               + want[1:-1, :-2] + want[1:-1, 2:])
    assert run.iterations == steps
    out = run.outputs["out"]
    assert out.devices == tuple(devices)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(u.to_numpy(), u_np)


def test_item_assignment_outside_loops_and_its_errors(client, rng):
    x_np = rng.uniform(-1, 1, 10)

    def fn(x):
        y = x * 2
        y[0] = 7.0  # a scalar
        y[::-3] = x[:4]  # a Var of the program, through a negative step
        x[5:] = -1.0  # an input: written into a copy
        return {"y": y, "x": x}

    x = client.from_numpy(x_np)
    run = client.run_graph(distarray.trace(fn), x=x)
    want_y = x_np * 2
    want_y[0] = 7.0
    want_y[::-3] = x_np[:4]
    want_x = x_np.copy()
    want_x[5:] = -1.0
    np.testing.assert_array_equal(run.outputs["y"].to_numpy(), want_y)
    np.testing.assert_array_equal(run.outputs["x"].to_numpy(), want_x)
    np.testing.assert_array_equal(x.to_numpy(), x_np)  # the caller's array is untouched

    p = distarray.Program()
    v = p.input("v")
    with pytest.raises(TypeError, match="a Var of the same program or a scalar"):
        v[0] = x  # an array of the client, not a traced value
    with pytest.raises(TypeError, match="a key of traced values"):
        v[v > 0] = 0.0
    # An index outside its axis is the daemon's OUT_OF_RANGE (IndexError), naming the axis.
    bad = distarray.trace(lambda a: a.__setitem__(12, 0.0) or {"a": a})
    with pytest.raises(IndexError, match="axis 0"):
        client.run_graph(bad, a=x)


def test_program_creates_arrays(client):
    """Program.create is a create statement: the same values as Client.create's fill in another
    layout, and a create in a loop body is made anew each iteration."""
    from distarray.v1 import distarray_pb2 as pb
    layout = distarray.split_index_map((40, 6), 0, [0, 1, 2])
    normal = pb.Fill(normal=pb.Fill.Normal(mean=1.0, stddev=2.0, seed=5))
    p = distarray.Program()
    p.output("x", p.create((40, 6), np.float32, layout, fill=normal))
    run = client.run_graph(p)
    want = client.create((40, 6), np.float32, distarray.split_index_map((40, 6), 1, [1, 0]),
                         fill=normal)
    np.testing.assert_array_equal(run.outputs["x"].to_numpy(), want.to_numpy())
    assert run.outputs["x"].devices == (0, 1, 2)

    q = distarray.Program()
    row = distarray.split_index_map((16,), 0, [0, 1])
    ones = pb.Fill(ones=pb.Fill.Ones())
    out = q.while_loop(lambda v: (v < 4).all(),
                       lambda v: v + q.create((16,), np.int64, row, fill=ones),
                       q.create((16,), np.int64, row), max_iterations=10)
    q.output("x", out)
    assert [s.WhichOneof("op") for s in q.proto.statements].count("create") == 1
    np.testing.assert_array_equal(client.run_graph(q).outputs["x"].to_numpy(), np.full(16, 4))
