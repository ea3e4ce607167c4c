"""Advanced indexing with an integer or an integer array on every axis (``x[i, j]``, the arrays
broadcast together), against NumPy on fresh random data over several layouts."""

from __future__ import annotations

import numpy as np
import pytest

import distarray as xp
from _layouts import LAYOUTS, put


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_integer_arrays_on_every_axis_match_numpy(client, layout):
    rng = np.random.default_rng()
    v = rng.standard_normal((5, 6, 7))
    x = put(client, v, layout)
    i = rng.integers(-5, 5, (3, 1))
    j = rng.integers(-7, 7, (4,))
    held_i = client.from_numpy(i, xp.split_index_map(i.shape, 0, [2, 0]))
    cases = [
        ((held_i, 2, client.from_numpy(j)), (i, 2, j)),
        ((i, -1, j), (i, -1, j)),
        ((held_i, rng.integers(0, 6, (3, 4)), j), None),
        ((1, [0, 5, 5], [6, 0, -1]), (1, [0, 5, 5], [6, 0, -1])),
    ]
    for key, np_key in cases:
        if np_key is None:
            np_key = tuple(k if not hasattr(k, "handle") else k.to_numpy() for k in key)
        got = x[key].to_numpy()
        want = v[np_key]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_out_of_range_positions_are_index_errors(client):
    x = client.from_numpy(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError):
        x[client.from_numpy(np.array([0, 3])), client.from_numpy(np.array([1, 1]))]
    with pytest.raises(IndexError):
        x[np.array([0, 1]), 4]
    np.testing.assert_array_equal(x[[2, 0], [-1, 0]].to_numpy(), np.array([11.0, 0.0]))
