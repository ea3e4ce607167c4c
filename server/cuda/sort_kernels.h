// Launchers for sorting and merging runs on one GPU (sort.cu): CUB's radix sorts and merge over
// the order-preserving codes of server/kernels/sort_keys.h, so one instantiation per key width
// serves every dtype of that width. Plain C++ for nvcc, like kernels.h; asynchronous on `stream`.
#ifndef DISTARRAY_SERVER_CUDA_SORT_KERNELS_H_
#define DISTARRAY_SERVER_CUDA_SORT_KERNELS_H_

#include <cstdint>

#include <cuda_runtime_api.h>

#include "server/kernels/sort_keys.h"

namespace distarray::cuda {

struct SortLaunch {
  const void* keys_in = nullptr;
  void* keys_out = nullptr;        // null: positions only (indices_out set)
  int64_t* indices_out = nullptr;  // null: keys only
  void* scratch = nullptr;
  int64_t scratch_bytes = 0;
  int64_t lines = 1;
  int64_t length = 0;
  int64_t index_base = 0;
  bool descending = false;
};
// The scratch a sort of these runs needs (codes, their alternate buffers and CUB's temporary
// storage); -1 if CUB's query fails.
int64_t SortScratchBytes(const SortKeyCodec& codec, int64_t lines, int64_t length, bool indices);
cudaError_t LaunchSort(const SortKeyCodec& codec, const SortLaunch& sort, cudaStream_t stream);

struct MergeLaunch {
  const void* a_keys = nullptr;
  const int64_t* a_indices = nullptr;
  const void* b_keys = nullptr;
  const int64_t* b_indices = nullptr;
  void* out_keys = nullptr;
  int64_t* out_indices = nullptr;  // null: keys only (then a_indices and b_indices too)
  void* scratch = nullptr;
  int64_t scratch_bytes = 0;
  int64_t a_count = 0;
  int64_t b_count = 0;
  bool descending = false;
};
int64_t MergeScratchBytes(const SortKeyCodec& codec, int64_t a_count, int64_t b_count,
                          bool indices);
cudaError_t LaunchMerge(const SortKeyCodec& codec, const MergeLaunch& merge, cudaStream_t stream);

// out[i] = the insertion position of values[i] in `sorted` (sorted_count elements), left or right.
cudaError_t LaunchSearchSorted(const SortKeyCodec& codec, const void* sorted, int64_t sorted_count,
                               const void* values, int64_t count, int64_t* out, bool right,
                               cudaStream_t stream);

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_SORT_KERNELS_H_
