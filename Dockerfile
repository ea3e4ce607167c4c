# distarrayd image for Kubernetes GPU nodes (NVIDIA device plugin). Build on a machine with a
# Docker engine:  docker build -t distarrayd .
FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates wget sudo \
 && wget -q https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb \
 && dpkg -i cuda-keyring_1.1-1_all.deb && apt-get update \
 && apt-get install -y --no-install-recommends cuda-toolkit-13-0 libnccl-dev libnccl2 \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
RUN BUILD_DIR=/build BUILD_TYPE=Release DISTARRAY_CUDA=ON \
    CMAKE_ARGS="-DDISTARRAY_BUILD_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90" scripts/build.sh

FROM debian:bookworm-slim
COPY --from=build /etc/apt/sources.list.d/ /etc/apt/sources.list.d/
COPY --from=build /usr/share/keyrings/ /usr/share/keyrings/
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
      libgrpc++1.51 libprotobuf32 libabsl20220623 libspdlog1.10 libfmt9 \
      libprometheus-cpp-pull1.0 libprometheus-cpp-core1.0 cuda-cudart-13-0 libnccl2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/server/distarrayd /usr/local/bin/distarrayd
ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64 NCCL_NVLS_ENABLE=0
EXPOSE 50051 9464
USER 65534
ENTRYPOINT ["/usr/local/bin/distarrayd"]
CMD ["--listen=0.0.0.0:50051", "--metrics_listen=0.0.0.0:9464", "--backend=cuda"]
