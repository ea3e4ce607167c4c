"""One client's calls to distarrayd, for every module of the SDK that makes them.

``Rpc`` owns what a call needs: the stub on the client's connection (and the connections of the
parallel streams), the call metadata (the session id and the bearer token), the deadline of each
call, the daemon's features for capability checks, and what transfers choose their path by (the
options, the segment cache, the shared-memory policy). The client, its arrays, transfers and
programs all call through it, so none of them needs another's internals.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, List, Optional, Sequence, Tuple

import grpc

from ._channel import CHANNEL_OPTIONS, wait_for_channel
from ._errors import UnavailableError, UnimplementedError, from_rpc_error, translate_errors
from ._shared_memory import SegmentCache, SegmentCalls, SharedMemoryPolicy
from ._wire import Connection
from .v1 import distarray_pb2 as pb
from .v1 import distarray_pb2_grpc as pb_grpc

_log = logging.getLogger("distarray")

_MAX_MESSAGE_BYTES = 64 << 20

Metadata = Tuple[Tuple[str, str], ...]

# Each Client's Rpc, for what is handed a Client (a DistributedArray made from one): Rpc.of.
_BY_CLIENT: "weakref.WeakKeyDictionary[Any, Rpc]" = weakref.WeakKeyDictionary()


class Rpc:
    """The calls of one client: ``call(method, request, timeout)`` sends ``request`` to the
    ArrayService ``method`` with the client's metadata. Thread-safe.

    ``client`` is the Client the calls belong to (``Rpc.of(client)`` finds them; the client is
    not held), ``options`` its ConnectOptions.
    """

    def __init__(
        self, client: Any, address: str, credentials: Optional[grpc.ChannelCredentials],
        metadata: Sequence[Tuple[str, str]], options: Any, connect_timeout: float,
    ):
        _BY_CLIENT[client] = self
        self.address = address
        self.options = options
        self.metadata: Metadata = tuple(metadata)
        self._credentials = credentials
        self._connect_timeout = connect_timeout
        self._channel_options = [
            ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
        ] + CHANNEL_OPTIONS
        self.channel = self._new_channel(self._channel_options)
        self.stub = pb_grpc.ArrayServiceStub(self.channel)
        #: The main connection: every call but the parallel streams' goes through it.
        self.connection = Connection(self.channel, self.stub)
        #: Every channel opened, closed with the client.
        self.channels: List[grpc.Channel] = [self.channel]
        self._bulk: List[Connection] = []
        self._bulk_lock = threading.Lock()
        #: GetServerInfo's features, once read.
        self.features: Optional[frozenset] = None
        self.segments = SegmentCache(options.shared_memory_cache_bytes,
                                     SegmentCalls(self.stub, self.metadata))
        #: Set once the daemon's host id is known (at connect).
        self.shared_memory: Optional[SharedMemoryPolicy] = None
        self.closed = False
        self._owned: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()

    @staticmethod
    def of(client: Any) -> "Rpc":
        """The calls of ``client`` (a Client)."""
        try:
            return _BY_CLIENT[client]
        except (KeyError, TypeError):
            raise TypeError(f"not a distarray Client: {type(client).__name__}") from None

    def _new_channel(self, options) -> grpc.Channel:
        if self._credentials is not None:
            return grpc.secure_channel(self.address, self._credentials, options=options)
        return grpc.insecure_channel(self.address, options=options)

    # ---- calls ------------------------------------------------------------------------------

    def call(self, method: str, request, timeout: Optional[float] = None):
        """The ArrayService ``method`` with ``request``, this client's metadata and a deadline
        ``timeout`` seconds away (None: none): the response, or for a streaming method an
        iterator of them. Raises grpc.RpcError."""
        return getattr(self.stub, method)(request, metadata=self.metadata, timeout=timeout)

    def future(self, connection: Connection, method: str, request, timeout: Optional[float]):
        """The unary ``method`` on ``connection``, started: a grpc.Future."""
        return getattr(connection.stub, method).future(
            request, metadata=self.metadata, timeout=timeout
        )

    def bulk_connections(self, n: int) -> List[Connection]:
        """n connections of their own (opened on first use) for the parallel streams of a
        transfer. Each is connected before it is used (within the connect timeout): a first call
        on a channel still connecting fails at once if that attempt fails, where waiting rides
        it out."""
        with self._bulk_lock:
            while len(self._bulk) < n:
                channel = self._new_channel(
                    self._channel_options + [("grpc.use_local_subchannel_pool", 1)]
                )
                self.channels.append(channel)
                try:
                    wait_for_channel(channel, self.address, self._connect_timeout)
                except UnavailableError as e:
                    raise UnavailableError(
                        grpc.StatusCode.UNAVAILABLE,
                        f"distarrayd at {self.address} answered, but parallel stream connection "
                        f"{len(self._bulk)} did not: {e.message}",
                    ) from None
                self._bulk.append(Connection(channel, pb_grpc.ArrayServiceStub(channel)))
            return self._bulk[:n]

    # ---- the daemon's features --------------------------------------------------------------

    @translate_errors
    def server_info(self, timeout: Optional[float] = 30) -> "pb.GetServerInfoResponse":
        """GetServerInfo; remembers its features."""
        info = self.call("GetServerInfo", pb.GetServerInfoRequest(), timeout)
        self.features = frozenset(info.features)
        return info

    def require(self, feature: str) -> None:
        """UnimplementedError, before any call, when the daemon does not serve ``feature``."""
        features = self.features
        if features is None:
            self.server_info()
            features = self.features
        if feature not in features:  # type: ignore[operator]
            raise UnimplementedError(
                grpc.StatusCode.UNIMPLEMENTED,
                f"the daemon at {self.address} does not serve {feature} "
                "(GetServerInfo.features does not list it)",
            )

    # ---- arrays -----------------------------------------------------------------------------

    @translate_errors
    def create_array(self, spec: "pb.ArraySpec", fill: "pb.Fill",
                     timeout: Optional[float] = None) -> "pb.ArrayInfo":
        response = self.call("CreateArray", pb.CreateArrayRequest(spec=spec, fill=fill), timeout)
        return response.array

    def delete_quietly(self, handle: str) -> None:
        """DeleteArray, logging a failure at debug rather than raising it."""
        try:
            self.call("DeleteArray", pb.DeleteArrayRequest(handle=handle))
        except grpc.RpcError as e:
            _log.debug("distarray: deleting %s failed: %s", handle, from_rpc_error(e))

    def track(self, array: Any) -> None:
        """Remembers an array this client owns, to delete it when the client closes."""
        self._owned[array.handle] = array

    def untrack(self, handle: str) -> Optional[Any]:
        """Forgets an owned array; returns it, or None."""
        return self._owned.pop(handle, None)

    def owned(self) -> List[Any]:
        """The owned arrays still alive."""
        return list(self._owned.values())
