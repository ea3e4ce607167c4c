"""cumulative_sum and cumulative_prod (the daemon's scan) against NumPy's cumsum and cumprod on
fresh random data: every axis over layouts whose chunks hold whole lines and layouts that split
the scanned axis (carries between devices), NumPy's dtype rules (bool and narrow integers widen,
integers wrap at full range), complex values, ``dtype=`` and ``include_initial``, a scan as a
program statement, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, assert_intact, bystander, check, put
from conftest import random_array

INTEGERS = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
            np.uint64]


def close(result, expected: np.ndarray, msg: str) -> None:
    got = result.to_numpy()
    assert got.dtype == expected.dtype and got.shape == expected.shape, msg
    rtol = 1e-4 if expected.dtype in (np.float32, np.complex64) else 1e-10
    scale = np.cumsum(np.abs(expected), axis=None).max() if expected.size else 1
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * scale, err_msg=msg)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", INTEGERS, ids=lambda t: np.dtype(t).name)
def test_integer_scans_wrap_as_numpy(client, rng, layout, dtype):
    v = random_array(rng, (7, 9), dtype)
    a = put(client, v, layout)
    with np.errstate(over="ignore"):
        for axis in (0, 1, -1):
            check(distarray.cumulative_sum(a, axis=axis), np.cumsum(v, axis=axis),
                  f"cumsum axis {axis}")
            check(distarray.cumulative_prod(a, axis=axis), np.cumprod(v, axis=axis),
                  f"cumprod axis {axis}")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128],
                         ids=lambda t: np.dtype(t).name)
def test_float_and_complex_scans_match_numpy(client, rng, layout, dtype):
    v = (rng.uniform(0.5, 1.5, (8, 6, 5)) * np.exp(1j * rng.uniform(-0.3, 0.3, (8, 6, 5)))
         if np.dtype(dtype).kind == "c" else rng.uniform(0.5, 1.5, (8, 6, 5))).astype(dtype)
    a = put(client, v, layout)
    for axis in range(-3, 3):
        close(distarray.cumulative_sum(a, axis=axis), np.cumsum(v, axis=axis), f"axis {axis}")
        close(distarray.cumulative_prod(a, axis=axis), np.cumprod(v, axis=axis), f"axis {axis}")


def test_one_long_line_over_every_device(client, rng):
    v = rng.standard_normal(100_003)
    a = client.from_numpy(v, distarray.split_index_map(v.shape, 0, [3, 1, 0, 2]))
    close(distarray.cumulative_sum(a), np.cumsum(v), "float64")
    w = rng.integers(-1000, 1000, 100_003)
    b = client.from_numpy(w, distarray.split_index_map(w.shape, 0, [0, 1, 2, 3]))
    check(distarray.cumulative_sum(b), np.cumsum(w), "int64")
    check(b.cumsum(), np.cumsum(w), "the cumsum method")


def test_dtype_and_include_initial(client, rng):
    v = rng.integers(-100, 100, (5, 6)).astype(np.int32)
    a = put(client, v, "rows2")
    with np.errstate(over="ignore"):
        check(distarray.cumulative_sum(a, axis=0, dtype=distarray.int8),
              np.cumsum(v, axis=0, dtype=np.int8), "dtype=int8")
    close(distarray.cumulative_sum(a, axis=1, dtype=distarray.float32),
          np.cumsum(v, axis=1, dtype=np.float32), "dtype=float32")
    check(distarray.cumulative_sum(a, axis=1, include_initial=True),
          np.concatenate([np.zeros((5, 1), np.int64), np.cumsum(v, axis=1)], axis=1),
          "include_initial")
    check(distarray.cumulative_prod(a, axis=0, include_initial=True),
          np.concatenate([np.ones((1, 6), np.int64), np.cumprod(v, axis=0)], axis=0),
          "include_initial prod")


def test_scan_in_a_program(client, rng):
    """A traced cumulative_sum is a program's scan statement; the axis must be given."""
    v = rng.integers(0, 10, (6, 8))
    program = distarray.trace(lambda x: distarray.cumulative_sum(distarray.cumulative_prod(
        x, axis=1), axis=0))
    scans = [s.manipulate.scan for s in program.proto.statements
             if s.WhichOneof("op") == "manipulate"]
    assert [(s.axis, s.product) for s in scans] == [(1, True), (0, False)]
    a = put(client, v, "rows2")
    run = client.run_graph(program, {"x": a})
    check(run.outputs["out"], np.cumsum(np.cumprod(v, axis=1), axis=0), "in a program")
    with pytest.raises(ValueError, match="explicit axis"):
        distarray.trace(lambda x: distarray.cumulative_sum(x))


def test_errors_name_the_field(client, rng):
    b, b_values = bystander(client, rng)
    a = put(client, rng.standard_normal((4, 5)), "rows2")
    with pytest.raises(distarray.InvalidArgumentError, match="spec.scan.axis"):
        a._manipulate(_spec(a, 2), None)
    with pytest.raises(ValueError, match="axis is required"):
        distarray.cumulative_sum(a)
    with pytest.raises(TypeError, match="cumulative_sum takes a DistributedArray"):
        distarray.cumulative_sum(np.ones(3))
    assert_intact(b, b_values)


def _spec(x, axis):
    from distarray.v1 import distarray_pb2 as pb
    spec = pb.ManipulationSpec()
    spec.scan.source.CopyFrom(x._operand(x))
    spec.scan.axis = axis
    return spec
