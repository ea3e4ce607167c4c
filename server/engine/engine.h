// The engine: validates requests against live arrays, plans and launches device work through the
// backend, and keeps the registry. It takes distarray.v1 request messages (it is the use-case
// layer; the gRPC service above it only adapts transport and status codes) and never knows
// which backend runs it.
#ifndef DISTARRAY_SERVER_ENGINE_ENGINE_H_
#define DISTARRAY_SERVER_ENGINE_ENGINE_H_

#include <functional>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/backend.h"
#include "server/engine/array.h"
#include "server/engine/registry.h"

namespace distarray {

class UploadSession;

class Engine {
 public:
  explicit Engine(std::unique_ptr<Backend> backend);
  ~Engine();

  Backend& backend() { return *backend_; }
  const Registry& registry() const { return registry_; }

  v1::GetServerInfoResponse ServerInfo() const;

  // Every call below validates fully before allocating, and allocates everything before
  // launching, so a failed request leaves no trace. Compute is asynchronous: the returned array's
  // buffers may still be being written.
  absl::StatusOr<ArrayPtr> Create(const v1::CreateArrayRequest& request);
  absl::StatusOr<ArrayPtr> Describe(absl::string_view handle) const;
  std::vector<ArrayPtr> List() const;
  absl::Status Delete(absl::string_view handle);
  absl::StatusOr<ArrayPtr> Reshard(const v1::ReshardRequest& request);
  absl::StatusOr<ArrayPtr> ChangeMode(const v1::ChangeModeRequest& request);
  absl::StatusOr<ArrayPtr> Elementwise(const v1::ElementwiseRequest& request);
  // Waits for all enqueued work on every device; the handles are only validated (NOT_FOUND for
  // unknown ones). Waiting for everything is a superset of waiting for the named arrays.
  absl::Status Synchronize(const v1::SynchronizeRequest& request);

  // Starts an upload; the session takes the data pieces. Validation and allocation happen here,
  // so a bad header or an array over the memory limit fails before any byte is sent.
  absl::StatusOr<std::unique_ptr<UploadSession>> BeginUpload(const v1::UploadHeader& header);

  // Streams the logical values of a region: `emit(shape, dtype, bytes)` is called with
  // consecutive pieces of at most max_message_bytes; it returns false to stop (client gone).
  // Reading the next piece from the devices overlaps emitting the current one.
  using EmitFn = std::function<bool(const Shape& shape, DType dtype, absl::string_view bytes)>;
  absl::Status Download(const v1::DownloadArrayRequest& request, const EmitFn& emit);

 private:
  friend class UploadSession;
  absl::StatusOr<ArrayPtr> Register(Array array, bool in_place);

  std::unique_ptr<Backend> backend_;
  Registry registry_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_ENGINE_H_
