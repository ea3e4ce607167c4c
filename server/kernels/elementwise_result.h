// The dtype an elementwise op writes for a compute dtype, as the kernels' own dispatch decides it:
// the one answer the planner (what to allocate) and a cluster member (what a forwarded op may
// write) both need. Host code only.
#ifndef DISTARRAY_SERVER_KERNELS_ELEMENTWISE_RESULT_H_
#define DISTARRAY_SERVER_KERNELS_ELEMENTWISE_RESULT_H_

#include <optional>

#include "common/dtype.h"
#include "server/kernels/elementwise_loop.h"
#include "server/kernels/ufuncs.h"

namespace distarray {

// The result dtype of `id` on `compute`; nullopt when the op does not take `compute`.
inline std::optional<DType> ElementwiseResultDType(ElementwiseOpId id, DType compute) {
  std::optional<DType> result;
  auto record = [&](auto functor, auto tag, auto arity_tag) {
    using Op = decltype(functor);
    using T = decltype(tag);
    result = DTypeFor<ElementwiseOut<Op, T, decltype(arity_tag)::value>>();
  };
  switch (ArityOf(id)) {
    case 1:
      DispatchElementwise<1>(id, compute, record);
      break;
    case 2:
      DispatchElementwise<2>(id, compute, record);
      break;
    case 3:
      DispatchElementwise<3>(id, compute, record);
      break;
    default:
      break;
  }
  return result;
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_ELEMENTWISE_RESULT_H_
