#include "server/ops/matmul_planner.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/checked.h"
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

// Axis 0 split evenly over the devices the array uses (REPLICA, unit steps, no gaps).
IndexMap SplitFirstAxis(const ArrayMeta& array) {
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
    ChunkSpec chunk{devices[p], {Range{begin, 1, end - begin}}};
    for (size_t d = 1; d < array.shape.size(); ++d) {
      chunk.box.push_back(Range{0, 1, array.shape[d]});
    }
    map.push_back(std::move(chunk));
  }
  return map;
}

// Sorted cut points of one axis: its ends and every chunk's bounds along it.
std::set<int64_t> Cuts(int64_t length, const IndexMap& map, int axis) {
  std::set<int64_t> cuts = {0, length};
  for (const ChunkSpec& c : map) {
    cuts.insert(c.box[axis].start);
    cuts.insert(c.box[axis].start + c.box[axis].count);
  }
  return cuts;
}

// Devices holding the whole of `box` (unit steps).
std::vector<int> Holders(const IndexMap& map, const std::vector<Range>& box) {
  std::vector<int> devices;
  for (const ChunkSpec& c : map) {
    bool holds = true;
    for (size_t d = 0; d < box.size() && holds; ++d) {
      holds = c.box[d].start <= box[d].start &&
              c.box[d].start + c.box[d].count >= box[d].start + box[d].count;
    }
    if (holds && std::find(devices.begin(), devices.end(), c.device) == devices.end()) {
      devices.push_back(c.device);
    }
  }
  return devices;
}

// How one operand meets the result's batch axes: for each, its own axis (-1 where it has none)
// and whether it broadcasts there (extent 1 against a longer result axis, or no axis).
struct BatchView {
  std::vector<int> axis;
  std::vector<bool> broadcast;
  // Broadcast along some result axis longer than 1 and not along another: its batch entries are
  // then not one stride apart in a box spanning both.
  bool mixed = false;

  // The operand's block for result batch box `batch` (broadcast axes: index 0), then `rows` and
  // `cols` for its last two axes.
  std::vector<Range> Box(const std::vector<Range>& batch, Range rows, Range cols) const {
    std::vector<Range> box;
    for (size_t t = 0; t < batch.size(); ++t) {
      if (axis[t] < 0) continue;
      box.push_back(broadcast[t] ? Range{0, 1, 1} : batch[t]);
    }
    box.push_back(rows);
    box.push_back(cols);
    return box;
  }
  // Whether the block's batch entries advance with the result's over `batch` (else one matrix
  // serves them all).
  bool Advances(const std::vector<Range>& batch) const {
    for (size_t t = 0; t < batch.size(); ++t) {
      if (batch[t].count > 1 && !broadcast[t]) return true;
    }
    return false;
  }
};

BatchView ViewBatch(const Shape& shape, const Shape& batch) {
  BatchView view;
  const int own = static_cast<int>(shape.size()) - 2;
  const int offset = static_cast<int>(batch.size()) - own;
  bool full_long = false, broadcast_long = false;
  for (int t = 0; t < static_cast<int>(batch.size()); ++t) {
    const int axis = t - offset;
    view.axis.push_back(axis);
    const bool broadcast = axis < 0 || shape[axis] != batch[t];
    view.broadcast.push_back(broadcast);
    if (batch[t] > 1) (broadcast ? broadcast_long : full_long) = true;
  }
  view.mixed = full_long && broadcast_long;
  return view;
}

// The plan of matrices (and stacks), on operands of 2 or more axes.
absl::StatusOr<MatmulPlan> PlanMatrices(const ArrayMeta& a, const ArrayMeta& b,
                                        const StopCheck& stop);

}  // namespace

ArrayMeta WithUnitAxis(const ArrayMeta& array, int axis) {
  ArrayMeta out = array;
  out.shape.insert(out.shape.begin() + axis, 1);
  for (ChunkSpec& chunk : out.map) chunk.box.insert(chunk.box.begin() + axis, Range{0, 1, 1});
  return out;
}

absl::StatusOr<MatmulPlan> PlanMatmul(const ArrayMeta& a, const ArrayMeta& b,
                                      const StopCheck& stop) {
  for (const auto& [field, array] : {std::pair{"spec.a", &a}, std::pair{"spec.b", &b}}) {
    if (array->shape.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": matmul takes arrays of 1 or more axes, got a 0-d array"));
    }
  }
  const bool a_vector = a.shape.size() == 1, b_vector = b.shape.size() == 1;
  const int64_t k_a = a.shape.back();
  const int64_t k_b = b_vector ? b.shape[0] : b.shape[b.shape.size() - 2];
  if (k_a != k_b && a.dtype == b.dtype) {
    // Named by the shapes as given, before a vector becomes a matrix.
    return absl::InvalidArgumentError(
        absl::StrCat("spec.b: shapes ", ShapeString(a.shape), " and ", ShapeString(b.shape),
                     " are not aligned: ", k_a, " (last axis of a) != ", k_b,
                     b_vector ? " (the only axis of b)" : " (second-to-last axis of b)"));
  }
  ASSIGN_OR_RETURN(MatmulPlan plan, PlanMatrices(a_vector ? WithUnitAxis(a, 0) : a,
                                                 b_vector ? WithUnitAxis(b, 1) : b, stop));
  plan.a_vector = a_vector;
  plan.b_vector = b_vector;
  // Drop the added axes: rows (second-to-last) for a vector a, columns (last) for a vector b.
  const size_t rank = plan.result_shape.size();
  std::vector<size_t> dropped;
  if (b_vector) dropped.push_back(rank - 1);
  if (a_vector) dropped.push_back(rank - 2);
  for (size_t axis : dropped) {
    plan.result_shape.erase(plan.result_shape.begin() + axis);
    for (ChunkSpec& chunk : plan.result_map) chunk.box.erase(chunk.box.begin() + axis);
  }
  return plan;
}

namespace {

absl::StatusOr<MatmulPlan> PlanMatrices(const ArrayMeta& a, const ArrayMeta& b,
                                        const StopCheck& stop) {
  if (a.dtype != b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("spec.b: dtype ", DTypeName(b.dtype),
                                                   " differs from spec.a's ", DTypeName(a.dtype),
                                                   " (cast one with astype)"));
  }
  const size_t rank_a = a.shape.size(), rank_b = b.shape.size();
  const int64_t m = a.shape[rank_a - 2], k = a.shape[rank_a - 1];
  const int64_t n = b.shape[rank_b - 1];
  if (k != b.shape[rank_b - 2]) {
    return absl::InvalidArgumentError(absl::StrCat("spec.b: shapes ", ShapeString(a.shape), " and ",
                                                   ShapeString(b.shape), " are not aligned: ", k,
                                                   " (last axis of a) != ", b.shape[rank_b - 2],
                                                   " (second-to-last axis of b)"));
  }
  // The batch axes broadcast as NumPy's do, aligned from the right.
  const size_t batch_rank = std::max(rank_a, rank_b) - 2;
  Shape batch(batch_rank, 1);
  for (size_t t = 0; t < batch_rank; ++t) {
    const int64_t from_a = t + rank_a >= batch_rank + 2 ? a.shape[t + rank_a - 2 - batch_rank] : 1;
    const int64_t from_b = t + rank_b >= batch_rank + 2 ? b.shape[t + rank_b - 2 - batch_rank] : 1;
    if (from_a != from_b && from_a != 1 && from_b != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.b: shapes ", ShapeString(a.shape), " and ", ShapeString(b.shape),
                       " do not broadcast: batch axis ", t, " has ", from_a, " against ", from_b));
    }
    batch[t] = from_a == 1 ? from_b : from_a;  // 0 against 1 is 0, as NumPy broadcasts
  }

  MatmulPlan plan;
  plan.dtype = a.dtype;
  plan.result_shape = batch;
  plan.result_shape.push_back(m);
  plan.result_shape.push_back(n);
  if (k == 0 || NumElements(plan.result_shape) == 0) {
    // Zero-size operands have no chunks to cut a grid from (docs/design.md).
    plan.a_layout = a.map;
    plan.b_layout = b.map;
    if (NumElements(plan.result_shape) > 0) {
      plan.fill_zeros = true;
      plan.result_map = {ChunkSpec{0, FullBox(plan.result_shape)}};
    }
    return plan;
  }
  plan.prepare_a = a.mode != Mode::kReplica || !UnitSteps(a.map);
  plan.prepare_b = b.mode != Mode::kReplica || !UnitSteps(b.map);
  plan.a_layout = plan.prepare_a ? SplitFirstAxis(a) : a.map;
  plan.b_layout = plan.prepare_b ? SplitFirstAxis(b) : b.map;
  const BatchView a_view = ViewBatch(a.shape, batch);
  const BatchView b_view = ViewBatch(b.shape, batch);

  // Cut points per batch axis: the chunk bounds of each operand that does not broadcast there.
  // Where an operand is broadcast along some long axes and not others, every axis but the last
  // is cut at every index, so each box advances both operands by one stride (or not at all).
  const bool every_index = a_view.mixed || b_view.mixed;
  int64_t cells = 1;
  std::vector<std::vector<int64_t>> batch_cuts(batch_rank);
  for (size_t t = 0; t < batch_rank; ++t) {
    std::set<int64_t> cuts = {0, batch[t]};
    if (every_index && t + 1 < batch_rank && batch[t] > 1) {
      ASSIGN_OR_RETURN(cells, CheckedMul(cells, batch[t], "spec"));
      if (cells > kMaxMatmulProducts) break;
      for (int64_t i = 1; i < batch[t]; ++i) cuts.insert(i);
    } else {
      for (const auto& [view, layout] :
           {std::pair{&a_view, &plan.a_layout}, std::pair{&b_view, &plan.b_layout}}) {
        if (!view->broadcast[t]) cuts.merge(Cuts(batch[t], *layout, view->axis[t]));
      }
      ASSIGN_OR_RETURN(cells, CheckedMul(cells, static_cast<int64_t>(cuts.size()) - 1, "spec"));
    }
    batch_cuts[t].assign(cuts.begin(), cuts.end());
  }
  const std::set<int64_t> row_set = Cuts(m, plan.a_layout, static_cast<int>(rank_a) - 2);
  std::set<int64_t> shared_set = Cuts(k, plan.a_layout, static_cast<int>(rank_a) - 1);
  shared_set.merge(Cuts(k, plan.b_layout, static_cast<int>(rank_b) - 2));
  const std::set<int64_t> col_set = Cuts(n, plan.b_layout, static_cast<int>(rank_b) - 1);
  for (const size_t cuts : {row_set.size(), shared_set.size(), col_set.size()}) {
    if (cells > kMaxMatmulProducts) break;
    ASSIGN_OR_RETURN(cells, CheckedMul(cells, static_cast<int64_t>(cuts) - 1, "spec"));
  }
  if (cells > kMaxMatmulProducts) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spec: the operands' chunk boundaries cut the product into more than ",
                     kMaxMatmulProducts, " blocks (use coarser layouts)"));
  }
  const std::vector<int64_t> rows(row_set.begin(), row_set.end());
  const std::vector<int64_t> shared(shared_set.begin(), shared_set.end());
  const std::vector<int64_t> cols(col_set.begin(), col_set.end());
  PlanBudget budget(kDefaultPlanWorkLimit, stop);

  std::map<int, int64_t> load;  // multiply-adds assigned per device
  bool split_shared = false;
  // Visit every batch box: an odometer over the batch axes' cut intervals.
  std::vector<size_t> cell(batch_rank, 0);
  std::vector<Range> batch_box(batch_rank);
  for (bool more = true; more;) {
    int64_t entries = 1;
    for (size_t t = 0; t < batch_rank; ++t) {
      batch_box[t] =
          Range{batch_cuts[t][cell[t]], 1, batch_cuts[t][cell[t] + 1] - batch_cuts[t][cell[t]]};
      entries *= batch_box[t].count;  // within the result's element count: no overflow
    }
    const bool a_advances = a_view.Advances(batch_box);
    const bool b_advances = b_view.Advances(batch_box);
    for (size_t i = 0; i + 1 < rows.size(); ++i) {
      const Range r{rows[i], 1, rows[i + 1] - rows[i]};
      for (size_t j = 0; j + 1 < cols.size(); ++j) {
        const Range q{cols[j], 1, cols[j + 1] - cols[j]};
        // Walk the shared axis, merging consecutive k cells placed on the same device.
        struct Run {
          int device;
          int64_t k0, k1;
        };
        std::vector<Run> runs;
        for (size_t s = 0; s + 1 < shared.size(); ++s) {
          if (!budget.Spend(static_cast<int64_t>(plan.a_layout.size() + plan.b_layout.size()))) {
            return budget.ExhaustedError("matmul");
          }
          const Range p{shared[s], 1, shared[s + 1] - shared[s]};
          const std::vector<int> a_holders = Holders(plan.a_layout, a_view.Box(batch_box, r, p));
          const std::vector<int> b_holders = Holders(plan.b_layout, b_view.Box(batch_box, p, q));
          if (a_holders.empty() || b_holders.empty()) continue;  // uncovered blocks are zeros
          std::vector<int> both;
          for (int d : a_holders) {
            if (std::find(b_holders.begin(), b_holders.end(), d) != b_holders.end()) {
              both.push_back(d);
            }
          }
          const int64_t a_size = (a_advances ? entries : 1) * r.count * p.count;
          const int64_t b_size = (b_advances ? entries : 1) * p.count * q.count;
          const std::vector<int>& candidates =
              !both.empty() ? both : (a_size >= b_size ? a_holders : b_holders);
          int device = candidates[0];
          // Continue the previous run's device where it can; otherwise the least loaded.
          if (!runs.empty() && std::find(candidates.begin(), candidates.end(),
                                         runs.back().device) != candidates.end()) {
            device = runs.back().device;
          } else {
            for (int d : candidates) {
              if (load[d] < load[device]) device = d;
            }
          }
          load[device] += entries * r.count * p.count * q.count;
          if (!runs.empty() && runs.back().device == device && runs.back().k1 == shared[s]) {
            runs.back().k1 = shared[s + 1];
          } else {
            runs.push_back({device, shared[s], shared[s + 1]});
          }
        }
        split_shared = split_shared || runs.size() > 1;
        for (const Run& run : runs) {
          const Range p{run.k0, 1, run.k1 - run.k0};
          plan.a_blocks.push_back(ChunkSpec{run.device, a_view.Box(batch_box, r, p)});
          plan.b_blocks.push_back(ChunkSpec{run.device, b_view.Box(batch_box, p, q)});
          std::vector<Range> result_box = batch_box;
          result_box.push_back(r);
          result_box.push_back(q);
          plan.result_map.push_back(ChunkSpec{run.device, std::move(result_box)});
          plan.gemms.push_back(GemmShape{.m = r.count,
                                         .n = q.count,
                                         .k = p.count,
                                         .batch = entries,
                                         .stride_a = a_advances ? r.count * p.count : 0,
                                         .stride_b = b_advances ? p.count * q.count : 0,
                                         .stride_c = r.count * q.count});
        }
      }
    }
    // Next batch box.
    more = false;
    for (size_t t = batch_rank; t-- > 0;) {
      if (++cell[t] + 1 < batch_cuts[t].size()) {
        more = true;
        break;
      }
      cell[t] = 0;
    }
  }
  plan.result_mode = split_shared ? Mode::kSum : Mode::kReplica;
  return plan;
}

}  // namespace
}  // namespace distarray
