#include "server/logging/request_log.h"

#include <atomic>
#include <chrono>
#include <cstdint>

#include "absl/strings/str_format.h"

namespace distarray {
namespace {

thread_local RequestLogContext* current = nullptr;

constexpr size_t kMaxClientRequestIdBytes = 64;

bool IsPrintableId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxClientRequestIdBytes) return false;
  for (char c : id) {
    if (c < 0x21 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

// A per-process prefix (from the start time) and a counter: unique within a process's life, and
// unlikely to repeat across restarts of the same daemon.
std::string NewRequestId() {
  static const uint32_t prefix =
      static_cast<uint32_t>(std::chrono::system_clock::now().time_since_epoch().count() ^
                            (std::chrono::steady_clock::now().time_since_epoch().count() << 7));
  static std::atomic<uint64_t> counter{0};
  return absl::StrFormat("%08x-%d", prefix, counter.fetch_add(1, std::memory_order_relaxed) + 1);
}

}  // namespace

const RequestLogContext* CurrentRequestLog() { return current; }

void SetRequestLogTenant(absl::string_view tenant) {
  if (current != nullptr) current->tenant = std::string(tenant);
}

RequestLogContext MakeRequestLogContext(absl::string_view method,
                                        const grpc::ServerContext& context) {
  RequestLogContext log;
  const auto& metadata = context.client_metadata();
  if (auto it = metadata.find(kRequestIdKey); it != metadata.end()) {
    const absl::string_view id(it->second.data(), it->second.size());
    if (IsPrintableId(id)) log.request_id = std::string(id);
  }
  if (log.request_id.empty()) log.request_id = NewRequestId();
  log.method = std::string(method);
  log.peer = context.peer();
  return log;
}

ScopedRequestLog::ScopedRequestLog(RequestLogContext* context) : previous_(current) {
  current = context;
}

ScopedRequestLog::~ScopedRequestLog() { current = previous_; }

}  // namespace distarray
