// The elementwise loop body shared by the host loops and the CUDA kernels, and the dispatch from
// a runtime (op, compute dtype) to the templated functor: the op table (ufuncs.h) is the only
// list of ops, so nothing here names one. CUDA-safe header.
#ifndef DISTARRAY_SERVER_KERNELS_ELEMENTWISE_LOOP_H_
#define DISTARRAY_SERVER_KERNELS_ELEMENTWISE_LOOP_H_

#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "common/strided_box.h"
#include "server/kernels/ufuncs.h"

namespace distarray {

// An operand as a kernel reads it (see ElementwiseArg in backend.h).
template <typename T>
struct KernelArg {
  const T* data = nullptr;  // null: `scalar`
  StridedBox view;
  bool contiguous = true;
  T scalar{};
};

template <typename T>
DA_HD T LoadArg(const KernelArg<T>& arg, int64_t i) {
  if (arg.data == nullptr) return arg.scalar;
  if (arg.contiguous) return arg.data[i];
  return arg.data[BoxOffset(arg.view, i)];
}

// The type each operand position of `Op` reads for compute type T.
template <typename Op, typename T>
using FirstArgType = std::conditional_t<std::is_same_v<Op, ufunc::Where>, bool, T>;
template <typename Op, typename T, int kArity>
using ElementwiseOut = typename ufunc::ResultOf<Op, T, kArity>::type;

// Operands stored as S and computed in T: S is T, or a 16-bit float computed in float32
// (Storage below).
template <typename Op, typename T, typename S>
using StoredFirstArg = std::conditional_t<std::is_same_v<Op, ufunc::Where>, bool, S>;
// What a kernel writes: the op's result, in the storage type where the result is the compute
// type (float16 + float16 writes float16; float16 < float16 writes bool).
template <typename Op, typename T, int kArity, typename S>
using StoredOut = std::conditional_t<std::is_same_v<ElementwiseOut<Op, T, kArity>, T>, S,
                                     ElementwiseOut<Op, T, kArity>>;

// Element i of the op, reading operands stored as SA/SB and computing in T.
template <typename Op, typename T, int kArity, typename SA, typename SB>
DA_HD ElementwiseOut<Op, T, kArity> ElementwiseAt(const KernelArg<SA>& a, const KernelArg<SB>& b,
                                                  const KernelArg<SB>& c, int64_t i) {
  using A = FirstArgType<Op, T>;
  if constexpr (kArity == 1)
    return Op{}(static_cast<A>(LoadArg(a, i)));
  else if constexpr (kArity == 2)
    return Op{}(static_cast<A>(LoadArg(a, i)), static_cast<T>(LoadArg(b, i)));
  else
    return Op{}(static_cast<A>(LoadArg(a, i)), static_cast<T>(LoadArg(b, i)),
                static_cast<T>(LoadArg(c, i)));
}

// Calls fn(S{}) with the storage type of operands computed in T: T itself when `storage` is the
// compute dtype, Float16/BFloat16 for float32 arithmetic on 16-bit floats. False for any other
// pair (the planner never sends one).
template <typename T, typename Fn>
bool DispatchStorage(DType compute, DType storage, Fn&& fn) {
  if (storage == compute) {
    fn(T{});
    return true;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (storage == DType::kFloat16) {
      fn(Float16{});
      return true;
    }
    if (storage == DType::kBFloat16) {
      fn(BFloat16{});
      return true;
    }
  }
  return false;
}

// Whether op `id` belongs to dispatch group (kArity, kGroup of kGroups): the CUDA kernels are
// compiled in several files, each instantiating one group, so a build spreads over cores.
constexpr bool InGroup(int id, int arity, int kArity, int kGroup, int kGroups) {
  return arity == kArity && id % kGroups == kGroup;
}

// Calls fn(Op{}, T{}, std::integral_constant<int, arity>{}) for op `op` computing in `compute`,
// and returns true; false when the op does not take `compute` or is outside the group. Callers
// validate first (the planner), so false means a bug or a wrong group.
template <int kArity, int kGroup = 0, int kGroups = 1, typename Fn>
bool DispatchElementwise(ElementwiseOpId op, DType compute, Fn&& fn) {
  switch (op) {
#define DA_DISPATCH_CASE(suffix, F, name, arity, rule, complex)                           \
  case ElementwiseOpId::k##F:                                                             \
    if constexpr (InGroup(static_cast<int>(ElementwiseOpId::k##F), arity, kArity, kGroup, \
                          kGroups)) {                                                     \
      if (!HasKernels(compute) && !IsComplex(compute)) return false;                      \
      return DispatchComputeDType(compute, [&](auto tag) {                                \
        using T = decltype(tag);                                                          \
        if constexpr (ufunc::Accepts<ufunc::F, T, arity>()) {                             \
          fn(ufunc::F{}, tag, std::integral_constant<int, arity>{});                      \
          return true;                                                                    \
        } else {                                                                          \
          return false;                                                                   \
        }                                                                                 \
      });                                                                                 \
    } else {                                                                              \
      return false;                                                                       \
    }
    DISTARRAY_ELEMENTWISE_OPS(DA_DISPATCH_CASE)
#undef DA_DISPATCH_CASE
    default:
      return false;
  }
}

// The arity of an op, from the table.
constexpr int ArityOf(ElementwiseOpId op) {
  switch (op) {
#define DA_ARITY_CASE(suffix, F, name, arity, rule, complex) \
  case ElementwiseOpId::k##F:                                \
    return arity;
    DISTARRAY_ELEMENTWISE_OPS(DA_ARITY_CASE)
#undef DA_ARITY_CASE
    default:
      return 0;
  }
}

// Calls fn(From{}, To{}) for a pair of implemented dtypes, the 16-bit floats included.
template <typename Fn>
void DispatchCast(DType from, DType to, Fn&& fn) {
  DispatchStorageDType(from, [&](auto from_tag) {
    DispatchStorageDType(to, [&](auto to_tag) { fn(from_tag, to_tag); });
  });
}

// One element of astype: a 16-bit float reads as its exact float32 value and is written by one
// rounding from the source value; the rest follow NumPy's rules (ufunc::Cast).
template <typename To, typename From>
DA_HD To CastElement(From v) {
  if constexpr (kIsHalf<From>) {
    return CastElement<To>(static_cast<float>(v));
  } else if constexpr (kIsHalf<To> && kIsComplex<From>) {
    return To(v.re);  // the real part, rounded once
  } else if constexpr (kIsHalf<To>) {
    return To(v);
  } else {
    return ufunc::Cast<To>(v);
  }
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_ELEMENTWISE_LOOP_H_
