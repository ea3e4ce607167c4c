// Sorting and merging runs on one GPU (sort_kernels.h). A sort encodes the keys into codes
// (sort_keys.h), radix-sorts the codes (with the positions as values for argsort) and decodes
// them into the output; a merge compares codes on the fly. Nothing here allocates: the engine
// hands in scratch sized by the *ScratchBytes functions, so a recorded graph can hold the sort.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <cub/device/device_merge.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>

#include "server/cuda/sort_kernels.h"

namespace distarray::cuda {
namespace {

constexpr int kThreads = 256;
// Up to this many runs are sorted by one device-wide radix sort each; more by a segmented sort,
// whose per-segment blocks only pay off for many short runs.
constexpr int64_t kMaxLoopedRuns = 4;
constexpr int64_t kAlign = 256;

int64_t AlignUp(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 132 * 32));
}

template <typename U>
__global__ void EncodeKernel(SortKeyCodec codec, const U* in, U* codes, int64_t n,
                             bool descending) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    codes[i] = codec.Encode(in[i], descending);
  }
}

template <typename U>
__global__ void DecodeKernel(SortKeyCodec codec, const U* codes, U* out, int64_t n,
                             bool descending) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = codec.Decode(codes[i], descending);
  }
}

__global__ void PositionsKernel(int64_t* out, int64_t n, int64_t length, int64_t base) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = i % length + base;
  }
}

struct LineStart {
  int64_t length;
  __host__ __device__ int64_t operator()(int64_t line) const { return line * length; }
};
using LineOffsets = thrust::transform_iterator<LineStart, thrust::counting_iterator<int64_t>>;
LineOffsets Offsets(int64_t length, int64_t first_line) {
  return LineOffsets(thrust::counting_iterator<int64_t>(first_line), LineStart{length});
}

// Where the pieces of a sort's scratch sit.
template <typename U>
struct SortScratch {
  U* codes[2];
  int64_t* positions;  // the alternate buffer of indices_out
  void* temp;
  size_t temp_bytes;
};

// CUB's temporary storage for the sort of `lines` runs of `length` (a query, nothing launched).
template <typename U>
cudaError_t CubSortBytes(int64_t lines, int64_t length, bool indices, size_t& bytes) {
  bytes = 0;
  const int64_t n = lines * length;
  cub::DoubleBuffer<U> keys(nullptr, nullptr);
  cub::DoubleBuffer<int64_t> values(nullptr, nullptr);
  if (lines <= kMaxLoopedRuns) {
    return indices ? cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, values, length)
                   : cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, length);
  }
  const LineOffsets begin = Offsets(length, 0), end = Offsets(length, 1);
  return indices
             ? cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, keys, values, n, lines,
                                                         begin, end)
             : cub::DeviceSegmentedSort::StableSortKeys(nullptr, bytes, keys, n, lines, begin, end);
}

template <typename U>
int64_t ScratchBytesFor(int64_t lines, int64_t length, bool indices) {
  size_t temp = 0;
  if (CubSortBytes<U>(lines, length, indices, temp) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  const int64_t n = lines * length;
  return 2 * AlignUp(n * static_cast<int64_t>(sizeof(U))) + (indices ? AlignUp(n * 8) : 0) +
         AlignUp(static_cast<int64_t>(temp));
}

template <typename U>
cudaError_t SortWidth(const SortKeyCodec& codec, const SortLaunch& sort, cudaStream_t stream) {
  const int64_t n = sort.lines * sort.length;
  if (n == 0) return cudaSuccess;
  const bool indices = sort.indices_out != nullptr;
  if (sort.scratch_bytes < ScratchBytesFor<U>(sort.lines, sort.length, indices)) {
    return cudaErrorInvalidValue;
  }
  char* at = static_cast<char*>(sort.scratch);
  SortScratch<U> s;
  s.codes[0] = reinterpret_cast<U*>(at);
  at += AlignUp(n * static_cast<int64_t>(sizeof(U)));
  s.codes[1] = reinterpret_cast<U*>(at);
  at += AlignUp(n * static_cast<int64_t>(sizeof(U)));
  s.positions = reinterpret_cast<int64_t*>(at);
  if (indices) at += AlignUp(n * 8);
  s.temp = at;
  if (cudaError_t e = CubSortBytes<U>(sort.lines, sort.length, indices, s.temp_bytes);
      e != cudaSuccess) {
    return e;
  }

  EncodeKernel<U><<<Blocks(n), kThreads, 0, stream>>>(codec, static_cast<const U*>(sort.keys_in),
                                                      s.codes[0], n, sort.descending);
  if (indices) {
    PositionsKernel<<<Blocks(n), kThreads, 0, stream>>>(sort.indices_out, n, sort.length,
                                                        sort.index_base);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;

  // Which of the two code buffers (and of indices_out / positions) holds the sorted runs.
  int key_side = 0, value_side = 0;
  if (sort.lines <= kMaxLoopedRuns) {
    for (int64_t line = 0; line < sort.lines; ++line) {
      const int64_t first = line * sort.length;
      cub::DoubleBuffer<U> keys(s.codes[0] + first, s.codes[1] + first);
      cub::DoubleBuffer<int64_t> values(sort.indices_out + (indices ? first : 0),
                                        s.positions + (indices ? first : 0));
      size_t temp_bytes = s.temp_bytes;
      const cudaError_t e =
          indices ? cub::DeviceRadixSort::SortPairs(s.temp, temp_bytes, keys, values, sort.length,
                                                    0, 8 * sizeof(U), stream)
                  : cub::DeviceRadixSort::SortKeys(s.temp, temp_bytes, keys, sort.length, 0,
                                                   8 * sizeof(U), stream);
      if (e != cudaSuccess) return e;
      // Every run has the same length, so every run ends on the same side.
      key_side = keys.selector;
      value_side = values.selector;
    }
  } else {
    const LineOffsets begin = Offsets(sort.length, 0), end = Offsets(sort.length, 1);
    cub::DoubleBuffer<U> keys(s.codes[0], s.codes[1]);
    cub::DoubleBuffer<int64_t> values(sort.indices_out, s.positions);
    size_t temp_bytes = s.temp_bytes;
    const cudaError_t e =
        indices ? cub::DeviceSegmentedSort::StableSortPairs(s.temp, temp_bytes, keys, values, n,
                                                            sort.lines, begin, end, stream)
                : cub::DeviceSegmentedSort::StableSortKeys(s.temp, temp_bytes, keys, n, sort.lines,
                                                           begin, end, stream);
    if (e != cudaSuccess) return e;
    key_side = keys.selector;
    value_side = values.selector;
  }

  if (sort.keys_out != nullptr) {
    DecodeKernel<U><<<Blocks(n), kThreads, 0, stream>>>(
        codec, s.codes[key_side], static_cast<U*>(sort.keys_out), n, sort.descending);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (indices && value_side == 1) {
    return cudaMemcpyAsync(sort.indices_out, s.positions, n * 8, cudaMemcpyDeviceToDevice, stream);
  }
  return cudaSuccess;
}

// The merge's order: codes ascending; with indices, equal codes by index (stable blocks).
template <typename U>
struct CodeLess {
  SortKeyCodec codec;
  bool descending;
  __device__ bool operator()(U a, U b) const {
    return codec.Encode(a, descending) < codec.Encode(b, descending);
  }
};
template <typename U>
struct CodeIndexLess {
  SortKeyCodec codec;
  bool descending;
  template <typename A, typename B>
  __device__ bool operator()(const A& a, const B& b) const {
    const U ca = codec.Encode(static_cast<U>(thrust::get<0>(a)), descending);
    const U cb = codec.Encode(static_cast<U>(thrust::get<0>(b)), descending);
    return ca < cb || (ca == cb && static_cast<int64_t>(thrust::get<1>(a)) <
                                       static_cast<int64_t>(thrust::get<1>(b)));
  }
};

template <typename U>
cudaError_t MergeWidth(const SortKeyCodec& codec, const MergeLaunch& m, cudaStream_t stream,
                       size_t* query) {
  const U* a = static_cast<const U*>(m.a_keys);
  const U* b = static_cast<const U*>(m.b_keys);
  U* out = static_cast<U*>(m.out_keys);
  size_t bytes = query ? 0 : static_cast<size_t>(m.scratch_bytes);
  void* temp = query ? nullptr : m.scratch;
  cudaError_t e;
  if (m.out_indices || (query && m.a_indices)) {
    auto first = thrust::make_zip_iterator(thrust::make_tuple(a, m.a_indices));
    auto second = thrust::make_zip_iterator(thrust::make_tuple(b, m.b_indices));
    auto into = thrust::make_zip_iterator(thrust::make_tuple(out, m.out_indices));
    e = cub::DeviceMerge::MergeKeys(temp, bytes, first, m.a_count, second, m.b_count, into,
                                    CodeIndexLess<U>{codec, m.descending}, stream);
  } else {
    e = cub::DeviceMerge::MergeKeys(temp, bytes, a, m.a_count, b, m.b_count, out,
                                    CodeLess<U>{codec, m.descending}, stream);
  }
  if (query) *query = bytes;
  return e;
}

template <typename U>
__global__ void SearchSortedKernel(SortKeyCodec codec, const U* sorted, int64_t sorted_count,
                                   const U* values, int64_t count, int64_t* out, bool right) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = InsertionPosition(codec, sorted, sorted_count, values[i], right);
  }
}

}  // namespace

int64_t SortScratchBytes(const SortKeyCodec& codec, int64_t lines, int64_t length, bool indices) {
  return DispatchSortWidth(codec.bytes, [&](auto tag) {
    return ScratchBytesFor<decltype(tag)>(lines, length, indices);
  });
}

cudaError_t LaunchSort(const SortKeyCodec& codec, const SortLaunch& sort, cudaStream_t stream) {
  return DispatchSortWidth(codec.bytes,
                           [&](auto tag) { return SortWidth<decltype(tag)>(codec, sort, stream); });
}

int64_t MergeScratchBytes(const SortKeyCodec& codec, int64_t a_count, int64_t b_count,
                          bool indices) {
  // A query: CUB reads only the counts (and, for the zipped form, that indices are wanted).
  static const int64_t kMarker = 0;
  MergeLaunch probe;
  probe.a_count = a_count;
  probe.b_count = b_count;
  probe.a_indices = indices ? &kMarker : nullptr;
  size_t bytes = 0;
  const cudaError_t e = DispatchSortWidth(codec.bytes, [&](auto tag) {
    return MergeWidth<decltype(tag)>(codec, probe, nullptr, &bytes);
  });
  if (e != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return AlignUp(static_cast<int64_t>(bytes));
}

cudaError_t LaunchMerge(const SortKeyCodec& codec, const MergeLaunch& merge, cudaStream_t stream) {
  if (merge.a_count + merge.b_count == 0) return cudaSuccess;
  return DispatchSortWidth(codec.bytes, [&](auto tag) {
    return MergeWidth<decltype(tag)>(codec, merge, stream, nullptr);
  });
}

cudaError_t LaunchSearchSorted(const SortKeyCodec& codec, const void* sorted, int64_t sorted_count,
                               const void* values, int64_t count, int64_t* out, bool right,
                               cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  return DispatchSortWidth(codec.bytes, [&](auto tag) {
    using U = decltype(tag);
    SearchSortedKernel<U>
        <<<Blocks(count), kThreads, 0, stream>>>(codec, static_cast<const U*>(sorted), sorted_count,
                                                 static_cast<const U*>(values), count, out, right);
    return cudaGetLastError();
  });
}

}  // namespace distarray::cuda
