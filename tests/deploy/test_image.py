"""The image's runtime stage carries what the daemon loads: runtime-packages.txt against
`ldd distarrayd` (through derive-runtime-packages.sh), NCCL pinned to the CUDA toolkit the
daemon was built with, and the Dockerfile's user, health check and ports."""

import os
import pathlib
import re
import subprocess

import pytest

import render

REPO = render.REPO
CONTAINER = REPO / "deploy" / "container"
BUILD = pathlib.Path(os.environ.get("BUILD_DIR", REPO / "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
BINARIES = [BUILD / "server" / name for name in ("distarrayd", "distarray_probe")]
CUDA = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))


def package_list():
    lines = [l.strip() for l in (CONTAINER / "runtime-packages.txt").read_text().splitlines()]
    entries = [l for l in lines if l and not l.startswith("#")]
    debian = [e for e in entries if not e.startswith(("nvidia:", "dlopen:"))]
    nvidia = dict(e[len("nvidia:"):].partition("=")[::2] for e in entries if e.startswith("nvidia:"))
    return debian, nvidia


def dlopened_packages():
    """Debian packages the daemon loads with dlopen (ldd cannot see them)."""
    lines = [l.strip() for l in (CONTAINER / "runtime-packages.txt").read_text().splitlines()]
    return [l[len("dlopen:"):] for l in lines if l.startswith("dlopen:")]


def derived():
    built = [str(b) for b in BINARIES if b.exists()]
    if not built:
        pytest.fail(f"no daemon in {BUILD}/server (scripts/build.sh)")
    out = subprocess.run([str(CONTAINER / "derive-runtime-packages.sh"), *built],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    debian = [l for l in out if not l.startswith("#")]
    foreign = [l.split()[2] for l in out if l.startswith("# not-debian ")]
    return debian, foreign


def test_debian_packages_are_what_ldd_needs():
    listed, _ = package_list()
    debian, _ = derived()
    assert sorted(listed) == listed, "keep runtime-packages.txt sorted"
    missing, extra = sorted(set(debian) - set(listed)), sorted(set(listed) - set(debian))
    assert not missing and not extra, (
        f"runtime-packages.txt differs from ldd: add {missing}, drop {extra} "
        "(deploy/container/derive-runtime-packages.sh build/server/distarrayd)")


def _cuda_version():
    header = CUDA / "include" / "cuda_runtime_api.h"
    if not header.exists():
        pytest.skip(f"no CUDA toolkit at {CUDA}: the NVIDIA pins are not checked (host-only build)")
    number = int(re.search(r"#define CUDART_VERSION\s+(\d+)", header.read_text()).group(1))
    return number // 1000, number % 1000 // 10


def test_cuda_packages_match_the_toolkit():
    major, minor = _cuda_version()
    _, nvidia = package_list()
    assert set(nvidia) == {f"cuda-cudart-{major}-{minor}", f"libcublas-{major}-{minor}",
                           f"cuda-nvrtc-{major}-{minor}", "libnccl2"}
    dockerfile = (REPO / "Dockerfile").read_text()
    assert f"ARG CUDA_PKG={major}-{minor}\n" in dockerfile
    assert f"/usr/local/cuda-{major}.{minor}/targets/x86_64-linux/lib" in dockerfile


def test_nccl_is_pinned_to_the_toolkit():
    major, minor = _cuda_version()
    _, nvidia = package_list()
    header = CUDA / "include" / "nccl.h"
    if not header.exists():
        pytest.skip(f"no nccl.h in {CUDA}/include: the NCCL pin is not checked")
    text = header.read_text()
    version = ".".join(re.search(rf"#define NCCL_{part}\s+(\d+)", text).group(1)
                       for part in ("MAJOR", "MINOR", "PATCH"))
    assert re.fullmatch(rf"{re.escape(version)}-\d+\+cuda{major}\.{minor}", nvidia["libnccl2"]), (
        f"libnccl2={nvidia['libnccl2']}, the toolkit has NCCL {version} for CUDA {major}.{minor}")


def test_linked_cuda_libraries_come_from_the_nvidia_packages():
    _, foreign = derived()
    known = {"libcudart.so": "cuda-cudart-", "libnccl.so": "libnccl2", "libcublas.so": "libcublas-"}
    _, nvidia = package_list()
    for soname in foreign:
        prefix = next((p for lib, p in known.items() if soname.startswith(lib)), None)
        assert prefix, f"{soname} comes from no Debian package and no listed NVIDIA one"
        assert any(name.startswith(prefix) for name in nvidia), soname


def _runtime_stage():
    text = (REPO / "Dockerfile").read_text()
    stages = re.split(r"^FROM ", text, flags=re.M)
    assert len(stages) == 3, "a builder and a runtime stage"
    return stages[1], stages[2]


def test_dockerfile_runtime_stage():
    build, runtime = _runtime_stage()
    assert "bash scripts/build.sh" in build, "the builder runs CI's build command"
    assert "runtime-packages.txt" in runtime
    assert re.search(r"^USER 65532:65532$", runtime, re.M), "numeric non-root user"
    assert ('CMD ["/usr/local/bin/distarray_probe", "--address=127.0.0.1:8081", '
            '"--service=readiness"') in runtime
    assert re.search(r"^EXPOSE 50051 8081 9464$", runtime, re.M)
    assert "--from=build /build/server/distarrayd /build/server/distarray_probe" in runtime


def test_dockerignore_keeps_build_output_out():
    lines = (REPO / ".dockerignore").read_text().splitlines()
    for entry in (".git", "build", "build-*"):
        assert entry in lines


# The Dockerfile's own commands that read the package list, run here on the real file.
RUNTIME_INSTALL_LIST = ("grep -v -e '^#' -e '^$' /tmp/runtime-packages.txt"
                        " | sed -e 's/^nvidia://' -e 's/^dlopen://'")
BUILDER_NCCL_VERSION = "sed -n 's/^nvidia:libnccl2=//p' /tmp/runtime-packages.txt"


def _run_on_list(command):
    command = command.replace("/tmp/runtime-packages.txt", str(CONTAINER / "runtime-packages.txt"))
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True,
                          check=True).stdout.split()


def test_dockerfile_reads_the_list_as_intended():
    build, runtime = _runtime_stage()
    assert RUNTIME_INSTALL_LIST in runtime and BUILDER_NCCL_VERSION in build
    debian, nvidia = package_list()
    pinned = [f"{name}={version}" if version else name for name, version in nvidia.items()]
    assert _run_on_list(RUNTIME_INSTALL_LIST) == debian + dlopened_packages() + pinned
    assert _run_on_list(BUILDER_NCCL_VERSION) == [nvidia["libnccl2"]]
