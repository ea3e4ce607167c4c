// Planning a distributed 2-D matmul. The operands' chunk boundaries cut rows, the shared axis
// and columns into a grid; each grid product (rows i, shared k, columns j) runs on a device that
// holds both its blocks if one does (the least loaded such device), else on the holder of the
// larger block, the smaller moving to it (cupyx raises where blocks share no device). Products
// along k on one device merge into one GEMM. Pure.
#ifndef DISTARRAY_SERVER_ENGINE_MATMUL_PLANNER_H_
#define DISTARRAY_SERVER_ENGINE_MATMUL_PLANNER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/chunk_index.h"
#include "server/engine/operand.h"

namespace distarray {

// The most GEMMs one matmul may plan (grid cells of the operands' chunk boundaries).
inline constexpr int64_t kMaxMatmulProducts = 65536;

struct MatmulPlan {
  DType dtype = DType::kFloat32;
  Shape result_shape;
  Mode result_mode = Mode::kReplica;  // SUM where the shared axis is split
  // Operands that must first become REPLICA with unit-step chunks (op modes, strided chunks):
  // Relayout to an even row split before planning the grid, in which case the plan was made
  // against that layout.
  bool prepare_a = false, prepare_b = false;
  IndexMap a_layout, b_layout;  // the layouts the grid was planned on
  // Per product: its blocks of a and b (device, global box) and its result chunk.
  IndexMap a_blocks, b_blocks, result_map;
  struct Dims {
    int64_t m, n, k;
  };
  std::vector<Dims> dims;
};

absl::StatusOr<MatmulPlan> PlanMatmul(const ArrayMeta& a, const ArrayMeta& b,
                                      const StopCheck& stop = {});

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_MATMUL_PLANNER_H_
