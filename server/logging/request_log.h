// The call a thread is serving, for the logs: every line logged while a handler runs on this
// thread carries its request id, method, peer and tenant (in --log_format=json; the text format
// prints the request id). gRPC's synchronous server runs each call on one thread from start to
// end, so a thread-local scope is exact for everything the handler logs itself; work handed to
// device threads logs without it.
#ifndef DISTARRAY_SERVER_LOGGING_REQUEST_LOG_H_
#define DISTARRAY_SERVER_LOGGING_REQUEST_LOG_H_

#include <string>

#include <grpcpp/server_context.h>

#include "absl/strings/string_view.h"

namespace distarray {

// Metadata a client may send to name its request in our logs (e.g. to follow one request across
// services); otherwise the daemon makes one up.
inline constexpr char kRequestIdKey[] = "x-request-id";

struct RequestLogContext {
  std::string request_id;
  std::string method;
  std::string peer;    // gRPC's peer string, e.g. "ipv4:127.0.0.1:53210"
  std::string tenant;  // empty until the caller is authenticated
};

// The context of the call this thread serves, or nullptr.
const RequestLogContext* CurrentRequestLog();

// Sets the tenant of the call this thread serves (no-op outside a call). Called once the caller
// is authenticated.
void SetRequestLogTenant(absl::string_view tenant);

// Builds the context of a call: the client's x-request-id when it is 1 to 64 printable ASCII
// characters, else a new id unique within this process's life.
RequestLogContext MakeRequestLogContext(absl::string_view method,
                                        const grpc::ServerContext& context);

// Makes `context` the current thread's for its lifetime.
class ScopedRequestLog {
 public:
  explicit ScopedRequestLog(RequestLogContext* context);
  ~ScopedRequestLog();
  ScopedRequestLog(const ScopedRequestLog&) = delete;
  ScopedRequestLog& operator=(const ScopedRequestLog&) = delete;

 private:
  RequestLogContext* previous_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_LOGGING_REQUEST_LOG_H_
