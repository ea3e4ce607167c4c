# distarrayd for Kubernetes GPU nodes (docs/operations.md, "Container image"). On a machine with
# a Docker engine:   docker build -t distarrayd:0.1.0 .
# CI has no engine: scripts/check-deploy.sh lints this file and runs the runtime stage's
# packages (deploy/container/runtime-packages.txt) as a Debian 12 root filesystem instead.

# --- builder: the same install script and build command as CI, plus NVIDIA's CUDA toolkit ---
FROM debian:bookworm AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG CUDA_PKG=13-0
ARG CUDA_ARCHITECTURES=90
COPY deploy/container/runtime-packages.txt /tmp/runtime-packages.txt
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates wget \
 && wget -q https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb \
 && dpkg -i cuda-keyring_1.1-1_all.deb && rm cuda-keyring_1.1-1_all.deb && apt-get update \
 && nccl="$(sed -n 's/^nvidia:libnccl2=//p' /tmp/runtime-packages.txt)" \
 && apt-get install -y --no-install-recommends "cuda-toolkit-${CUDA_PKG}" \
      "libnccl2=${nccl}" "libnccl-dev=${nccl}" \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
# scripts/build.sh runs scripts/install-deps.sh (the Debian packages), then CMake and Ninja.
RUN BUILD_DIR=/build BUILD_TYPE=Release DISTARRAY_CUDA=ON \
    CMAKE_ARGS="-DDISTARRAY_BUILD_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
    bash scripts/build.sh \
 && rm -rf /var/lib/apt/lists/*

# --- runtime: what `ldd distarrayd` needs, from runtime-packages.txt, and nothing else ---
FROM debian:bookworm-slim AS runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=build /usr/share/keyrings/cuda-archive-keyring.gpg /usr/share/keyrings/
COPY --from=build /etc/apt/sources.list.d/cuda-debian12-x86_64.list /etc/apt/sources.list.d/
COPY deploy/container/runtime-packages.txt /tmp/runtime-packages.txt
# Debian's packages come at the versions of the bookworm suite (stable: security fixes only);
# NVIDIA's carry their CUDA release in the name, and NCCL an explicit version (see the file).
# hadolint ignore=DL3008
RUN apt-get update \
 && grep -v -e '^#' -e '^$' /tmp/runtime-packages.txt | sed -e 's/^nvidia://' -e 's/^dlopen://' \
    | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build /build/server/distarrayd /build/server/distarray_probe /usr/local/bin/
# The NVIDIA container runtime adds the driver (libcuda) and the devices for these settings.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib \
    DISTARRAY_LISTEN=0.0.0.0:50051 \
    DISTARRAY_HEALTH_LISTEN=0.0.0.0:8081 \
    DISTARRAY_METRICS_LISTEN=0.0.0.0:9464
EXPOSE 50051 8081 9464
# Numeric, so that Kubernetes' runAsNonRoot can verify it without a passwd lookup.
USER 65532:65532
HEALTHCHECK --interval=10s --timeout=3s --start-period=120s --retries=3 \
  CMD ["/usr/local/bin/distarray_probe", "--address=127.0.0.1:8081", "--service=readiness", "--timeout_ms=2000"]
ENTRYPOINT ["/usr/local/bin/distarrayd"]
