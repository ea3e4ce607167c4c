"""The default client of the module-level functions (``distarray.zeros``, ``distarray.asarray``).

``distarray.connect`` makes each client it opens the default. With none (or the default closed),
the first module-level call that needs a client connects to ``$DISTARRAY_ADDRESS``; without that
variable it raises, rather than guess an address. This module imports nothing of the package:
``_client`` registers how to connect (``set_connector``), so the two do not import each other.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Callable, Optional

_lock = threading.RLock()
_default: Optional["weakref.ref[Any]"] = None
_owned: Optional[Any] = None  # the lazily connected default, which nothing else holds
_connector: Optional[Callable[[str], Any]] = None


def set_connector(connect: Callable[[str], Any]) -> None:
    """How to open a client for an address (``distarray.connect``)."""
    global _connector
    _connector = connect


def set_default(client: Any, *, owned: bool = False) -> None:
    """Makes ``client`` the default. ``owned``: the module holds it (``distarray.connect``'s
    clients and the lazily connected one) until it is closed or another becomes the default, so
    ``distarray.connect(address)`` works without keeping the result; otherwise it is held weakly
    (a client made another way stays the caller's to drop)."""
    global _default, _owned
    with _lock:
        _default = weakref.ref(client)
        _owned = client if owned else None


def current() -> Optional[Any]:
    """The default client, or None when there is none, it was collected, or it is closed."""
    client = _default() if _default is not None else None
    return None if client is None or client.closed else client


def client_for(client: Optional[Any] = None) -> Any:
    """``client`` if given, else the default one, connecting to ``$DISTARRAY_ADDRESS`` on first
    use."""
    if client is not None:
        return client
    with _lock:
        found = current()
        if found is not None:
            return found
        address = os.environ.get("DISTARRAY_ADDRESS")
        if not address or _connector is None:
            raise RuntimeError(
                "no default distarray client: call distarray.connect(address) first (it becomes "
                "the default), pass client=, or set DISTARRAY_ADDRESS to connect on first use"
            )
        client = _connector(address)
        set_default(client, owned=True)
        return client
