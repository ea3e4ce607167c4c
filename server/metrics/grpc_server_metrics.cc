#include "server/metrics/grpc_server_metrics.h"

#include <chrono>

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace distarray::metrics {
namespace {

using RpcType = grpc::experimental::ServerRpcInfo::Type;
using grpc::experimental::InterceptionHookPoints;

// From 25 µs: most of the daemon's calls take 0.02 to 1.2 ms, all of which Prometheus's default
// buckets (5 ms up, as go-grpc-prometheus has them) put in the first bucket, so every quantile
// read 2.5 or 4.95 ms. The top keeps the default's 10 s for long transfers and programs.
const prometheus::Histogram::BucketBoundaries& HandlingBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 0.001, 0.0025, 0.005, 0.01,
      0.025, 0.05,  0.1,    0.25,   0.5,    1,     2.5,    5,     10};
  return *buckets;
}

RpcType TypeOf(const google::protobuf::MethodDescriptor& method) {
  if (method.client_streaming()) {
    return method.server_streaming() ? RpcType::BIDI_STREAMING : RpcType::CLIENT_STREAMING;
  }
  return method.server_streaming() ? RpcType::SERVER_STREAMING : RpcType::UNARY;
}

// Counts one call: started when the call arrives, messages as they pass, the code and the
// handling time when the status is sent.
class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit MetricsInterceptor(GrpcServerMetrics::Method& method)
      : method_(method), start_(std::chrono::steady_clock::now()) {
    method_.started->Increment();
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* batch) override {
    // A read that found the end of the stream reaches this hook with no message.
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        batch->GetRecvMessage() != nullptr) {
      method_.received->Increment();
    }
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      method_.sent->Increment();
    }
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      int code = static_cast<int>(batch->GetSendStatus().error_code());
      if (code < 0 || code >= static_cast<int>(method_.handled.size())) code = grpc::UNKNOWN;
      method_.handled[code]->Increment();
      method_.handling->Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
    batch->Proceed();
  }

 private:
  GrpcServerMetrics::Method& method_;
  const std::chrono::steady_clock::time_point start_;
};

class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(GrpcServerMetrics& metrics) : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(
        metrics_.ForMethod(info->method() != nullptr ? info->method() : "", info->type()));
  }

 private:
  GrpcServerMetrics& metrics_;
};

// "/package.Service/Method" -> {"package.Service", "Method"}; anything else (gRPC names calls to
// unregistered methods "unknown") -> {"unknown", "unknown"}.
std::pair<absl::string_view, absl::string_view> SplitMethod(absl::string_view full_method) {
  if (!absl::ConsumePrefix(&full_method, "/")) return {"unknown", "unknown"};
  const size_t slash = full_method.find('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 == full_method.size()) {
    return {"unknown", "unknown"};
  }
  return {full_method.substr(0, slash), full_method.substr(slash + 1)};
}

}  // namespace

absl::string_view GrpcCodeName(grpc::StatusCode code) {
  static constexpr absl::string_view kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < static_cast<int>(std::size(kNames)) ? kNames[i] : "Unknown";
}

absl::string_view GrpcTypeName(RpcType type) {
  switch (type) {
    case RpcType::UNARY:
      return "unary";
    case RpcType::CLIENT_STREAMING:
      return "client_stream";
    case RpcType::SERVER_STREAMING:
      return "server_stream";
    case RpcType::BIDI_STREAMING:
      return "bidi_stream";
  }
  return "unary";
}

GrpcServerMetrics::GrpcServerMetrics(prometheus::Registry& registry)
    : started_(prometheus::BuildCounter()
                   .Name("grpc_server_started_total")
                   .Help("Total number of RPCs started on the server.")
                   .Register(registry)),
      handled_(prometheus::BuildCounter()
                   .Name("grpc_server_handled_total")
                   .Help("Total number of RPCs completed on the server, regardless of success or "
                         "failure.")
                   .Register(registry)),
      handling_(prometheus::BuildHistogram()
                    .Name("grpc_server_handling_seconds")
                    .Help("Histogram of response latency (seconds) of gRPC that had been "
                          "application-level handled by the server.")
                    .Register(registry)),
      received_(prometheus::BuildCounter()
                    .Name("grpc_server_msg_received_total")
                    .Help("Total number of RPC stream messages received on the server.")
                    .Register(registry)),
      sent_(prometheus::BuildCounter()
                .Name("grpc_server_msg_sent_total")
                .Help("Total number of gRPC stream messages sent by the server.")
                .Register(registry)) {}

absl::Status GrpcServerMetrics::PreRegisterService(absl::string_view service) {
  const google::protobuf::ServiceDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(std::string(service));
  if (descriptor == nullptr) {
    return absl::NotFoundError(absl::StrCat("service ", service, " is not in the descriptor pool"));
  }
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < descriptor->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* method = descriptor->method(i);
    ForMethodLocked(descriptor->full_name(), method->name(), TypeOf(*method));
  }
  return absl::OkStatus();
}

GrpcServerMetrics::Method& GrpcServerMetrics::ForMethod(absl::string_view full_method,
                                                        RpcType type) {
  auto [service, method] = SplitMethod(full_method);
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(methods_.size()) >= kMaxMethods &&
      !methods_.contains(absl::StrCat(service, "/", method))) {
    service = method = "unknown";
  }
  return ForMethodLocked(service, method, type);
}

GrpcServerMetrics::Method& GrpcServerMetrics::ForMethodLocked(absl::string_view service,
                                                              absl::string_view method,
                                                              RpcType type) {
  std::unique_ptr<Method>& entry = methods_[absl::StrCat(service, "/", method)];
  if (entry != nullptr) return *entry;
  entry = std::make_unique<Method>();
  // gRPC hands a call to a method the server does not serve (grpc.health.v1.Health/Check sent to
  // the API port) to its generic handler, which names no method and whose type is bidi_stream
  // whatever the call was: the series of such calls (and of methods past kMaxMethods) says
  // "unknown" for the type too.
  const absl::string_view type_name = service == "unknown" ? "unknown" : GrpcTypeName(type);
  const prometheus::Labels labels = {{"grpc_type", std::string(type_name)},
                                     {"grpc_service", std::string(service)},
                                     {"grpc_method", std::string(method)}};
  entry->started = &started_.Add(labels);
  entry->received = &received_.Add(labels);
  entry->sent = &sent_.Add(labels);
  entry->handling = &handling_.Add(labels, HandlingBuckets());
  for (int code = 0; code < static_cast<int>(entry->handled.size()); ++code) {
    prometheus::Labels with_code = labels;
    with_code["grpc_code"] = std::string(GrpcCodeName(static_cast<grpc::StatusCode>(code)));
    entry->handled[code] = &handled_.Add(with_code);
  }
  return *entry;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
GrpcServerMetrics::NewInterceptorFactory() {
  return std::make_unique<MetricsInterceptorFactory>(*this);
}

}  // namespace distarray::metrics
