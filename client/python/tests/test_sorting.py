"""sort and argsort (the array API's, and NumPy's through ``__array_function__``) against NumPy on
fresh random data: every real dtype, axes held whole by their chunks and axes split over several
devices, ascending and descending, ties (stability) and NaNs."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, assert_intact, bystander, check, put
from conftest import random_array

REAL = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
        np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


def _python_scalars(line: np.ndarray) -> list:
    if line.dtype.kind == "f" or line.dtype == ml_dtypes.bfloat16:
        line = line.astype(np.float64)  # exact: every value of the narrower floats fits
    return [v.item() for v in line]


def reference_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The stable order of each line along ``axis``, by Python's own sort: ascending
    ``sorted(range(n), key=x.__getitem__)``, descending the same with ``reverse=True`` (which
    keeps equal elements in their order too). NaNs sort above every number (last ascending,
    first descending) and equal to each other; -0.0 equals 0.0."""
    moved = np.moveaxis(x, axis, -1)
    lines = moved.reshape(-1, moved.shape[-1])
    out = np.empty(lines.shape, np.int64)
    for i, line in enumerate(lines):
        values = _python_scalars(line)
        keys = [(isinstance(v, float) and math.isnan(v), 0.0 if isinstance(v, float)
                 and math.isnan(v) else v) for v in values]
        out[i] = sorted(range(len(values)), key=keys.__getitem__, reverse=descending)
    return np.moveaxis(out.reshape(moved.shape), -1, axis)


def expected(x: np.ndarray, axis: int, descending: bool):
    """(sorted values, argsort) of ``x``: Python's stable order, which for ascending must also be
    NumPy's stable argsort (checked here, so the reference itself is tested)."""
    order = reference_argsort(x, axis, descending)
    if not descending:
        # NumPy's sort of ml_dtypes' bfloat16 misplaces NaNs; float32 holds each value exactly.
        model = x.astype(np.float32) if x.dtype == ml_dtypes.bfloat16 else x
        np.testing.assert_array_equal(order, np.argsort(model, axis=axis, kind="stable"))
    return np.take_along_axis(x, order, axis), order


def with_ties(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Values drawn from a handful, so that every line has many equal elements; NaNs among the
    floats."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        low = 0 if dtype.kind == "u" else -3
        return rng.integers(low, low + 5, shape).astype(dtype)
    return rng.choice(np.array([-2.5, -1.0, 0.5, 3.0, np.nan]), shape).astype(dtype)


def check_values(result, values: np.ndarray, msg: str) -> None:
    """``check``, also for bfloat16, whose NaNs NumPy's comparison does not see as NaNs (its kind
    is not float): compared as float32, which holds each value exactly."""
    if values.dtype != ml_dtypes.bfloat16:
        return check(result, values, msg)
    got = result.to_numpy()
    assert got.shape == values.shape and got.dtype == values.dtype, msg
    np.testing.assert_array_equal(got.astype(np.float32), values.astype(np.float32), err_msg=msg)


def check_sort(a, a_np: np.ndarray, axis: int, descending: bool, label: str) -> None:
    values, order = expected(a_np, axis, descending)
    msg = f"{label} axis={axis} descending={descending}"
    s = distarray.sort(a, axis=axis, descending=descending)
    check_values(s, values, "sort " + msg)
    i = distarray.argsort(a, axis=axis, descending=descending)
    check(i, order, "argsort " + msg)
    # The result keeps the source's layout.
    assert s.index_map == a.index_map and i.index_map == a.index_map, msg
    assert s.mode == "replica" and i.mode == "replica", msg


def blocks(shape):
    """2-d blocks over the four devices: both axes split."""
    return distarray.make_2d_index_map([0, shape[0] // 3, shape[0]], [0, shape[1] // 2, shape[1]],
                                       [[0, 1], [2, 3]])


@pytest.mark.parametrize("layout", sorted(LAYOUTS) + ["blocks"])
def test_sort_2d_layouts(client, rng, layout):
    """Each axis of each layout: rows2 splits axis 0 over 2 devices, cols3 axis 1 over 3 (in the
    order 3, 1, 2), blocks both; replicated and uneven hold some axes whole."""
    a_np = random_array(rng, (37, 23), np.float64)
    index_map = blocks(a_np.shape) if layout == "blocks" else LAYOUTS[layout](a_np.shape)
    a = client.from_numpy(a_np, index_map)
    for axis in (0, 1, -1, -2):
        for descending in (False, True):
            check_sort(a, a_np, axis, descending, layout)
    np.testing.assert_array_equal(a.to_numpy(), a_np)  # the source keeps its values


@pytest.mark.parametrize("dtype", REAL, ids=lambda t: np.dtype(t).name)
def test_sort_every_real_dtype_split_along_the_axis(client, rng, dtype):
    """Random values (extremes of the integers included) and ties, split over 2 devices along the
    sorted axis and held whole."""
    for label, a_np in [("random", random_array(rng, (29, 6), dtype)),
                        ("ties", with_ties(rng, (29, 6), dtype))]:
        for layout_axis in (0, 1):
            a = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, layout_axis, [0, 1]))
            for descending in (False, True):
                check_sort(a, a_np, 0, descending, f"{label} split{layout_axis}")


@pytest.mark.parametrize("devices", [[0, 1], [1, 0], [0, 1, 2, 3], [2, 0, 3]],
                         ids=lambda d: "-".join(map(str, d)))
@pytest.mark.parametrize("n", [2, 7, 1000, 4099])
def test_sort_1d_split(client, rng, devices, n):
    """One axis cut over several devices (some blocks smaller than others, devices in any order):
    the sort merges across them."""
    for a_np in (random_array(rng, (n,), np.float32), with_ties(rng, (n,), np.int32),
                 with_ties(rng, (n,), np.float64)):
        a = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, 0, devices))
        for descending in (False, True):
            check_sort(a, a_np, 0, descending, f"{a_np.dtype} over {devices}")


def test_sort_uneven_chunks_and_3d(client, rng):
    a_np = with_ties(rng, (11,), np.int64)
    a = client.from_numpy(a_np, {2: [(slice(0, 1),)], 0: [(slice(1, 9),)], 3: [(slice(9, 11),)]})
    for descending in (False, True):
        check_sort(a, a_np, 0, descending, "uneven 1-d")
    b_np = with_ties(rng, (4, 13, 5), np.float32)
    for split in (0, 1, 2):
        b = client.from_numpy(b_np, distarray.split_index_map(b_np.shape, split, [3, 1]))
        for axis in (0, 1, 2):
            for descending in (False, True):
                check_sort(b, b_np, axis, descending, f"3-d split{split}")


def test_nans_and_ties_exactly(client):
    """NaNs go last ascending and first descending; equal elements keep their order both ways
    (descending is not ascending reversed)."""
    v = np.array([2.0, np.nan, 1.0, 2.0, -np.inf, np.nan, 1.0, np.inf, 2.0])
    a = client.from_numpy(v, distarray.split_index_map(v.shape, 0, [0, 1]))
    check(distarray.argsort(a), np.array([4, 2, 6, 0, 3, 8, 7, 1, 5]), "ascending")
    check(distarray.argsort(a, descending=True), np.array([1, 5, 7, 0, 3, 8, 2, 6, 4]),
          "descending")
    check(distarray.sort(a), np.array([-np.inf, 1, 1, 2, 2, 2, np.inf, np.nan, np.nan]),
          "sorted ascending")
    check(distarray.sort(a, descending=True),
          np.array([np.nan, np.nan, np.inf, 2, 2, 2, 1, 1, -np.inf]), "sorted descending")
    # stable=False allows any order of ties; the stable one is it.
    check(distarray.argsort(a, stable=False), np.array([4, 2, 6, 0, 3, 8, 7, 1, 5]), "unstable")


SIGNED = np.array([0.0, -0.0, 1.0, -0.0, 0.0, -1.0, np.nan, -0.0, 0.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, ml_dtypes.bfloat16],
                         ids=lambda t: np.dtype(t).name)
def test_signed_zeros_sort_as_equal_values(client, dtype):
    """-0.0 and 0.0 are equal values: the sorted values are NumPy's (compared by value)."""
    v = SIGNED.astype(dtype)
    a = client.from_numpy(v, distarray.split_index_map(v.shape, 0, [0, 1]))
    check_values(distarray.sort(a), np.sort(v.astype(np.float64)).astype(dtype), "ascending")
    check_values(distarray.sort(a, descending=True),
                 np.sort(v.astype(np.float64))[::-1].astype(dtype), "descending")


@pytest.mark.parametrize("descending", [False, True])
def test_signed_zeros_tie_in_argsort(client, descending):
    a = client.from_numpy(SIGNED, distarray.split_index_map(SIGNED.shape, 0, [0, 1]))
    check(distarray.argsort(a, descending=descending), expected(SIGNED, 0, descending)[1],
          f"descending={descending}")


@pytest.mark.xfail(strict=True, reason=(
    "the daemon's sort writes the canonical quiet NaN for every NaN (server/kernels/"
    "sort_keys.h); NumPy's moves the elements, so a negative NaN keeps its sign bit"))
def test_sort_moves_the_elements_bits(client):
    v = np.array([1.0, -np.nan, 0.5, np.nan])
    a = client.from_numpy(v)
    got = distarray.sort(a).to_numpy()
    np.testing.assert_array_equal(got.view(np.uint64), np.sort(v, kind="stable").view(np.uint64))


def test_sort_errors(client, rng):
    keep, keep_np = bystander(client, rng)
    c = client.from_numpy(np.array([1 + 2j, 3 - 1j, 0j]))
    with pytest.raises(distarray.InvalidArgumentError):
        distarray.sort(c)
    with pytest.raises(distarray.InvalidArgumentError):
        distarray.argsort(c.astype(np.complex64), descending=True)
    a = client.from_numpy(random_array(rng, (4, 3), np.float64))
    with pytest.raises(np.exceptions.AxisError):
        distarray.sort(a, axis=2)
    with pytest.raises(np.exceptions.AxisError):
        distarray.argsort(a, axis=-3)
    with pytest.raises(ValueError, match="0-d"):
        distarray.sort(client.from_numpy(np.asarray(1.5)))
    with pytest.raises(TypeError, match="DistributedArray"):
        distarray.sort(np.arange(3))
    assert_intact(keep, keep_np)


def test_numpy_sort_and_argsort(client, rng):
    """numpy.sort/argsort run on the daemon: NumPy's default axis (-1), axis=None (the flattened
    array), and the kinds whose order the stable sort gives."""
    a_np = with_ties(rng, (9, 14), np.float64)
    a = put(client, a_np, "rows2")
    for kind in (None, "stable", "mergesort", "quicksort"):
        check(np.sort(a, kind=kind), expected(a_np, -1, False)[0], f"numpy.sort kind={kind}")
        check(np.argsort(a, kind=kind), np.argsort(a_np, kind="stable"), f"argsort kind={kind}")
    check(np.sort(a, 0), np.sort(a_np, 0), "numpy.sort axis 0")
    check(np.argsort(a, axis=0), np.argsort(a_np, axis=0, kind="stable"), "numpy.argsort axis 0")
    check(np.sort(a, axis=None), np.sort(a_np, axis=None), "numpy.sort axis=None")
    check(np.argsort(a, axis=None), np.argsort(a_np, axis=None, kind="stable"), "axis=None")
    check(np.sort(a, stable=True), np.sort(a_np, stable=True), "stable=True")
    for call in (lambda: np.sort(a, kind="heapsort"), lambda: np.argsort(a, kind="bogus")):
        with pytest.raises(ValueError, match="kind=.*stable"):
            call()
    with pytest.raises(ValueError, match="at the same time"):
        np.sort(a, kind="stable", stable=True)
    with pytest.raises(TypeError, match="order="):
        np.argsort(a, order="f0")


def test_sort_in_a_program(client, rng):
    """A traced sort is a program's manipulate statement (axis counted from the end)."""
    a_np = with_ties(rng, (6, 10), np.float32)
    program = distarray.trace(lambda a: distarray.argsort(distarray.sort(a, axis=0),
                                                          descending=True))
    statements = [s.manipulate.sort for s in program.proto.statements
                  if s.WhichOneof("op") == "manipulate"]
    assert [(s.axis, s.descending, s.indices) for s in statements] == [(0, False, False),
                                                                        (-1, True, True)]
    a = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, 0, [0, 1]))
    run = client.run_graph(program, {"a": a})
    values, _ = expected(a_np, 0, False)
    check(run.outputs["out"], expected(values, -1, True)[1], "argsort(sort(a))")


@pytest.mark.parametrize("layout", ["rows2", "cols3", "replicated", "uneven"])
def test_searchsorted_against_numpy(client, rng, layout):
    """searchsorted, both sides, over a sorted x1 split over devices and values in several
    layouts: values equal to x1's elements (where the sides differ), outside its range, NaN,
    and -0.0 against 0.0; numpy.searchsorted dispatches to the same request."""
    x1_np = np.sort(np.concatenate([rng.standard_normal(40), [0.0, 0.0, 1.5, 1.5, np.nan]]))
    x2_np = rng.standard_normal((6, 5))
    x2_np.flat[:6] = [x1_np[3], 1.5, -1e9, 1e9, np.nan, -0.0]
    x1 = client.from_numpy(x1_np, distarray.split_index_map(x1_np.shape, 0, [0, 1]))
    x2 = put(client, x2_np, layout)
    for side in ("left", "right"):
        want = np.searchsorted(x1_np, x2_np, side=side)
        check(distarray.searchsorted(x1, x2, side=side), want, f"side={side}")
        check(np.searchsorted(x1, x2, side=side), want, f"numpy.searchsorted side={side}")


def test_searchsorted_with_a_sorter_and_mixed_dtypes(client, rng):
    x1_np = rng.permutation(np.arange(30, dtype=np.int32))
    x2_np = rng.uniform(-2, 33, 12)
    x1 = client.from_numpy(x1_np)
    x2 = client.from_numpy(x2_np)
    sorter = distarray.argsort(x1)
    want = np.searchsorted(x1_np, x2_np, sorter=np.argsort(x1_np))
    check(distarray.searchsorted(x1, x2, sorter=sorter), want, "sorter, int32 with float64")


def test_searchsorted_errors(client, rng):
    keep, keep_np = bystander(client, rng)
    grid = client.from_numpy(random_array(rng, (3, 4), np.float64))
    line = client.from_numpy(np.sort(random_array(rng, (5,), np.float64)))
    with pytest.raises(ValueError, match="1-D"):
        distarray.searchsorted(grid, line)
    with pytest.raises(ValueError, match="side"):
        distarray.searchsorted(line, line, side="middle")
    c = client.from_numpy(np.array([1 + 2j, 0j]))
    with pytest.raises(distarray.InvalidArgumentError):
        distarray.searchsorted(c, c)
    assert_intact(keep, keep_np)
