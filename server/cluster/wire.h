// Conversions between the engine's value types (boxes, strided views, scalars, generators) and
// their distarray.internal.v1 messages. Buffers are not here: the leader names them by handle
// (remote_node.h) and a member looks the handles up (member.h).
#ifndef DISTARRAY_SERVER_CLUSTER_WIRE_H_
#define DISTARRAY_SERVER_CLUSTER_WIRE_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/box.h"
#include "common/dtype.h"
#include "common/scalar.h"
#include "common/strided_box.h"
#include "distarray/internal/v1/cluster.pb.h"
#include "server/kernels/ops.h"
#include "server/kernels/reduce_ops.h"
#include "server/kernels/ufuncs.h"

namespace distarray::cluster {

namespace wire = ::distarray::internal::v1;

void ToWire(const Box& box, wire::Box* out);
void ToWire(const StridedBox& box, wire::StridedBox* out);
void ToWire(const Scalar& scalar, wire::Scalar* out);
void ToWire(const Generator& generator, wire::Generator* out);
void ToWire(const ReduceGeometry& geometry, wire::ReduceGeometry* out);

// The reverse, checking what a well-formed message must hold (ranks within kMaxRank, enums in
// range); INTERNAL otherwise, since only another daemon of the cluster sends these.
absl::StatusOr<Box> FromWire(const wire::Box& box);
absl::StatusOr<StridedBox> FromWire(const wire::StridedBox& box);
absl::StatusOr<Scalar> FromWire(const wire::Scalar& scalar);
absl::StatusOr<Generator> FromWire(const wire::Generator& generator);
absl::StatusOr<ReduceGeometry> FromWire(const wire::ReduceGeometry& geometry);

absl::StatusOr<DType> DTypeFromWire(int32_t value);
absl::StatusOr<Combine> CombineFromWire(int32_t value);
absl::StatusOr<ElementwiseOpId> ElementwiseOpFromWire(int32_t value);
absl::StatusOr<ReduceKind> ReduceKindFromWire(int32_t value);

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_WIRE_H_
