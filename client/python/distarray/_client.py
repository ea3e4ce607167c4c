"""Connecting to distarrayd: the Client, its session and keepalive thread."""

from __future__ import annotations

import logging
import os
import secrets
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from . import _default, _transfer
from ._array import DistributedArray
from ._channel import wait_for_channel
from ._creation import arange_fill
from ._errors import from_rpc_error, translate_errors
from ._graph import GraphRun, program_proto
from ._index_map import IndexMapLike, on_device, to_proto_index_map
from ._rpc import Rpc
from ._shared_memory import SharedMemoryPolicy, check_mode
from ._types import DTypeLike, ModeLike, to_proto_dtype, to_proto_mode, to_proto_scalar
from .v1 import distarray_pb2 as pb

_log = logging.getLogger("distarray")

SESSION_KEY = "distarray-session"

PemLike = Union[bytes, str, os.PathLike, None]


@dataclass
class ConnectOptions:
    """Tuning of a Client; the defaults match the C++ SDK's ConnectOptions, except the message
    sizes (each message costs Python more than C++)."""

    #: Bytes of each data message of an upload: 4 MiB took a 1 GiB upload on a 16-core host from
    #: 3.8-4.2 GB/s (1 MiB, the C++ SDK's) to 5.1-5.2 GB/s (docs/performance.md).
    upload_message_bytes: int = 4 << 20
    #: The largest message a download asks for (DownloadArrayRequest.max_message_bytes, at most
    #: 64 MiB): fewer, larger messages cost Python less per byte than the daemon's 1 MiB default.
    download_message_bytes: int = 4 << 20
    #: Whole-array transfers of at least ``parallel_min_bytes`` are split along the first axis
    #: over this many streams, each on its own connection (docs/api.md, "Transfers").
    parallel_streams: int = 4
    parallel_min_bytes: int = 64 << 20
    #: The session id (metadata "distarray-session"); None: a random one. ``session=False``
    #: sends none: unnamed arrays then persist like named ones (what the CLI does).
    session_id: Optional[str] = None
    session: bool = True
    #: Renew the session's lease from a daemon thread every lease/3.
    keepalive: bool = True
    #: Transfers through POSIX shared memory when the daemon shares this process's /dev/shm
    #: (docs/api.md, "Transfers through shared memory"). "auto": transfers of at least
    #: ``shared_memory_min_bytes`` when GetServerInfo's host_id is this process's; a refusal
    #: (another /dev/shm or user, an older daemon, shared memory off on the daemon) streams
    #: instead, and so does the client from then on; a segment the daemon will not make now (the
    #: tenant's bounds) streams that transfer only. "always": every transfer
    #: (FailedPreconditionError when the daemon does not share /dev/shm; its refusals are
    #: raised). "never": always stream. Needs a session (``session=False`` streams).
    shared_memory: str = "auto"
    shared_memory_min_bytes: int = 1 << 20
    #: After a shared-memory transfer the client keeps its segment (if at most this large) for
    #: the next one: making a segment costs more than the copies it saves. 0: one per transfer.
    shared_memory_cache_bytes: int = 1 << 30


def _read_pem(value: PemLike) -> Optional[bytes]:
    """PEM bytes from bytes, a PEM string, or a path to a PEM file."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    text = os.fspath(value)
    if "-----BEGIN" in text:
        return text.encode()
    with open(text, "rb") as f:
        return f.read()


def _keepalive_loop(rpc: Rpc, period: float, stop: threading.Event) -> None:
    while not stop.wait(period):
        try:
            rpc.call("KeepAlive", pb.KeepAliveRequest(), period)
        except Exception as e:  # noqa: BLE001: the next round retries
            _log.debug("distarray: keepalive failed: %s", e)


def _shutdown(stop: threading.Event, thread: Optional[threading.Thread], rpc: Rpc) -> None:
    stop.set()
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout=5)
    rpc.closed = True  # the finalizers of arrays still alive then call nothing
    rpc.segments.close()  # released through the channel, before it closes
    for channel in rpc.channels:
        channel.close()


class Client:
    """A connection to one distarrayd. Create it with ``distarray.connect``.

    Thread-safe. Arrays created through it belong to its session: when the client closes (it ends
    the session) or the process dies and the lease runs out, the daemon deletes the unnamed ones.
    Use it as a context manager, or call ``close()``.
    """

    def __init__(
        self, address: str, credentials: Optional[grpc.ChannelCredentials], token: Optional[str],
        options: ConnectOptions, timeout: float,
    ):
        check_mode(options.shared_memory)  # a bad option fails before anything connects
        self.address = address
        self.options = options
        metadata: List[Tuple[str, str]] = []
        self.session_id: Optional[str] = None
        if options.session:
            self.session_id = options.session_id or "s-" + secrets.token_hex(16)
            metadata.append((SESSION_KEY, self.session_id))
        if token:
            metadata.append(("authorization", f"Bearer {token}"))
        self._rpc = Rpc(self, address, credentials, metadata, options, timeout)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._finalizer = weakref.finalize(
            self, _shutdown, self._stop, None, self._rpc
        )

        try:
            wait_for_channel(self._rpc.channel, address, timeout)
            info = self.server_info()
        except BaseException:
            self._finalizer()
            raise
        self.lease_seconds = info.session_lease_seconds
        self._shared_memory = SharedMemoryPolicy(
            options.shared_memory, options.shared_memory_min_bytes, info.host_id, address,
            has_session=options.session,
        )
        self._rpc.shared_memory = self._shared_memory
        if options.session and options.keepalive and info.session_lease_seconds > 0:
            # A third of the lease: two renewals may be lost before the session expires.
            period = max(0.1, info.session_lease_seconds / 3)
            self._thread = threading.Thread(
                target=_keepalive_loop, args=(self._rpc, period, self._stop),
                name="distarray-keepalive", daemon=True,
            )
            self._thread.start()
            self._finalizer.detach()
            self._finalizer = weakref.finalize(
                self, _shutdown, self._stop, self._thread, self._rpc
            )

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has run."""
        return self._rpc.closed

    # ---- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Deletes the arrays this client still owns, ends its session (so it no longer counts
        in the daemon's live_sessions, and unnamed arrays released from it go too), stops the
        keepalive thread, closes the connections and removes the kept shared-memory segment.
        Named arrays stay, and so do a ``session=False`` client's released ones."""
        if self.closed:
            return
        for array in self._rpc.owned():
            if array.owned:
                try:
                    array.delete()
                except Exception as e:  # noqa: BLE001: best effort, as at process exit
                    _log.debug("distarray: deleting %s at close failed: %s", array.handle, e)
        self._end_session()
        self._rpc.closed = True
        self._finalizer()

    def _end_session(self) -> None:
        """EndSession for this client's own session (a random id: a chosen one may be shared
        with other clients, so that one is left to its lease). Best effort: a daemon already gone
        (or an older one) lets the lease run out."""
        if self.session_id is None or self.options.session_id is not None:
            return
        try:
            # A short deadline: a daemon already gone would hold close() in retries.
            self._rpc.call("EndSession", pb.EndSessionRequest(), timeout=1)
        except grpc.RpcError as e:
            _log.debug(
                "distarray: ending session %s failed: %s", self.session_id, from_rpc_error(e)
            )

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"session={self.session_id}"
        return f"<distarray.Client {self.address} {state}>"

    # ---- server -----------------------------------------------------------------------------

    def server_info(self, timeout: Optional[float] = 30) -> "pb.GetServerInfoResponse":
        """The daemon's GetServerInfo: backend, version, devices and memory, features, limits."""
        return self._rpc.server_info(timeout)

    @property
    def features(self) -> frozenset:
        """What the daemon serves (GetServerInfo.features: "reshard", "elementwise.add"...)."""
        if self._rpc.features is None:
            self._rpc.server_info()
        return self._rpc.features  # type: ignore[return-value]

    @property
    def shared_memory_available(self) -> bool:
        """Whether transfers may go through shared memory now: the daemon reported this
        process's host id at connect (and has not refused a segment since), and the
        ``shared_memory`` option allows it."""
        return self._shared_memory.available

    @translate_errors
    def keepalive(self) -> int:
        """Renews the session now; returns how many unnamed arrays the session owns."""
        response = self._rpc.call("KeepAlive", pb.KeepAliveRequest(), timeout=30)
        return response.session_arrays

    @translate_errors
    def synchronize(self, *arrays: DistributedArray, timeout: Optional[float] = None) -> None:
        """Waits for the daemon's queued work (all of it, today)."""
        self._rpc.call(
            "Synchronize", pb.SynchronizeRequest(handles=[a.handle for a in arrays]), timeout
        )

    # ---- arrays -----------------------------------------------------------------------------

    def _spec(self, shape, dtype, index_map, mode, name) -> "pb.ArraySpec":
        shape = tuple(int(d) for d in shape)
        if index_map is None:
            index_map = on_device(len(shape), 0)
        return pb.ArraySpec(
            shape=pb.Shape(dims=shape), dtype=to_proto_dtype(dtype),
            index_map=to_proto_index_map(index_map, len(shape)), mode=to_proto_mode(mode),
            name=name or "",
        )

    def from_numpy(
        self, arr: Any, index_map: Optional[IndexMapLike] = None, *, mode: ModeLike = "replica",
        name: Optional[str] = None, progress: Optional[bool] = None, timeout: Optional[float] = None,
    ) -> DistributedArray:
        """Uploads a NumPy array (anything ``numpy.asarray`` takes) into a new distributed array.

        ``index_map``: cupyx's form, ``{device: [tuple of slices, ...]}`` (helpers:
        ``split_index_map``, ``make_2d_index_map``, ``replicated_index_map``); default: the whole
        array on device 0. ``mode``: 'replica' uploads the bytes directly; an op mode ('sum'...)
        uploads REPLICA and changes mode on the daemon. ``name``: a persistent name (the array
        outlives this process). Large uploads run over parallel streams with a progress bar.
        """
        arr = np.asarray(arr)
        spec = self._spec(arr.shape, arr.dtype, index_map, "replica", name)
        target_mode = to_proto_mode(mode)
        info = _transfer.upload_new(self._rpc, arr, spec, progress=progress, timeout=timeout)
        array = DistributedArray(self, info, owned=True)
        if target_mode != pb.MODE_REPLICA:
            # Uploads write REPLICA arrays; an in-place change keeps the handle and the name.
            array.change_mode(target_mode, in_place=True)
        return array

    def create(
        self, shape: Sequence[int], dtype: DTypeLike = np.float64,
        index_map: Optional[IndexMapLike] = None, *, mode: ModeLike = "replica",
        name: Optional[str] = None, fill: Optional["pb.Fill"] = None,
    ) -> DistributedArray:
        """A new array filled on the devices (``fill``: a pb.Fill; default zeros). See
        ``zeros``, ``ones``, ``full``, ``arange``, ``uniform``, ``normal`` and ``integers`` for the
        common fills."""
        spec = self._spec(shape, dtype, index_map, mode, name)
        return DistributedArray(self, self._rpc.create_array(spec, fill or pb.Fill()), owned=True)

    def zeros(self, shape, dtype=np.float64, index_map=None, **kw) -> DistributedArray:
        """An array of zeros."""
        return self.create(shape, dtype, index_map, fill=pb.Fill(zeros=pb.Fill.Zeros()), **kw)

    def ones(self, shape, dtype=np.float64, index_map=None, **kw) -> DistributedArray:
        """An array of ones."""
        return self.create(shape, dtype, index_map, fill=pb.Fill(ones=pb.Fill.Ones()), **kw)

    def full(self, shape, value, dtype=np.float64, index_map=None, **kw) -> DistributedArray:
        """An array of ``value``."""
        fill = pb.Fill(full=pb.Fill.Full(value=to_proto_scalar(value)))
        return self.create(shape, dtype, index_map, fill=fill, **kw)

    def arange(self, start, stop=None, step=1, dtype=None, index_map=None, **kw
               ) -> DistributedArray:
        """NumPy's ``arange(stop)``, ``arange(start, stop[, step])``: ``ceil((stop - start) /
        step)`` elements ``start + i * step``, in NumPy's dtype unless ``dtype`` says
        (``distarray.arange``'s rules, on this client); ``index_map``, ``mode``, ``name`` as
        ``create``'s.

        A shape (a tuple or list) first is the older form ``arange(shape, start=0, step=1,
        dtype=float64, index_map=None)``: the element at C-order position i of ``shape`` holds
        ``start + i * step``."""
        if isinstance(start, (tuple, list)):
            shape, first = start, 0 if stop is None else stop
            fill = pb.Fill(arange=pb.Fill.Arange(start=float(first), step=float(step)))
            return self.create(shape, np.float64 if dtype is None else dtype, index_map,
                               fill=fill, **kw)
        count, dtype, fill = arange_fill(start, stop, step, dtype)
        return self.create((count,), dtype, index_map, fill=fill, **kw)

    def uniform(self, shape, low: float = 0.0, high: float = 1.0, seed: int = 0,
                dtype=np.float64, index_map=None, **kw) -> DistributedArray:
        """Uniform draws in [low, high); the same seed gives the same values in any layout."""
        fill = pb.Fill(uniform=pb.Fill.Uniform(low=low, high=high, seed=seed))
        return self.create(shape, dtype, index_map, fill=fill, **kw)

    def normal(self, shape, mean: float = 0.0, stddev: float = 1.0, seed: int = 0,
               dtype=np.float64, index_map=None, **kw) -> DistributedArray:
        """Normal draws ``mean + stddev * z`` (floating and complex dtypes); the same seed gives
        the same values in any layout."""
        fill = pb.Fill(normal=pb.Fill.Normal(mean=mean, stddev=stddev, seed=seed))
        return self.create(shape, dtype, index_map, fill=fill, **kw)

    def integers(self, shape, low: int, high: int, seed: int = 0, dtype=np.int64,
                 index_map=None, **kw) -> DistributedArray:
        """Uniform integers in [low, high) (integer dtypes), exact over the whole int64 range;
        the same seed gives the same values in any layout."""
        fill = pb.Fill(integers=pb.Fill.Integers(low=low, high=high, seed=seed))
        return self.create(shape, dtype, index_map, fill=fill, **kw)

    @translate_errors
    def attach(self, name_or_handle: str) -> DistributedArray:
        """The existing array with this name or handle. The object does not own it: it stays on
        the daemon when the object dies (``delete()`` removes it)."""
        response = self._rpc.call("DescribeArray", pb.DescribeArrayRequest(handle=name_or_handle))
        return DistributedArray(self, response.array, owned=False)

    describe = attach

    @translate_errors
    def list_arrays(self, page_size: int = 0) -> List[DistributedArray]:
        """Every live array (following ListArrays' pages), none of them owned."""
        arrays: List[DistributedArray] = []
        request = pb.ListArraysRequest(page_size=page_size)
        while True:
            response = self._rpc.call("ListArrays", request)
            arrays += [DistributedArray(self, info, owned=False) for info in response.arrays]
            if not response.next_page_token:
                return arrays
            request.page_token = response.next_page_token

    @translate_errors
    def delete(self, name_or_handle: Union[str, DistributedArray]) -> None:
        """Deletes an array by name or handle (NotFoundError when there is none)."""
        if isinstance(name_or_handle, DistributedArray):
            name_or_handle.delete()
            return
        self._rpc.call("DeleteArray", pb.DeleteArrayRequest(handle=name_or_handle))
        owned = self._rpc.untrack(name_or_handle)
        if owned is not None and owned._finalizer is not None:
            owned._finalizer.detach()

    # ---- programs ---------------------------------------------------------------------------

    def register_program(self, program: Any) -> str:
        """Keeps a program on the daemon (checked once) to run many times by id."""
        self._rpc.require("register_program")
        return self._register(program_proto(program))

    @translate_errors
    def _register(self, proto) -> str:
        response = self._rpc.call("RegisterProgram", pb.RegisterProgramRequest(program=proto))
        return response.program_id

    @translate_errors
    def delete_program(self, program_id: str) -> None:
        """Drops a registered program."""
        self._rpc.call("DeleteProgram", pb.DeleteProgramRequest(program_id=program_id))

    def run_graph(
        self, program: Any, arguments: Optional[Mapping[str, Union[DistributedArray, str]]] = None,
        *, output_names: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
        **kwargs: Union[DistributedArray, str],
    ):
        """Runs a program (a ``distarray.Program``, a traced function from ``distarray.trace``,
        a pb.Program, or a registered program's id) in one RunGraph call.

        ``arguments`` (or keyword arguments) bind the program's inputs to arrays (or handles or
        names). ``output_names`` names outputs persistently. ``timeout`` (seconds) is the call's
        deadline: a loop still running then is stopped on the devices (DeadlineExceededError).
        Returns a ``GraphRun``: ``outputs`` (arrays), ``values`` (NumPy arrays), ``iterations``,
        ``hit_iteration_cap``, ``graph_cache_hit``, ``execution``, ``device_seconds``,
        ``fused_loops``, ``fused_chains_in_bodies``, ``fused_chain_statements_in_bodies``.
        """
        self._rpc.require("run_graph")
        request = pb.RunGraphRequest()
        if isinstance(program, str):
            request.program_id = program
        else:
            request.program.CopyFrom(program_proto(program))
        bound: Dict[str, Union[DistributedArray, str]] = dict(
            getattr(program, "captured_arguments", {}))
        bound.update(arguments or {})
        bound.update(kwargs)
        for variable, value in bound.items():
            request.arguments[variable] = value.handle if isinstance(value, DistributedArray) else value
        for variable, name in (output_names or {}).items():
            request.output_names[variable] = name
        response = self._run_graph(request, timeout)
        return GraphRun.from_response(self, response)

    @translate_errors
    def _run_graph(self, request, timeout):
        return self._rpc.call("RunGraph", request, timeout)


def connect(
    address: Optional[str] = None, *, token: Optional[str] = None, tls: bool = False,
    root_certificates: PemLike = None, client_certificate: PemLike = None,
    client_key: PemLike = None, timeout: float = 10.0, options: Optional[ConnectOptions] = None,
    **option_overrides: Any,
) -> Client:
    """Connects to a distarrayd and opens a session.

    ``address``: host:port (default: ``$DISTARRAY_ADDRESS`` or ``127.0.0.1:50051``).
    ``token``: sent as ``authorization: Bearer <token>`` on every call (default
    ``$DISTARRAY_TOKEN``). ``tls``: connect with TLS, verifying the daemon against
    ``root_certificates`` (PEM bytes or a path; default: the system's roots);
    ``client_certificate`` and ``client_key`` present a client certificate (mutual TLS).
    ``timeout``: seconds to wait for the daemon (UnavailableError after; within about 0.5 s when
    the connection is refused, that is nothing listens at the address). ``options`` or keyword
    overrides of ``ConnectOptions`` (``parallel_streams=8``, ``session=False``,
    ``shared_memory="never"``...).

    On the daemon's host (the same /dev/shm), transfers of at least 1 MiB go through POSIX shared
    memory rather than gRPC (``shared_memory="auto"``, the default; ``ConnectOptions``).

    The new client becomes the default of the module-level functions (``distarray.zeros``,
    ``distarray.asarray``...) until another ``connect`` or its ``close()``. The default is held
    weakly: keep a reference to the client (a client collected closes, as before).

    Calls that change nothing on the daemon are retried on UNAVAILABLE, as while it drains
    (docs/api.md, "Retries"). The session's lease is renewed from a daemon thread until the client
    closes, which ends the session; use the client as a context manager::

        with distarray.connect("127.0.0.1:50051") as client:
            x = client.from_numpy(numpy.arange(10.0), distarray.split_index_map((10,), 0, [0, 1]))
    """
    address = address or os.environ.get("DISTARRAY_ADDRESS") or "127.0.0.1:50051"
    if token is None:
        token = os.environ.get("DISTARRAY_TOKEN") or None
    opts = options or ConnectOptions()
    if option_overrides:
        opts = ConnectOptions(**{**opts.__dict__, **option_overrides})
    credentials = None
    if tls or root_certificates is not None or client_certificate is not None:
        if (client_certificate is None) != (client_key is None):
            raise ValueError("client_certificate and client_key go together (mutual TLS)")
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read_pem(root_certificates),
            private_key=_read_pem(client_key),
            certificate_chain=_read_pem(client_certificate),
        )
    client = Client(address, credentials, token, opts, timeout)
    # The module-level functions' client (distarray.zeros...), held until closed or replaced, so
    # `distarray.connect(address)` alone is enough, as a NumPy user writes it.
    _default.set_default(client, owned=True)
    return client


_default.set_connector(connect)
