// The elementwise op table (server/kernels/ufuncs.h) as the engine uses it: proto mapping, names,
// arity and type rule of each op, which compute dtypes it takes and what it returns, and the
// feature list GetServerInfo reports. Every fact here comes from the one table and the functors.
#ifndef DISTARRAY_SERVER_OPS_OP_TABLE_H_
#define DISTARRAY_SERVER_OPS_OP_TABLE_H_

#include <optional>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "distarray/v1/distarray.pb.h"
#include "server/kernels/elementwise_result.h"
#include "server/kernels/ufuncs.h"

namespace distarray {

struct ElementwiseOpInfo {
  ElementwiseOpId id;
  v1::ElementwiseOp proto;
  const char* name;  // NumPy's
  int arity;
  ufunc::TypeRule rule;
  ufunc::ComplexSupport complex;
};

// The op a proto value names; nullptr for UNSPECIFIED, ASTYPE (not a table op) or unknown values.
const ElementwiseOpInfo* FindElementwiseOp(v1::ElementwiseOp op);
const ElementwiseOpInfo& OpInfo(ElementwiseOpId id);

// ElementwiseResultDType (the dtype op `id` writes computing in `compute`) is in
// server/kernels/elementwise_result.h.

// "elementwise.<name>" for every op, "elementwise.astype", the reductions and "matmul".
const std::vector<std::string>& ComputeFeatures();

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_OP_TABLE_H_
