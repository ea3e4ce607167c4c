#include "server/engine/matmul_planner.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

bool UnitSteps(const IndexMap& map) {
  for (const ChunkSpec& c : map) {
    for (const Range& r : c.box) {
      if (r.step != 1 && r.count > 1) return false;
    }
  }
  return true;
}

// Rows split evenly over the devices the array uses (REPLICA, unit steps, no gaps).
IndexMap RowSplit(const ArrayMeta& array) {
  std::vector<int> devices;
  for (const ChunkSpec& c : array.map) {
    if (std::find(devices.begin(), devices.end(), c.device) == devices.end()) {
      devices.push_back(c.device);
    }
  }
  if (devices.empty()) devices.push_back(0);
  const int64_t rows = array.shape[0];
  const int64_t parts = std::min<int64_t>(static_cast<int64_t>(devices.size()), rows);
  IndexMap map;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t begin = rows * p / parts, end = rows * (p + 1) / parts;
    if (begin == end) continue;
    map.push_back(
        ChunkSpec{devices[p], {Range{begin, 1, end - begin}, Range{0, 1, array.shape[1]}}});
  }
  return map;
}

// Sorted cut points of one axis: its ends and every chunk's bounds along it.
std::vector<int64_t> Cuts(int64_t length, const IndexMap& map, int axis) {
  std::set<int64_t> cuts = {0, length};
  for (const ChunkSpec& c : map) {
    cuts.insert(c.box[axis].start);
    cuts.insert(c.box[axis].start + c.box[axis].count);
  }
  return {cuts.begin(), cuts.end()};
}

// Devices holding the whole of box [r0, r1) x [c0, c1).
std::vector<int> Holders(const IndexMap& map, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  std::vector<int> devices;
  for (const ChunkSpec& c : map) {
    const Range& r = c.box[0];
    const Range& q = c.box[1];
    if (r.start <= r0 && r.start + r.count >= r1 && q.start <= c0 && q.start + q.count >= c1 &&
        std::find(devices.begin(), devices.end(), c.device) == devices.end()) {
      devices.push_back(c.device);
    }
  }
  return devices;
}

}  // namespace

absl::StatusOr<MatmulPlan> PlanMatmul(const ArrayMeta& a, const ArrayMeta& b,
                                      const StopCheck& stop) {
  for (const auto& [field, array] : {std::pair{"spec.a", &a}, std::pair{"spec.b", &b}}) {
    if (array->shape.size() > 2) {
      return absl::UnimplementedError(absl::StrCat(field, ": shape ", ShapeString(array->shape),
                                                   ": batched matmul (more than 2 axes) is not "
                                                   "implemented yet"));
    }
    if (array->shape.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": matmul takes 2-D arrays, got shape ", ShapeString(array->shape)));
    }
    if (!IsFloating(array->dtype)) {
      return absl::UnimplementedError(
          absl::StrCat(field, ": matmul on ", DTypeName(array->dtype),
                       " is not implemented yet (float16, bfloat16, float32, float64)"));
    }
  }
  if (a.dtype != b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("spec.b: dtype ", DTypeName(b.dtype),
                                                   " differs from spec.a's ", DTypeName(a.dtype),
                                                   " (cast one with astype)"));
  }
  if (a.shape[1] != b.shape[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.b: shapes ", ShapeString(a.shape), " and ", ShapeString(b.shape),
        " are not aligned: ", a.shape[1], " (axis 1 of a) != ", b.shape[0], " (axis 0 of b)"));
  }
  MatmulPlan plan;
  plan.dtype = a.dtype;
  plan.result_shape = {a.shape[0], b.shape[1]};
  plan.prepare_a = a.mode != Mode::kReplica || !UnitSteps(a.map);
  plan.prepare_b = b.mode != Mode::kReplica || !UnitSteps(b.map);
  plan.a_layout = plan.prepare_a ? RowSplit(a) : a.map;
  plan.b_layout = plan.prepare_b ? RowSplit(b) : b.map;

  const std::vector<int64_t> rows = Cuts(a.shape[0], plan.a_layout, 0);
  std::vector<int64_t> shared = Cuts(a.shape[1], plan.a_layout, 1);
  for (int64_t c : Cuts(b.shape[0], plan.b_layout, 0)) shared.push_back(c);
  std::sort(shared.begin(), shared.end());
  shared.erase(std::unique(shared.begin(), shared.end()), shared.end());
  const std::vector<int64_t> cols = Cuts(b.shape[1], plan.b_layout, 1);
  const int64_t cells = static_cast<int64_t>(rows.size() - 1) * (shared.size() - 1) *
                        static_cast<int64_t>(cols.size() - 1);
  if (cells > kMaxMatmulProducts) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "spec: the operands' chunk boundaries cut the product into ", cells, " blocks; at most ",
        kMaxMatmulProducts, " are planned (use coarser layouts)"));
  }
  PlanBudget budget(kDefaultPlanWorkLimit, stop);

  std::map<int, int64_t> load;  // multiply-adds assigned per device
  std::map<std::pair<size_t, size_t>, int> products_per_cell;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    for (size_t j = 0; j + 1 < cols.size(); ++j) {
      // Walk the shared axis, merging consecutive k cells placed on the same device.
      struct Run {
        int device;
        int64_t k0, k1;
      };
      std::vector<Run> runs;
      for (size_t k = 0; k + 1 < shared.size(); ++k) {
        if (!budget.Spend(static_cast<int64_t>(plan.a_layout.size() + plan.b_layout.size()))) {
          return budget.ExhaustedError("matmul");
        }
        const std::vector<int> a_holders =
            Holders(plan.a_layout, rows[i], rows[i + 1], shared[k], shared[k + 1]);
        const std::vector<int> b_holders =
            Holders(plan.b_layout, shared[k], shared[k + 1], cols[j], cols[j + 1]);
        if (a_holders.empty() || b_holders.empty()) continue;  // uncovered blocks are zeros
        std::vector<int> both;
        for (int d : a_holders) {
          if (std::find(b_holders.begin(), b_holders.end(), d) != b_holders.end())
            both.push_back(d);
        }
        const int64_t a_size = (rows[i + 1] - rows[i]) * (shared[k + 1] - shared[k]);
        const int64_t b_size = (shared[k + 1] - shared[k]) * (cols[j + 1] - cols[j]);
        const std::vector<int>& candidates =
            !both.empty() ? both : (a_size >= b_size ? a_holders : b_holders);
        int device = candidates[0];
        // Continue the previous run's device where it can; otherwise the least loaded.
        if (!runs.empty() && std::find(candidates.begin(), candidates.end(), runs.back().device) !=
                                 candidates.end()) {
          device = runs.back().device;
        } else {
          for (int d : candidates) {
            if (load[d] < load[device]) device = d;
          }
        }
        load[device] += a_size * (cols[j + 1] - cols[j]);
        if (!runs.empty() && runs.back().device == device && runs.back().k1 == shared[k]) {
          runs.back().k1 = shared[k + 1];
        } else {
          runs.push_back({device, shared[k], shared[k + 1]});
        }
      }
      for (const Run& run : runs) {
        const Range r{rows[i], 1, rows[i + 1] - rows[i]};
        const Range q{cols[j], 1, cols[j + 1] - cols[j]};
        const Range s{run.k0, 1, run.k1 - run.k0};
        plan.a_blocks.push_back(ChunkSpec{run.device, {r, s}});
        plan.b_blocks.push_back(ChunkSpec{run.device, {s, q}});
        plan.result_map.push_back(ChunkSpec{run.device, {r, q}});
        plan.dims.push_back({r.count, q.count, s.count});
        ++products_per_cell[{i, j}];
      }
    }
  }
  plan.result_mode = Mode::kReplica;
  for (const auto& [cell, count] : products_per_cell) {
    if (count > 1) plan.result_mode = Mode::kSum;
  }
  return plan;
}

}  // namespace distarray
