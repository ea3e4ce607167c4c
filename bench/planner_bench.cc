// Times the layout planners on large index maps (no devices: planning is pure CPU work).
//
//   planner_bench [--chunks=100000,1000000]
//
// For each chunk count N it plans: a 1-D array of N tiles resharded to 2 tiles and back; a 2-D
// grid of about N square tiles resharded to a misaligned grid of about N oblong tiles; and, on
// a 1-D map of N tiles that each overlap their neighbours, the ownership mask and the gather to
// REPLICA. The 10^5 cases run under the default work limit, as the daemon plans them.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "server/ops/reshard_planner.h"

ABSL_FLAG(std::string, chunks, "100000,1000000", "comma-separated chunk counts to plan");

namespace distarray {
namespace {

IndexMap Tiles1D(int64_t tiles, int64_t length, int64_t halo) {
  IndexMap map;
  map.reserve(tiles);
  const int64_t total = tiles * length;
  for (int64_t i = 0; i < tiles; ++i) {
    const int64_t start = std::max<int64_t>(0, i * length - halo);
    const int64_t stop = std::min(total, (i + 1) * length + halo);
    map.push_back(ChunkSpec{static_cast<int>(i % 8), {Range{start, 1, stop - start}}});
  }
  return map;
}

IndexMap Grid2D(int64_t rows, int64_t cols, int64_t tile_rows, int64_t tile_cols) {
  IndexMap map;
  map.reserve(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      map.push_back(
          ChunkSpec{static_cast<int>((r * cols + c) % 8),
                    {Range{r * tile_rows, 1, tile_rows}, Range{c * tile_cols, 1, tile_cols}}});
    }
  }
  return map;
}

template <typename F>
void Time(const std::string& label, F&& plan) {
  const auto start = std::chrono::steady_clock::now();
  const std::string result = plan();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-58s %9.3f s  %s\n", label.c_str(), seconds, result.c_str());
  std::fflush(stdout);
}

template <typename T>
std::string Describe(const absl::StatusOr<T>& plan, size_t (*count)(const T&)) {
  if (!plan.ok()) return std::string(plan.status().ToString());
  return std::to_string(count(*plan)) + " copies/fills";
}

size_t ReshardCopies(const ReplicaReshardPlan& p) { return p.copies.size(); }
size_t CopyCount(const std::vector<PlannedCopy>& p) { return p.size(); }
size_t FillCount(const std::vector<PlannedFill>& p) { return p.size(); }

void Run(int64_t n) {
  // The daemon's limit for maps of up to 10^5 chunks; larger maps are only for the measurement.
  const int64_t limit = n <= 100000 ? kDefaultPlanWorkLimit : std::numeric_limits<int64_t>::max();
  const std::string tag = " (" + std::to_string(n) + " chunks)";

  const IndexMap tiles = Tiles1D(n, 10, 0);
  const IndexMap halves = {ChunkSpec{0, {Range{0, 1, n * 5}}},
                           ChunkSpec{1, {Range{n * 5, 1, n * 5}}}};
  Time("1-D: N tiles -> 2 tiles" + tag,
       [&] { return Describe(PlanReplicaReshard(tiles, halves, limit), ReshardCopies); });
  Time("1-D: 2 tiles -> N tiles" + tag,
       [&] { return Describe(PlanReplicaReshard(halves, tiles, limit), ReshardCopies); });

  // sqrt(N) x sqrt(N) tiles of 30 x 30 to tiles of 40 x 24 over the same array.
  const int64_t side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  const IndexMap square = Grid2D(side, side, 30, 30);
  const IndexMap oblong = Grid2D(side * 30 / 40, side * 30 / 24, 40, 24);
  Time("2-D: " + std::to_string(side) + "x" + std::to_string(side) + " grid -> " +
           std::to_string(side * 30 / 40) + "x" + std::to_string(side * 30 / 24) + " grid" + tag,
       [&] { return Describe(PlanReplicaReshard(square, oblong, limit), ReshardCopies); });

  const IndexMap halo = Tiles1D(n, 10, 2);
  Time("1-D, neighbours overlap: ownership mask" + tag,
       [&] { return Describe(PlanOwnershipMask(halo, limit), FillCount); });
  Time("1-D, neighbours overlap: gather to REPLICA" + tag,
       [&] { return Describe(PlanGatherToReplica(halo, Mode::kSum, limit), CopyCount); });
}

}  // namespace
}  // namespace distarray

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_chunks), ',')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(item, &n) || n < 4) {
      std::fprintf(stderr, "--chunks: %s is not a chunk count of at least 4\n",
                   std::string(item).c_str());
      return 2;
    }
    distarray::Run(n);
  }
  return 0;
}
