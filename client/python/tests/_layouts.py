"""Layouts the indexing and shape tests run over: rows split over 2 devices, columns split over
3, replicated on 2, and uneven chunks (one device holds a single row, another the rest, the
others nothing; an array of one row is on device 1 alone, as the daemon takes no empty chunk)."""

from __future__ import annotations

from typing import Callable, Dict, Sequence

import numpy as np

import distarray


def _uneven(shape: Sequence[int]):
    if len(shape) == 0 or shape[0] < 2:
        return distarray.on_device(len(shape), 1)
    rest = (slice(None),) * (len(shape) - 1)
    return {2: [(slice(0, 1),) + rest], 0: [(slice(1, None),) + rest]}


def _split(axis: int, devices: Sequence[int]):
    def make(shape: Sequence[int]):
        if len(shape) <= axis:
            return distarray.on_device(len(shape), devices[0])
        return distarray.split_index_map(shape, axis, list(devices))

    return make


LAYOUTS: Dict[str, Callable[[Sequence[int]], dict]] = {
    "rows2": _split(0, (0, 1)),
    "cols3": _split(1, (3, 1, 2)),
    "replicated": lambda shape: distarray.replicated_index_map(len(shape), [1, 3]),
    "uneven": _uneven,
}


def put(client, values: np.ndarray, layout: str):
    return client.from_numpy(values, LAYOUTS[layout](values.shape))


def check(result, expected: np.ndarray, msg: str = "") -> None:
    """``result`` (a DistributedArray) holds exactly ``expected``: shape, dtype and values."""
    assert isinstance(result, distarray.DistributedArray), f"{msg}: {type(result).__name__}"
    got = result.to_numpy()
    assert got.shape == expected.shape, f"{msg}: shape {got.shape}, NumPy gives {expected.shape}"
    assert got.dtype == expected.dtype, f"{msg}: dtype {got.dtype}, NumPy gives {expected.dtype}"
    np.testing.assert_array_equal(got, expected, err_msg=msg)


def bystander(client, rng):
    """An array that errors elsewhere must leave intact (returned with its values)."""
    values = rng.uniform(1, 2, (5, 3))
    return client.from_numpy(values, distarray.split_index_map((5, 3), 0, [0, 2])), values


def assert_intact(array, values) -> None:
    np.testing.assert_array_equal(array.to_numpy(), values)
    np.testing.assert_array_equal((array + 1).to_numpy(), values + 1)  # still serving
