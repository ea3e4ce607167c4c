// gRPC server metrics with the names and labels of the grpc-ecosystem exporters
// (go-grpc-prometheus, java-grpc-prometheus), so their dashboards and alerts work unchanged:
//   grpc_server_started_total{grpc_type,grpc_service,grpc_method}
//   grpc_server_handled_total{grpc_type,grpc_service,grpc_method,grpc_code}
//   grpc_server_handling_seconds{grpc_type,grpc_service,grpc_method} (histogram)
//   grpc_server_msg_received_total / grpc_server_msg_sent_total{grpc_type,grpc_service,grpc_method}
// Recorded by a server interceptor, which sees every call of the server it is installed on
// (health and reflection included), whatever service handles it.
#ifndef DISTARRAY_SERVER_METRICS_GRPC_SERVER_METRICS_H_
#define DISTARRAY_SERVER_METRICS_GRPC_SERVER_METRICS_H_

#include <array>
#include <memory>
#include <string>

#include <grpcpp/support/server_interceptor.h>
#include <grpcpp/support/status.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace distarray::metrics {

// The grpc_code label value: the code's Go name (OK, Canceled, InvalidArgument, ...), as the
// ecosystem exporters spell it. Codes outside 0..16 read "Unknown".
absl::string_view GrpcCodeName(grpc::StatusCode code);

// The grpc_type label value: unary, client_stream, server_stream, bidi_stream.
absl::string_view GrpcTypeName(grpc::experimental::ServerRpcInfo::Type type);

class GrpcServerMetrics {
 public:
  // The series of one method.
  struct Method {
    prometheus::Counter* started = nullptr;
    prometheus::Counter* received = nullptr;
    prometheus::Counter* sent = nullptr;
    prometheus::Histogram* handling = nullptr;
    std::array<prometheus::Counter*, 17> handled{};  // by grpc::StatusCode
  };

  // Most distinct methods given series of their own; calls to more (a server registers a few
  // dozen) share the "unknown" series, so no client can grow the scrape without bound.
  static constexpr int kMaxMethods = 256;

  explicit GrpcServerMetrics(prometheus::Registry& registry);

  // Creates every series of `service` (a fully qualified name found in the generated descriptor
  // pool, e.g. distarray.v1.ArrayService), every code at zero as go-grpc-prometheus's
  // InitializeMetrics does, so rates and ratios exist before the first call. NOT_FOUND when the
  // pool has no such service.
  absl::Status PreRegisterService(absl::string_view service);

  // The series of `full_method` ("/package.Service/Method"); thread-safe, never null.
  Method& ForMethod(absl::string_view full_method, grpc::experimental::ServerRpcInfo::Type type);

  // A factory for grpc::ServerBuilder::experimental().SetInterceptorCreators. Put it first in the
  // list, so it sees the codes that later interceptors answer with. This object must outlive the
  // server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewInterceptorFactory();

 private:
  Method& ForMethodLocked(absl::string_view service, absl::string_view method,
                          grpc::experimental::ServerRpcInfo::Type type)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  prometheus::Family<prometheus::Counter>& started_;
  prometheus::Family<prometheus::Counter>& handled_;
  prometheus::Family<prometheus::Histogram>& handling_;
  prometheus::Family<prometheus::Counter>& received_;
  prometheus::Family<prometheus::Counter>& sent_;

  absl::Mutex mu_;
  // By full method name; entries are never removed, so references stay valid.
  absl::flat_hash_map<std::string, std::unique_ptr<Method>> methods_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray::metrics

#endif  // DISTARRAY_SERVER_METRICS_GRPC_SERVER_METRICS_H_
