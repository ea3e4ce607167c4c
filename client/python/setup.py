"""Build hooks: generate the gRPC stubs from the repository's proto/ at build time.

The stubs (distarray/v1/distarray_pb2.py, _pb2_grpc.py, .pyi) are never committed. build_py
writes them into the build tree, so every wheel carries them; an sdist carries a copy of proto/
so a wheel can be built from it away from the repository. The run-time lower bounds of grpcio and
protobuf come from the generated code itself, so the stubs always import with what pip installs.
"""

import os
import re
import shutil
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
PROTO_FILE = "distarray/v1/distarray.proto"


def find_proto_root() -> Path:
    """The directory holding distarray/v1/distarray.proto."""
    candidates = []
    if os.environ.get("DISTARRAY_PROTO_DIR"):
        candidates.append(Path(os.environ["DISTARRAY_PROTO_DIR"]))
    candidates += [HERE / "proto", HERE.parent.parent / "proto"]
    for root in candidates:
        if (root / PROTO_FILE).is_file():
            return root
    raise RuntimeError(
        "distarray: cannot find " + PROTO_FILE + " (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); build from a checkout of the repository or set DISTARRAY_PROTO_DIR"
    )


def generate_stubs(out_dir: Path) -> None:
    """Runs protoc (grpcio-tools) for the distarray proto into out_dir/distarray/v1/."""
    from grpc_tools import protoc  # a build requirement (pyproject.toml)
    import grpc_tools

    root = find_proto_root()
    well_known = Path(grpc_tools.__file__).resolve().parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{root}",
        f"-I{well_known}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        str(root / PROTO_FILE),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError("distarray: protoc failed on " + str(root / PROTO_FILE))
    init = out_dir / "distarray" / "v1" / "__init__.py"
    init.write_text('"""Generated gRPC stubs of distarray.v1 (built from proto/, not committed)."""\n')


# protobuf runtimes the generated stubs were tested with go up to, not including, this major
# (client/python/tests/test_packaging.py installs the oldest the stubs accept).
PROTOBUF_TESTED_BELOW_MAJOR = 8


def stub_requirements() -> list:
    """grpcio and protobuf lower bounds read from freshly generated stubs.

    The protobuf floor is the generated code's own version: its runtime check
    (runtime_version.ValidateProtobufRuntimeVersion, in stubs of protobuf 5.27 and later) refuses
    an older runtime and accepts every newer one. Stubs before that carry no check and run on
    their own version and later. pyproject.toml builds with the oldest grpcio-tools each Python
    has wheels for, so the floor stays as low as the stubs allow instead of following the newest
    protobuf (installing into an environment with protobuf 5 must not upgrade it)."""
    with tempfile.TemporaryDirectory() as tmp:
        generate_stubs(Path(tmp))
        v1 = Path(tmp) / "distarray" / "v1"
        pb2 = (v1 / "distarray_pb2.py").read_text()
        grpc_py = (v1 / "distarray_pb2_grpc.py").read_text()
    requirements = []
    m = re.search(
        r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,\s*(\d+),\s*(\d+),"
        r"\s*(\d+),",
        pb2,
    ) or re.search(r"Protobuf Python Version: (\d+)\.(\d+)\.(\d+)", pb2)
    if m:
        requirements.append(
            f"protobuf>={m.group(1)}.{m.group(2)}.{m.group(3)},<{PROTOBUF_TESTED_BELOW_MAJOR}"
        )
    else:
        requirements.append(f"protobuf>=4.21,<{PROTOBUF_TESTED_BELOW_MAJOR}")
    m = re.search(r"GRPC_GENERATED_VERSION = '([0-9.]+)'", grpc_py)
    requirements.append(f"grpcio>={m.group(1) if m else '1.62.0'}")
    return requirements


class BuildPyWithStubs(build_py):
    """build_py that also writes the generated stubs into the build tree (or, for an editable
    install, next to the sources, where .gitignore keeps them out of the repository)."""

    def run(self):
        super().run()
        target = HERE if getattr(self, "editable_mode", False) else Path(self.build_lib)
        generate_stubs(target)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        v1 = Path(self.build_lib) / "distarray" / "v1"
        names = ["__init__.py", "distarray_pb2.py", "distarray_pb2.pyi", "distarray_pb2_grpc.py"]
        return outputs + [str(v1 / n) for n in names]


class SdistWithProto(sdist):
    """An sdist carries proto/ so that a wheel builds from it outside the repository."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        src = find_proto_root() / "distarray"
        dst = Path(base_dir) / "proto" / "distarray"
        if not dst.exists():
            shutil.copytree(src, dst)


setup(
    install_requires=stub_requirements() + ["numpy>=1.22", "tqdm>=4.60", "rich>=12"],
    cmdclass={"build_py": BuildPyWithStubs, "sdist": SdistWithProto},
)
