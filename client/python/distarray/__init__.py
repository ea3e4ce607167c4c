"""distarray: NumPy arrays split across the GPUs of one node, served by distarrayd.

    import numpy as np
    import distarray

    with distarray.connect("127.0.0.1:50051") as client:
        a = client.from_numpy(np.arange(12.0).reshape(4, 3),
                              distarray.split_index_map((4, 3), axis=0, devices=[0, 1]))
        b = a.reshard(distarray.replicated_index_map(2, [0, 1]))
        c = distarray.sqrt(a * 2 + 1).sum(axis=0)
        print(c.to_numpy())

Main names: ``connect`` -> ``Client`` (the latest is the default client of the module
functions); ``DistributedArray`` (``client.from_numpy``, ``client.attach``); creation in NumPy's
signatures (``zeros``, ``ones``, ``full``, ``empty``, ``arange``, ``*_like``, ``asarray``: the
explicit upload); dtype names (``float32``, ``bool``...); indexing (``x[1:, ::-1, None]``,
``x[key] = value``) and shapes (``reshape``, ``permute_dims``, ``concat``, ``stack``...);
sorting and searching (``sort``, ``argsort``, ``searchsorted``, ``nonzero``, ``take``,
``unique_values`` and the other ``unique_*``: the ones whose length depends on the values read
back one count); boolean masks on the devices (``x[mask]``, ``x[mask] = v``); ``take`` and
``take_along_axis`` (indices held on the devices or listed);
index-map helpers ``split_index_map``, ``replicated_index_map``,
``make_2d_index_map``, ``on_device``; NumPy's ufuncs and reductions as module functions
(``sqrt``, ``where``, ``sum``...); random arrays drawn on the devices, the same in any layout
(``distarray.random.uniform``, ``normal``, ``integers``); programs: ``trace``, ``Program``,
``while_loop``, ``cond``; errors: ``DistarrayError`` and one subclass per status code.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _functions
from ._array import DistributedArray
from ._client import Client, ConnectOptions, connect
from ._creation import *  # noqa: F401,F403
from ._creation import __all__ as _creation_names
from ._dtypes import *  # noqa: F401,F403
from ._dtypes import __all__ as _dtype_names
from ._errors import *  # noqa: F401,F403
from ._errors import __all__ as _error_names
from ._functions import *  # noqa: F401,F403
from ._functions import __all__ as _function_names
from ._graph import GraphRun, Program, Var, cond, trace, while_loop
from ._index_map import (
    IndexMap,
    make_2d_index_map,
    on_device,
    replicated_index_map,
    split_index_map,
)
from ._manipulation import *  # noqa: F401,F403
from ._manipulation import __all__ as _manipulation_names
from ._transfer import PROGRESS_MIN_BYTES

# The array API namespace (2024.12): these come last, so the array API's signatures of sum, prod,
# clip, astype and matmul replace NumPy's (they keep distarray's keyword options).
from ._api_creation import *  # noqa: F401,F403,E402
from ._api_creation import __all__ as _api_creation_names  # noqa: E402
from ._api_cumulative import cumulative_prod, cumulative_sum  # noqa: E402
from ._api_dtypes import can_cast, finfo, iinfo, isdtype, result_type  # noqa: E402
from ._api_elementwise import *  # noqa: F401,F403,E402
from ._api_elementwise import __all__ as _api_elementwise_names  # noqa: E402
from ._api_indexing import take, take_along_axis  # noqa: E402
from ._api_info import __array_namespace_info__  # noqa: E402
from ._api_linalg import *  # noqa: F401,F403,E402
from ._api_linalg import __all__ as _api_linalg_names  # noqa: E402
from ._api_manipulation import *  # noqa: F401,F403,E402
from ._api_manipulation import __all__ as _api_manipulation_names  # noqa: E402
from ._api_namespace import *  # noqa: F401,F403,E402
from ._api_namespace import __all__ as _api_namespace_names  # noqa: E402
from ._api_namespace import __array_api_version__  # noqa: E402
from ._api_searching import nonzero  # noqa: E402
from ._api_set import unique_all, unique_counts, unique_inverse, unique_values  # noqa: E402
from ._api_sorting import argsort, searchsorted, sort  # noqa: E402
from . import linalg  # noqa: E402  (the array API's linalg extension)
from . import _numpy_linalg  # noqa: E402,F401  (numpy.linalg's functions on DistributedArrays)
from . import random  # noqa: E402  (uniform, normal, integers drawn on the devices)
from ._api_statistics import *  # noqa: F401,F403,E402
from ._api_statistics import __all__ as _api_statistics_names  # noqa: E402

__version__ = "0.1.0"


def from_numpy(client: Client, arr: Any, index_map=None, *, mode="replica",
               name: Optional[str] = None, **kwargs: Any) -> DistributedArray:
    """``client.from_numpy(arr, index_map, mode=, name=)``: uploads a NumPy array."""
    return client.from_numpy(arr, index_map, mode=mode, name=name, **kwargs)


def attach(client: Client, name: str) -> DistributedArray:
    """``client.attach(name)``: the existing array with this name (or handle), not owned."""
    return client.attach(name)


__all__ = [
    "Client",
    "ConnectOptions",
    "DistributedArray",
    "GraphRun",
    "IndexMap",
    "Program",
    "Var",
    "attach",
    "cond",
    "connect",
    "from_numpy",
    "make_2d_index_map",
    "on_device",
    "replicated_index_map",
    "split_index_map",
    "trace",
    "while_loop",
    "PROGRESS_MIN_BYTES",
] + (list(_error_names) + list(_function_names) + list(_creation_names) + list(_dtype_names)
     + list(_manipulation_names) + list(_api_creation_names) + list(_api_elementwise_names)
     + list(_api_linalg_names) + list(_api_manipulation_names) + list(_api_namespace_names)
     + list(_api_statistics_names)
     + ["argsort", "can_cast", "cumulative_prod", "cumulative_sum", "finfo", "iinfo", "isdtype",
        "linalg", "nonzero", "random", "result_type", "searchsorted", "sort", "take",
        "take_along_axis", "unique_all", "unique_counts", "unique_inverse", "unique_values"])
__all__ = sorted(set(__all__))
