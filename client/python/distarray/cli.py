"""The ``distarray`` command line: inspect and move arrays of a distarrayd.

Exit codes: 0 ok; 1 the daemon answered an error (its status code name and message on stderr;
``health``: not SERVING); 2 usage error (bad flags or arguments, a local file that cannot be
read or written); 3 cannot connect (no daemon answered at the address).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from distarray._types import dtype_itemsize, dtype_name

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_CONNECT = 0, 1, 2, 3


class UsageError(Exception):
    """A problem with the command's arguments or local files (exit 2)."""


class ConnectError(Exception):
    """No daemon answered at the address (exit 3)."""


def _human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


def _format_index(idx) -> str:
    parts = []
    for s in idx:
        text = f"{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}"
        if s.step not in (None, 1):
            text += f":{s.step}"
        parts.append(text)
    return "[" + ", ".join(parts) + "]"


def _array_dict(a, chunks: bool = False) -> Dict[str, Any]:
    d: Dict[str, Any] = {
        "handle": a.handle,
        "name": a.name,
        "shape": list(a.shape),
        "dtype": dtype_name(a.info.dtype),
        "mode": a.mode,
        "devices": list(a.devices),
        "bytes_per_device": {str(k): v for k, v in sorted(a.bytes_per_device.items())},
    }
    if chunks:
        d["chunks"] = [
            {"device": c.device,
             "slices": [{"start": s.start, "stop": s.stop, "step": s.step or 1} for s in c.slices]}
            for c in a.info.index_map.chunks
        ]
    return d


class _Out:
    """Writes tables (rich) for people and JSON for scripts."""

    def __init__(self, as_json: bool):
        self.as_json = as_json
        from rich.console import Console

        self.console = Console()

    def json(self, value: Any) -> None:
        print(json.dumps(value, indent=2, sort_keys=False))

    def table(self, title: Optional[str], columns: Sequence[str], rows: List[Sequence[Any]]) -> None:
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for c in columns:
            table.add_column(c, justify="right" if c in ("bytes", "used", "limit", "total") else "left")
        for r in rows:
            table.add_row(*[str(v) for v in r])
        self.console.print(table)


def _connect(args):
    import distarray

    try:
        return distarray.connect(
            args.address, token=args.token, tls=args.tls, root_certificates=args.tls_ca,
            client_certificate=args.tls_cert, client_key=args.tls_key, timeout=args.timeout,
            # The CLI's arrays outlive it: no session, so an unnamed `put` persists like a
            # named one.
            session=False, keepalive=False,
        )
    except distarray.UnavailableError as e:
        raise ConnectError(f"{e.code.name}: {e.message}") from None
    except OSError as e:  # a TLS file that cannot be read
        raise UsageError(str(e)) from None


def cmd_info(args, out: _Out) -> int:
    with _connect(args) as client:
        info = client.server_info()
    devices = [
        {"id": d.id, "node": d.node, "name": d.name, "memory_used_bytes": d.memory_used_bytes,
         "memory_limit_bytes": d.memory_limit_bytes, "memory_total_bytes": d.memory_total_bytes}
        for d in info.devices
    ]
    dtypes = [dtype_name(t) for t in info.implemented_dtypes]
    if out.as_json:
        out.json({
            "address": args.address, "backend": info.backend, "version": info.version,
            "cluster_size": max(info.cluster_size, 1),
            "devices": devices, "array_count": info.array_count,
            "live_sessions": info.live_sessions,
            "session_lease_seconds": info.session_lease_seconds, "dtypes": dtypes,
            "features": list(info.features),
        })
        return EXIT_OK
    # A cluster (docs/cluster.md) numbers devices node-major; the node column says which daemon
    # owns each.
    nodes = f" on {info.cluster_size} nodes" if info.cluster_size > 1 else ""
    out.console.print(
        f"distarrayd [bold]{info.version}[/bold] at {args.address}: backend [bold]{info.backend}"
        f"[/bold], {len(devices)} devices{nodes}, {info.array_count} arrays, "
        f"{info.live_sessions} live sessions (lease {info.session_lease_seconds} s)"
    )
    out.table("devices", ["id", "node", "name", "used", "limit", "total"], [
        (d["id"], d["node"], d["name"], _human_bytes(d["memory_used_bytes"]),
         _human_bytes(d["memory_limit_bytes"]), _human_bytes(d["memory_total_bytes"]))
        for d in devices
    ])
    out.console.print("dtypes: " + ", ".join(dtypes))
    return EXIT_OK


def cmd_ls(args, out: _Out) -> int:
    with _connect(args) as client:
        arrays = client.list_arrays()
    if out.as_json:
        out.json([_array_dict(a) for a in arrays])
        return EXIT_OK
    out.table(None, ["handle", "name", "shape", "dtype", "mode", "devices", "bytes"], [
        (a.handle, a.name, "x".join(map(str, a.shape)) or "()", dtype_name(a.info.dtype), a.mode,
         ",".join(map(str, a.devices)), _human_bytes(sum(a.bytes_per_device.values())))
        for a in arrays
    ])
    return EXIT_OK


def cmd_describe(args, out: _Out) -> int:
    with _connect(args) as client:
        a = client.attach(args.array)
    if out.as_json:
        out.json(_array_dict(a, chunks=True))
        return EXIT_OK
    name = f" ({a.name})" if a.name else ""
    out.console.print(
        f"[bold]{a.handle}[/bold]{name}: shape {a.shape}, {dtype_name(a.info.dtype)}, mode "
        f"{a.mode}, {_human_bytes(a.size * dtype_itemsize(a.info.dtype))} logical"
    )
    rows = []
    for device, chunks in sorted(a.index_map.items()):
        for idx in chunks:
            rows.append((device, _format_index(idx)))
    out.table("chunks", ["device", "slices"], rows)
    out.table("memory", ["device", "bytes"], [
        (d, _human_bytes(n)) for d, n in sorted(a.bytes_per_device.items())
    ])
    return EXIT_OK


def cmd_rm(args, out: _Out) -> int:
    with _connect(args) as client:
        for target in args.arrays:
            client.delete(target)
            if not out.as_json:
                out.console.print(f"deleted {target}")
    if out.as_json:
        out.json({"deleted": args.arrays})
    return EXIT_OK


def _parse_devices(text: Optional[str]) -> Optional[List[int]]:
    if text is None:
        return None
    try:
        devices = [int(d) for d in text.split(",") if d.strip()]
    except ValueError:
        raise UsageError(f"--devices takes comma-separated device ids, not {text!r}") from None
    if not devices:
        raise UsageError("--devices names no device")
    return devices


def cmd_put(args, out: _Out) -> int:
    import distarray

    try:
        arr = np.load(args.file, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {args.file}: {e}") from None
    if not isinstance(arr, np.ndarray):
        raise UsageError(f"{args.file} holds no single array (an .npz archive?)")
    with _connect(args) as client:
        devices = _parse_devices(args.devices)
        if devices is None:
            devices = [d.id for d in client.server_info().devices]
        if args.split is not None:
            if arr.ndim == 0:
                raise UsageError("--split needs an array of at least one axis")
            if not -arr.ndim <= args.split < arr.ndim:
                raise UsageError(f"--split {args.split} is out of range for shape {arr.shape}")
            index_map = distarray.split_index_map(arr.shape, args.split, devices)
        else:
            index_map = distarray.replicated_index_map(arr.ndim, devices)
        a = client.from_numpy(arr, index_map, name=args.name, progress=None if not args.quiet else False)
        a.release()
    if out.as_json:
        out.json(_array_dict(a))
    else:
        label = a.name or a.handle
        out.console.print(
            f"{label}: {args.file} -> shape {a.shape}, {a.dtype} on devices {list(a.devices)}"
            + ("" if a.name else f" (unnamed; delete with `distarray rm {a.handle}`)")
        )
    return EXIT_OK


def cmd_get(args, out: _Out) -> int:
    with _connect(args) as client:
        a = client.attach(args.array)
        values = a.to_numpy(progress=None if not args.quiet else False)
    try:
        with open(args.file, "wb") as f:
            np.save(f, values, allow_pickle=False)
    except OSError as e:
        raise UsageError(f"cannot write {args.file}: {e}") from None
    if out.as_json:
        out.json({"array": args.array, "file": args.file, "shape": list(values.shape),
                  "dtype": str(values.dtype)})
    else:
        out.console.print(f"{args.array} -> {args.file}: shape {values.shape}, {values.dtype}")
    return EXIT_OK


def _health_address(args) -> str:
    """--health-address, else the health port the daemon reports (GetServerInfo.health_port) at
    the host of --address."""
    if args.health_address:
        return args.health_address
    with _connect(args) as client:
        info = client.server_info()
    if info.health_port <= 0:
        import grpc

        import distarray

        raise distarray.FailedPreconditionError(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"the daemon at {args.address} reports no health port (distarrayd --health_listen is "
            "empty, or the daemon predates GetServerInfo.health_port): pass --health-address",
        )
    host = args.address.rsplit(":", 1)[0] if ":" in args.address else args.address
    return f"{host}:{info.health_port}"


def cmd_health(args, out: _Out) -> int:
    import grpc

    from distarray import _health
    from distarray._channel import wait_for_channel
    from distarray._errors import UnavailableError, from_rpc_error

    address = _health_address(args)
    # The health port is plaintext whatever the API port uses (docs/operations.md, "Health"):
    # --tls and its files are for the API call that finds it.
    with grpc.insecure_channel(address) as channel:
        try:
            wait_for_channel(channel, address, args.timeout)
        except UnavailableError as e:
            raise ConnectError(f"UNAVAILABLE: health port: {e.message}") from None
        try:
            serving = _health.check(channel, args.service, args.timeout)
        except grpc.RpcError as e:
            error = from_rpc_error(e)
            if error.code == grpc.StatusCode.UNIMPLEMENTED:
                error.message = (
                    f"{address} serves no grpc.health.v1 (the API port?); distarrayd serves health "
                    "on its --health_listen address: leave out --health-address to ask the daemon "
                    "for it"
                )
            raise error from None
    status = _health.STATUS_NAMES.get(serving, str(serving))
    if out.as_json:
        out.json({"address": address, "service": args.service, "status": status})
    else:
        out.console.print(f"{address} service {args.service or '(overall)'}: {status}")
    return EXIT_OK if serving == _health.SERVING else EXIT_ERROR


def _common_options(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """The global options, accepted before or after the subcommand."""

    def default(value):
        return argparse.SUPPRESS if suppress else value

    g = parser.add_argument_group("connection and output")
    g.add_argument("--address", default=default(os.environ.get("DISTARRAY_ADDRESS", "127.0.0.1:50051")),
                   help="distarrayd's API address host:port (env DISTARRAY_ADDRESS; "
                        "default 127.0.0.1:50051)")
    g.add_argument("--token", default=default(os.environ.get("DISTARRAY_TOKEN") or None),
                   help="bearer token sent as `authorization` metadata (env DISTARRAY_TOKEN)")
    g.add_argument("--tls", action="store_true", default=default(False),
                   help="connect with TLS (system roots unless --tls-ca)")
    g.add_argument("--tls-ca", default=default(None), metavar="PEM",
                   help="CA certificate file to verify the daemon (implies --tls)")
    g.add_argument("--tls-cert", default=default(None), metavar="PEM",
                   help="client certificate file (mutual TLS; with --tls-key)")
    g.add_argument("--tls-key", default=default(None), metavar="PEM", help="client key file")
    g.add_argument("--timeout", type=float, default=default(10.0),
                   help="seconds to wait for the daemon to answer (default 10)")
    g.add_argument("--json", action="store_true", default=default(False),
                   help="print JSON for scripts instead of tables")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="distarray",
        description="Inspect and move the arrays of a distarrayd.",
        epilog="exit codes: 0 ok; 1 an error answered by the daemon (status code on stderr) or "
               "health not SERVING; 2 usage error or unreadable/unwritable file; "
               "3 cannot connect",
    )
    _common_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        _common_options(p, suppress=True)
        return p

    add("info", "the daemon: version, backend, devices and their memory")
    add("ls", "every array: handle, name, shape, dtype, mode, devices")
    p = add("describe", "one array: its layout chunk by chunk and its memory per device")
    p.add_argument("array", metavar="NAME|HANDLE")
    p = add("rm", "delete arrays")
    p.add_argument("arrays", metavar="NAME|HANDLE", nargs="+")
    p = add("put", "upload a .npy file as a new array (replicated on --devices unless --split)")
    p.add_argument("file", metavar="FILE.npy")
    p.add_argument("--split", type=int, metavar="AXIS",
                   help="split this axis into near-equal blocks, one per device")
    p.add_argument("--devices", metavar="0,1,...", help="device ids (default: every device)")
    p.add_argument("--name", help="a persistent name for the array")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p = add("get", "download an array into a .npy file")
    p.add_argument("array", metavar="NAME|HANDLE")
    p.add_argument("file", metavar="FILE.npy")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p = add("health", "ask the daemon's grpc.health.v1 service (on its health port)")
    p.add_argument("--health-address", metavar="HOST:PORT",
                   help="the health port (distarrayd --health_listen); default: the port the "
                        "daemon at --address reports, at the host of --address")
    p.add_argument("--service", default="", help="'' (overall, default), liveness or readiness")
    return parser


COMMANDS = {
    "info": cmd_info, "ls": cmd_ls, "describe": cmd_describe, "rm": cmd_rm, "put": cmd_put,
    "get": cmd_get, "health": cmd_health,
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns (and as a console script exits with) its exit code."""
    import distarray

    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on a usage error
    if args.tls_ca or args.tls_cert:
        args.tls = True
    out = _Out(args.json)
    try:
        return COMMANDS[args.command](args, out)
    except UsageError as e:
        print(f"distarray: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ConnectError as e:
        print(f"distarray: {e}", file=sys.stderr)
        return EXIT_CONNECT
    except distarray.DistarrayError as e:
        print(f"distarray: {e.code.name}: {e.message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
