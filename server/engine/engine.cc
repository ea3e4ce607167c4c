#include "server/engine/engine.h"
#include "absl/strings/string_view.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include <spdlog/spdlog.h>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "common/proto_convert.h"
#include "common/scalar_check.h"
#include "common/status_macros.h"
#include "server/backend/memory_ledger.h"
#include "server/backend/unreachable_node.h"
#include "server/engine/upload_session.h"
#include "server/ops/fill.h"
#include "server/ops/layout.h"
#include "server/ops/op_table.h"

#ifndef DISTARRAY_VERSION
#define DISTARRAY_VERSION "dev"
#endif

namespace distarray {
namespace {

// The largest ArrayInfo (in serialized bytes) an index map may produce, so every unary response
// that carries one stays well under gRPC's default 4 MiB receive limit.
constexpr int64_t kMaxArrayInfoBytes = int64_t{3} << 20;

}  // namespace

Engine::Engine(std::unique_ptr<Backend> backend, EngineOptions options)
    : backend_(std::move(backend)),
      options_(options),
      registry_(options.tenant_quotas),
      sessions_(options.session_lease,
                SessionLimits{SessionLimits::kDefaultMaxSessions, options.max_sessions_per_tenant}),
      programs_(options.programs.max_registered_programs, options.programs.tenant_program_bytes),
      runner_(std::make_unique<ProgramRunner>(*backend_, options.programs, options.use_graphs,
                                              registry_.shared_tenant_memory())) {
  // Cached graphs hold device memory and their tenants' quotas while idle: any allocation a
  // device refuses gives them up first (all of them, least recently used or not), and a tenant
  // at its quota gives up its own.
  SetMemoryReclaimer(backend_.get(), [this] {
    const int dropped = runner_->ClearCache();
    if (dropped > 0) {
      spdlog::info("RunGraph: dropped {} cached graph(s) to free device memory", dropped);
    }
    return dropped > 0;
  });
  registry_.tenant_memory().set_reclaimer(
      [this](const std::string& tenant) { return runner_->EvictTenant(tenant) > 0; });
}

absl::StatusOr<IndexMap> Engine::NormalizeMap(const v1::IndexMap& map, const Shape& shape,
                                              absl::string_view field) const {
  // A zero-size array's map may be empty: it normalizes to no chunks either way.
  if (map.chunks_size() == 0 && NumElements(shape) > 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": at least one chunk is required"));
  }
  ASSIGN_OR_RETURN(IndexMap normalized, NormalizeIndexMap(map, shape, backend_->device_count(),
                                                          field, options_.max_chunks));
  const int64_t info_bytes = static_cast<int64_t>(ToProto(normalized).ByteSizeLong());
  if (info_bytes > kMaxArrayInfoBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": the normalized index map takes ", info_bytes, " bytes, above the ",
                     kMaxArrayInfoBytes, " an array's description may hold; use fewer chunks"));
  }
  return normalized;
}

// The array a spec describes, with no buffers yet.
absl::StatusOr<Array> Engine::ArrayFromSpec(const v1::ArraySpec& spec, absl::string_view field,
                                            const CallContext& call) const {
  Array array;
  RETURN_IF_ERROR(ValidateName(spec.name(), absl::StrCat(field, ".name")));
  ASSIGN_OR_RETURN(array.dtype, DTypeFromProto(spec.dtype(), absl::StrCat(field, ".dtype")));
  array.shape = FromProto(spec.shape());
  RETURN_IF_ERROR(ValidateShape(array.shape, array.dtype, absl::StrCat(field, ".shape")));
  ASSIGN_OR_RETURN(array.mode, ModeFromProto(spec.mode(), absl::StrCat(field, ".mode")));
  ASSIGN_OR_RETURN(IndexMap map,
                   NormalizeMap(spec.index_map(), array.shape, absl::StrCat(field, ".index_map")));
  for (ChunkSpec& c : map) array.chunks.push_back(Chunk{std::move(c), nullptr});
  array.name = spec.name();
  array.tenant = call.tenant;
  if (array.name.empty()) array.session = call.session_key();
  return array;
}

Engine::~Engine() {
  // Finish in-flight work before the registry's buffers are released into a stopping backend.
  backend_->Synchronize().IgnoreError();
  SetMemoryReclaimer(backend_.get(), nullptr);
  registry_.tenant_memory().set_reclaimer(nullptr);
}

namespace {

// "a, b, c and 5 more": at most `kMostNamed` arrays by name, then how many more.
class NamedArrays {
 public:
  void Add(const Array& array) {
    if (++count_ > kMostNamed) return;
    names_.push_back(array.name.empty() ? array.handle
                                        : absl::StrCat("'", array.name, "' (", array.handle, ")"));
  }
  bool empty() const { return count_ == 0; }
  std::string ToString() const {
    return absl::StrCat(
        absl::StrJoin(names_, ", "),
        count_ > kMostNamed ? absl::StrCat(" and ", count_ - kMostNamed, " more") : "");
  }

 private:
  static constexpr size_t kMostNamed = 8;
  std::vector<std::string> names_;
  size_t count_ = 0;
};

}  // namespace

absl::Status Engine::NameLostArrays(const absl::Status& status, absl::string_view tenant) const {
  if (!absl::IsUnavailable(status)) return status;
  // Arrays with chunks the backend has written off (their node found lost), and, before the
  // heartbeats have decided, arrays with chunks on the node this call could not reach.
  const std::optional<int> unreachable = UnreachableNode(status);
  NamedArrays gone, on_unreachable;
  for (const ArrayPtr& array :
       registry_.ListAfter(tenant, "", std::numeric_limits<size_t>::max())) {
    bool written_off = false, reached = false;
    for (const Chunk& chunk : array->chunks) {
      if (chunk.buffer == nullptr) continue;
      written_off = written_off || !backend_->BufferStatus(*chunk.buffer).ok();
      reached = reached || (unreachable.has_value() &&
                            backend_->device_node(chunk.spec.device) == *unreachable);
    }
    if (written_off) {
      gone.Add(*array);
    } else if (reached) {
      on_unreachable.Add(*array);
    }
  }
  if (gone.empty() && on_unreachable.empty()) return status;
  std::string message(status.message());
  if (!gone.empty()) {
    absl::StrAppend(&message, "; your arrays with chunks that are gone: ", gone.ToString(),
                    " (delete them and upload again)");
  }
  if (!on_unreachable.empty()) {
    absl::StrAppend(&message, "; your arrays with chunks on node ", *unreachable, ": ",
                    on_unreachable.ToString(),
                    " (gone if the node does not answer within the cluster's lost-after time)");
  }
  absl::Status named(status.code(), message);
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { named.SetPayload(url, payload); });
  return named;
}

v1::GetServerInfoResponse Engine::ServerInfo() const {
  v1::GetServerInfoResponse info;
  info.set_backend(std::string(backend_->name()));
  info.set_version(DISTARRAY_VERSION);
  for (int d = 0; d < backend_->device_count(); ++d) {
    const DeviceMemory m = backend_->memory(d);
    v1::DeviceInfo* device = info.add_devices();
    device->set_id(d);
    device->set_name(m.name);
    device->set_memory_used_bytes(m.used_bytes);
    device->set_memory_limit_bytes(m.limit_bytes);
    device->set_memory_total_bytes(m.total_bytes);
    device->set_node(backend_->device_node(d));
  }
  info.set_cluster_size(backend_->node_count());
  for (int t = 1; t <= kMaxDType; ++t) {
    if (IsImplemented(static_cast<DType>(t)))
      info.add_implemented_dtypes(static_cast<v1::DType>(t));
  }
  for (const char* feature : {"create", "upload", "download", "reshard", "change_mode", "run_graph",
                              "register_program"}) {
    info.add_features(feature);
  }
  for (const std::string& feature : ComputeFeatures()) info.add_features(feature);
  info.set_array_count(static_cast<int64_t>(registry_.size()));
  info.set_live_sessions(sessions_.Live());
  info.set_session_lease_seconds(absl::ToInt64Seconds(options_.session_lease));
  v1::ServerLimits* limits = info.mutable_limits();
  limits->set_max_chunks_per_index_map(options_.max_chunks);
  limits->set_max_name_bytes(kMaxNameBytes);
  limits->set_max_list_page_size(options_.max_list_page_size);
  limits->set_upload_idle_timeout_ms(options_.upload_idle_timeout_ms);
  limits->set_allocation_overhead_bytes(kAllocationOverheadBytes);
  limits->set_max_program_statements(options_.programs.max_statements);
  limits->set_max_program_depth(options_.programs.max_depth);
  limits->set_max_loop_iterations(options_.programs.max_loop_iterations);
  limits->set_max_registered_programs(options_.programs.max_registered_programs);
  limits->set_max_value_output_bytes(options_.programs.max_value_output_bytes);
  const GraphCacheCounters cache = runner_->counters();
  v1::GraphCacheStats* graphs = info.mutable_graph_cache();
  graphs->set_entries(cache.entries);
  graphs->set_hits(cache.hits);
  graphs->set_misses(cache.misses);
  graphs->set_registered_programs(programs_.size());
  return info;
}

absl::Status Engine::TouchSession(const CallContext& call) {
  if (call.session.empty()) return absl::OkStatus();
  return sessions_.Touch(call.tenant, call.session_key());
}

v1::KeepAliveResponse Engine::KeepAlive(const CallContext& call) {
  TouchSession(call).IgnoreError();  // the call itself was admitted by the service
  v1::KeepAliveResponse response;
  response.set_lease_seconds(absl::ToInt64Seconds(options_.session_lease));
  if (!call.session.empty()) {
    response.set_session_arrays(registry_.SessionArrayCount(call.session_key()));
  }
  return response;
}

v1::EndSessionResponse Engine::EndSession(const CallContext& call) {
  v1::EndSessionResponse response;
  if (call.session.empty()) return response;
  const std::string key = call.session_key();
  // Forgotten first: a sweep running meanwhile finds nothing of it left to expire.
  const bool live = sessions_.End(key);
  response.set_deleted_arrays(registry_.EraseSession(key));
  spdlog::debug("session {} ended by its client{}; deleted its {} unnamed arrays",
                QuoteClientString(call.session), live ? "" : " (it had expired or never called)",
                response.deleted_arrays());
  // What else the session held (its shared-memory segments) goes with it, as at expiry.
  absl::MutexLock lock(&session_end_mu_);
  if (session_end_listener_) session_end_listener_(key);
  return response;
}

int64_t Engine::SweepExpiredSessions() {
  int64_t deleted = 0;
  for (const std::string& session : sessions_.TakeExpired()) {
    const int64_t n = registry_.EraseSession(session);
    deleted += n;
    // The session id is the client's string: quoted and bounded like any other.
    spdlog::info("session {} expired after {} s without a call; deleted its {} unnamed arrays",
                 QuoteClientString(session), absl::ToInt64Seconds(options_.session_lease), n);
    absl::MutexLock lock(&session_end_mu_);
    if (session_end_listener_) session_end_listener_(session);
  }
  return deleted;
}

absl::StatusOr<ArrayPtr> Engine::Register(Array array, bool in_place, const CallContext& call) {
  // The last point where an abandoned call can still leave no trace: its buffers go with `array`.
  RETURN_IF_ERROR(call.CheckAlive());
  if (in_place) return registry_.Replace(std::move(array));
  const bool owned = !array.session.empty();
  const std::string session = array.session;
  const std::string tenant = array.tenant;
  ASSIGN_OR_RETURN(ArrayPtr stored, registry_.Insert(std::move(array)));
  if (call.results != nullptr) {
    absl::MutexLock lock(&call.results->mu);
    call.results->arrays.push_back(stored->handle);
  }
  // Renew the owner, so a sweep that ran while this call worked does not leave the array with a
  // session that will never expire again.
  if (owned) sessions_.Touch(tenant, session).IgnoreError();
  return stored;
}

absl::StatusOr<ArrayPtr> Engine::Create(const v1::CreateArrayRequest& request,
                                        const CallContext& call) {
  ASSIGN_OR_RETURN(Array array, ArrayFromSpec(request.spec(), "spec", call));
  RETURN_IF_ERROR(ValidateFill(request.fill(), array.dtype, array.shape));
  RETURN_IF_ERROR(registry_.CheckNameFree(call.tenant, array.name, "spec.name"));
  RETURN_IF_ERROR(registry_.tenant_memory().CheckFits(call.tenant, ChargesOf(array)));
  RETURN_IF_ERROR(call.CheckAlive());
  ASSIGN_OR_RETURN(array.chunks, AllocateChunks(*backend_, array.dtype, array.index_map()));
  RETURN_IF_ERROR(LaunchFill(*backend_, array, request.fill(), call.alive));
  RETURN_IF_ERROR(ApplyOwnershipMask(*backend_, array.dtype, array.mode, array.chunks, call.alive));
  return Register(std::move(array), /*in_place=*/false, call);
}

absl::StatusOr<ArrayPtr> Engine::Describe(absl::string_view handle, const CallContext& call) const {
  return registry_.Find(call.tenant, handle, "handle");
}

std::vector<ArrayPtr> Engine::List() const { return registry_.List(); }

absl::StatusOr<Engine::Page> Engine::ListPage(int page_size, absl::string_view page_token,
                                              const CallContext& call) const {
  if (page_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("page_size: must be >= 0, got ", page_size));
  }
  // The token is the last handle of the previous page; it need not still exist.
  if (!page_token.empty() && !LooksLikeHandle(page_token)) {
    return absl::InvalidArgumentError(absl::StrCat("page_token: ", QuoteClientString(page_token),
                                                   " is not a token this server gave"));
  }
  if (page_size == 0) page_size = options_.default_list_page_size;
  page_size = std::min(page_size, options_.max_list_page_size);
  Page page;
  page.arrays = registry_.ListAfter(call.tenant, page_token, static_cast<size_t>(page_size) + 1);
  page.more = page.arrays.size() > static_cast<size_t>(page_size);
  if (page.more) page.arrays.pop_back();
  return page;
}

absl::Status Engine::Delete(absl::string_view handle, const CallContext& call) {
  return registry_.Erase(call.tenant, handle, "handle");
}

absl::Status Engine::Synchronize(const v1::SynchronizeRequest& request, const CallContext& call) {
  for (int i = 0; i < request.handles_size(); ++i) {
    RETURN_IF_ERROR(
        registry_.Find(call.tenant, request.handles(i), absl::StrCat("handles[", i, "]")).status());
  }
  return backend_->Synchronize();
}

absl::StatusOr<std::unique_ptr<UploadSession>> Engine::BeginUpload(const v1::UploadHeader& header,
                                                                   const CallContext& call) {
  switch (header.target_case()) {
    case v1::UploadHeader::kNewArray: {
      ASSIGN_OR_RETURN(Array array, ArrayFromSpec(header.new_array(), "header.new_array", call));
      if (header.region().slices_size() > 0) {
        return absl::InvalidArgumentError(
            "header.region: a new array is uploaded whole; give a region only with a handle");
      }
      RETURN_IF_ERROR(registry_.CheckNameFree(call.tenant, array.name, "header.new_array.name"));
      RETURN_IF_ERROR(registry_.tenant_memory().CheckFits(call.tenant, ChargesOf(array)));
      ASSIGN_OR_RETURN(array.chunks, AllocateChunks(*backend_, array.dtype, array.index_map()));
      const Box region = FullBox(array.shape);
      return std::make_unique<UploadSession>(*this, std::move(array),
                                             UploadSession::Target::kNewArray, region);
    }
    case v1::UploadHeader::kHandle: {
      ASSIGN_OR_RETURN(ArrayPtr target,
                       registry_.Find(call.tenant, header.handle(), "header.handle"));
      if (target->mode != Mode::kReplica) {
        return absl::FailedPreconditionError(absl::StrCat(
            "header.handle: array ", target->handle, " is in mode ", ModeName(target->mode),
            "; uploads overwrite REPLICA arrays only (change its mode first)"));
      }
      ASSIGN_OR_RETURN(RegionSelection region,
                       NormalizeRegionSelection(header.region(), target->shape, "header.region"));
      // An array holding buffers another array also holds (SourceBuffers in layout.h) is
      // written in a copy of its own, which replaces it when the upload finishes.
      const bool shared =
          absl::c_any_of(target->chunks, [](const Chunk& chunk) { return chunk.buffer->shared(); });
      if (!shared) {
        return std::make_unique<UploadSession>(*this, *target, UploadSession::Target::kInPlace,
                                               std::move(region));
      }
      Array copy = *target;
      ASSIGN_OR_RETURN(copy.chunks,
                       Relayout(*backend_, *target, target->index_map(), target->mode, call.alive));
      return std::make_unique<UploadSession>(
          *this, std::move(copy), UploadSession::Target::kCopyOnWrite, std::move(region));
    }
    default:
      return absl::InvalidArgumentError("header: give new_array or handle");
  }
}

}  // namespace distarray
