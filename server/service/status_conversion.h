#ifndef DISTARRAY_SERVER_SERVICE_STATUS_CONVERSION_H_
#define DISTARRAY_SERVER_SERVICE_STATUS_CONVERSION_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace distarray {

// absl and gRPC status codes share their numeric values, so this is a cast.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_STATUS_CONVERSION_H_
