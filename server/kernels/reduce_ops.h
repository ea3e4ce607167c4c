// The reductions as element-level rules shared by the host loops and the CUDA kernels: what a
// reduction accumulates in, its identity, how two partial values combine and what it writes.
// CUDA-safe header.
#ifndef DISTARRAY_SERVER_KERNELS_REDUCE_OPS_H_
#define DISTARRAY_SERVER_KERNELS_REDUCE_OPS_H_

#include <cstdint>
#include <limits>
#include <type_traits>

#ifndef __CUDACC__
#include "common/dtype.h"
#endif
#include "common/strided_box.h"
#include "server/kernels/ops.h"

namespace distarray {

// kArgMatch is argmax/argmin's second pass: the smallest global index whose value equals the
// already combined extreme of its output element (NaN matches NaN).
enum class ReduceKind { kSum, kProd, kMax, kMin, kAll, kAny, kMean, kArgMatch };

// Where a reduction reads within one chunk's dense buffer: output element o (C order over the
// kept axes) reduces the elements at base + BoxOffset(kept, o) + BoxOffset(reduced, r) for every
// r. kArgMatch's global index of element r is BoxOffset(index, r).
struct ReduceGeometry {
  StridedBox kept;
  StridedBox reduced;
  int64_t base = 0;
  // The reduced elements of one output are consecutive (BoxOffset(reduced, r) == r).
  bool reduced_contiguous = false;
  StridedBox index;
  DA_HD int64_t outputs() const { return kept.size(); }
  DA_HD int64_t reduced_size() const { return reduced.size(); }
};

template <ReduceKind K, typename T>
struct Reducer {
  static constexpr bool kFloat = std::is_floating_point_v<T>;
  static constexpr bool kComplex = kIsComplex<T>;
  static constexpr bool kBool = std::is_same_v<T, bool>;
  // Sums and products accumulate floats in double, complex numbers in complex128 and integers in
  // 64 bits, wrapping (NumPy's int64/uint64 results); max/min in T; all/any in bool; arg passes
  // in int64 indices.
  using Wide = std::conditional_t<
      kFloat, double,
      std::conditional_t<kComplex, Complex128,
                         std::conditional_t<std::is_unsigned_v<T> && !kBool, uint64_t, int64_t>>>;
  // The mean accumulates in double (complex128) for every dtype, as NumPy's does (an int64 sum
  // may wrap).
  using Acc = std::conditional_t<
      K == ReduceKind::kMean, std::conditional_t<kComplex, Complex128, double>,
      std::conditional_t<
          K == ReduceKind::kSum || K == ReduceKind::kProd, Wide,
          std::conditional_t<K == ReduceKind::kAll || K == ReduceKind::kAny, bool,
                             std::conditional_t<K == ReduceKind::kArgMatch, int64_t, T>>>>;
  using Out = std::conditional_t<
      K == ReduceKind::kSum || K == ReduceKind::kProd,
      std::conditional_t<kFloat || kComplex, T, Wide>,
      std::conditional_t<K == ReduceKind::kMean, std::conditional_t<kFloat || kComplex, T, double>,
                         Acc>>;

  static DA_HD Acc Identity() {
    if constexpr (K == ReduceKind::kSum || K == ReduceKind::kMean)
      return Acc(0);
    else if constexpr (K == ReduceKind::kProd)
      return Acc(1);
    else if constexpr (K == ReduceKind::kAll)
      return true;
    else if constexpr (K == ReduceKind::kAny)
      return false;
    else if constexpr (K == ReduceKind::kArgMatch)
      return std::numeric_limits<int64_t>::max();
    else if constexpr (K == ReduceKind::kMax)
      return ModeIdentity<T>(Mode::kMax);
    else
      return ModeIdentity<T>(Mode::kMin);
  }
  // The accumulator value of one element (kArgMatch: its index if it matches `extreme`).
  static DA_HD Acc Load(T v, T extreme, int64_t index) {
    if constexpr (K == ReduceKind::kAll || K == ReduceKind::kAny) {
      return v != T(0);
    } else if constexpr (K == ReduceKind::kArgMatch) {
      const bool match = v == extreme || (extreme != extreme && v != v);
      return match ? index : std::numeric_limits<int64_t>::max();
    } else {
      return static_cast<Acc>(v);
    }
  }
  static DA_HD Acc Combine(Acc a, Acc b) {
    if constexpr (K == ReduceKind::kSum || K == ReduceKind::kMean)
      return WrappingAdd(a, b);
    else if constexpr (K == ReduceKind::kProd)
      return WrappingMultiply(a, b);
    else if constexpr (K == ReduceKind::kAll)
      return a && b;
    else if constexpr (K == ReduceKind::kAny)
      return a || b;
    else if constexpr (K == ReduceKind::kArgMatch)
      return a < b ? a : b;
    else if constexpr (K == ReduceKind::kMax)
      return ApplyCombine(Combine::kMax, b, a);  // NaN propagates; complex: NumPy's order
    else
      return ApplyCombine(Combine::kMin, b, a);
  }
  static DA_HD Out Finish(Acc a, double scale) {
    if constexpr (K == ReduceKind::kMean && kComplex)
      return static_cast<Out>(Acc(a.re * scale, a.im * scale));
    else if constexpr (K == ReduceKind::kMean)
      return static_cast<Out>(static_cast<double>(a) * scale);
    else
      return static_cast<Out>(a);
  }
};

// Calls fn(std::integral_constant<ReduceKind, kind>{}): the runtime kind as a template argument.
template <typename Fn>
void DispatchReduceKind(ReduceKind kind, Fn&& fn) {
  switch (kind) {
#define DA_REDUCE_KIND_CASE(k) \
  case ReduceKind::k:          \
    return fn(std::integral_constant<ReduceKind, ReduceKind::k>{});
    DA_REDUCE_KIND_CASE(kSum)
    DA_REDUCE_KIND_CASE(kProd)
    DA_REDUCE_KIND_CASE(kMax)
    DA_REDUCE_KIND_CASE(kMin)
    DA_REDUCE_KIND_CASE(kAll)
    DA_REDUCE_KIND_CASE(kAny)
    DA_REDUCE_KIND_CASE(kMean)
    DA_REDUCE_KIND_CASE(kArgMatch)
#undef DA_REDUCE_KIND_CASE
  }
}

// What a kernel writes for elements stored as S and reduced in T (S is T, or a 16-bit float
// reduced in float32): an output of the compute dtype goes back to S (sum of float16 is
// float16); any other output (argmax's int64, all's bool) stays as it is.
template <ReduceKind K, typename T, typename S>
using ReduceStoredOut = std::conditional_t<std::is_same_v<typename Reducer<K, T>::Out, T>, S,
                                           typename Reducer<K, T>::Out>;

#ifndef __CUDACC__
// The dtype a reduction of `kind` writes for input dtype `in`: Reducer<kind, T>::Out (host code;
// a cluster member checks a forwarded reduction's output buffer with it).
inline DType ReduceResultDType(ReduceKind kind, DType in) {
  DType out = in;
  DispatchComputeDType(in, [&](auto tag) {
    using T = decltype(tag);
    switch (kind) {
#define DA_REDUCE_OUT(K)                                       \
  case ReduceKind::K:                                          \
    out = DTypeFor<typename Reducer<ReduceKind::K, T>::Out>(); \
    break;
      DA_REDUCE_OUT(kSum)
      DA_REDUCE_OUT(kProd)
      DA_REDUCE_OUT(kMax)
      DA_REDUCE_OUT(kMin)
      DA_REDUCE_OUT(kAll)
      DA_REDUCE_OUT(kAny)
      DA_REDUCE_OUT(kMean)
      DA_REDUCE_OUT(kArgMatch)
#undef DA_REDUCE_OUT
    }
  });
  return out;
}
#endif

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_REDUCE_OPS_H_
