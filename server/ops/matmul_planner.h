// Planning a distributed matmul, 2-D or batched (NumPy's matmul: the last two axes multiply, the
// axes before them broadcast). The operands' chunk boundaries cut the batch axes, rows, the shared
// axis and columns into a grid; each grid product (batch box, rows i, shared k, columns j) runs on
// a device that holds both its blocks if one does (the least loaded such device), else on the
// holder of the larger block, the smaller moving to it (cupyx raises where blocks share no
// device). Products along k on one device merge into one GEMM, and a product over a batch box is
// one strided batched GEMM. Pure.
#ifndef DISTARRAY_SERVER_OPS_MATMUL_PLANNER_H_
#define DISTARRAY_SERVER_OPS_MATMUL_PLANNER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/device_ops.h"
#include "server/ops/chunk_index.h"
#include "server/ops/operand.h"

namespace distarray {

// The most GEMMs one matmul may plan (grid cells of the operands' chunk boundaries).
inline constexpr int64_t kMaxMatmulProducts = 65536;

struct MatmulPlan {
  DType dtype = DType::kFloat32;
  Shape result_shape;
  Mode result_mode = Mode::kReplica;  // SUM where the shared axis is split
  // Operands that must first become REPLICA with unit-step chunks (op modes, strided chunks):
  // Relayout to an even split of axis 0 before planning the grid, in which case the plan was made
  // against that layout.
  bool prepare_a = false, prepare_b = false;
  IndexMap a_layout, b_layout;  // the layouts the grid was planned on
  // Per product: its blocks of a and b (device, box in the operand's coordinates; an axis the
  // operand broadcasts has length 1) and its result chunk, each read and written densely.
  IndexMap a_blocks, b_blocks, result_map;
  // Per product: the GEMM over those dense blocks (a stride of 0 where one operand's matrix
  // serves every batch entry).
  std::vector<GemmShape> gemms;
  // NumPy's vectors: a 1-D a is planned as a 1-row matrix (a unit axis before its own) and a 1-D
  // b as a 1-column one (a unit axis after), so the blocks above are in those coordinates; the
  // added axes are dropped from result_shape and result_map (a vector @ vector is 0-d).
  bool a_vector = false, b_vector = false;
  // The shared axis has length 0 and the result has elements: no product runs, and result_map
  // (one chunk on device 0) is filled with zeros, as NumPy's sum over no terms. A zero-size
  // result has no chunks and no products.
  bool fill_zeros = false;
};

// `array` with a unit axis inserted at `axis` (same elements, same buffers' layout).
ArrayMeta WithUnitAxis(const ArrayMeta& array, int axis);

// INVALID_ARGUMENT for 0-d operands, mixed dtypes, inner dimensions that differ and batch axes
// that do not broadcast (naming both shapes as given); UNIMPLEMENTED for dtypes
// without a GEMM; RESOURCE_EXHAUSTED past kMaxMatmulProducts.
absl::StatusOr<MatmulPlan> PlanMatmul(const ArrayMeta& a, const ArrayMeta& b,
                                      const StopCheck& stop = {});

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_MATMUL_PLANNER_H_
