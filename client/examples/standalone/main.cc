// Uploads a vector split over the daemon's first two devices, doubles it there, and checks the
// result: the smallest program a user of the installed SDK writes. Exits 0 on success.
//   standalone_example ADDRESS
#include <cstdio>
#include <vector>

#include "distarray/client.h"
#include "distarray/index_maps.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
    return 2;
  }
  absl::StatusOr<distarray::Client> client = distarray::Client::Connect(argv[1]);
  if (!client.ok()) {
    std::fprintf(stderr, "connect: %s\n", client.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<distarray::v1::GetServerInfoResponse> info = client->ServerInfo();
  if (!info.ok()) {
    std::fprintf(stderr, "server info: %s\n", info.status().ToString().c_str());
    return 1;
  }
  const std::vector<int> devices =
      info->devices_size() >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0};
  constexpr int64_t kSize = 1000;
  std::vector<float> values(kSize);
  for (int64_t i = 0; i < kSize; ++i) values[i] = static_cast<float>(i);

  absl::StatusOr<distarray::Array> array = client->Upload<float>(
      values, {kSize}, {distarray::Split(/*rank=*/1, /*axis=*/0, kSize, devices)});
  if (!array.ok()) {
    std::fprintf(stderr, "upload: %s\n", array.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<distarray::Array> doubled = *array + *array;
  if (!doubled.ok()) {
    std::fprintf(stderr, "add: %s\n", doubled.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::vector<float>> back = doubled->Download<float>();
  if (!back.ok()) {
    std::fprintf(stderr, "download: %s\n", back.status().ToString().c_str());
    return 1;
  }
  for (int64_t i = 0; i < kSize; ++i) {
    if ((*back)[i] != 2.0f * values[i]) {
      std::fprintf(stderr, "element %lld: got %g, want %g\n", static_cast<long long>(i), (*back)[i],
                   2.0f * values[i]);
      return 1;
    }
  }
  std::printf("ok: %lld elements over %d device(s) of the %s backend, daemon %s\n",
              static_cast<long long>(kSize), static_cast<int>(devices.size()),
              info->backend().c_str(), info->version().c_str());
  return 0;
}
