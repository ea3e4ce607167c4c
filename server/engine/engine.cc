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
#include "common/names.h"
#include "common/proto_convert.h"
#include "common/scalar_check.h"
#include "common/status_macros.h"
#include "server/backend/memory_ledger.h"
#include "server/engine/upload_session.h"
#include "server/ops/layout.h"
#include "server/ops/op_table.h"

#ifndef DISTARRAY_VERSION
#define DISTARRAY_VERSION "dev"
#endif

namespace distarray {
namespace {

// Whether converting the double `v` to `dtype` is defined: integers truncate toward zero, so the
// truncated value must lie in [lowest, max + 1); float32 needs |v| <= FLT_MAX, and a 16-bit float
// a value that does not round to infinity (float16: |v| < 65520).
bool FitsAfterConversion(double v, DType dtype) {
  if (dtype == DType::kBool) return true;
  if (dtype == DType::kFloat64) return std::isfinite(v);
  if (dtype == DType::kFloat32) return std::fabs(v) <= std::numeric_limits<float>::max();
  if (dtype == DType::kFloat16) return std::isfinite(v) && std::isfinite(float{Float16(v)});
  if (dtype == DType::kBFloat16) return std::isfinite(v) && std::isfinite(float{BFloat16(v)});
  return DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      const double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
      const double max_plus_one = (static_cast<double>(std::numeric_limits<T>::max() / 2) + 1) * 2;
      const double truncated = std::trunc(v);
      return truncated >= lowest && truncated < max_plus_one;
    } else {
      return std::isfinite(v);
    }
  });
}

absl::Status ValidateFill(const v1::Fill& fill, DType dtype, const Shape& shape) {
  const int64_t num_elements = NumElements(shape);
  // A complex fill's generated values are real parts (uniform draws both parts from the same
  // range), so they must fit the real part's dtype; a full value may be complex itself.
  if (IsComplex(dtype) && !fill.has_full()) {
    return ValidateFill(fill, RealPartDType(dtype), shape);
  }
  switch (fill.kind_case()) {
    case v1::Fill::kFull: {
      ASSIGN_OR_RETURN(Scalar value, ScalarFromProto(fill.full().value(), "fill.full.value"));
      return ValidateScalarFor(value, dtype, "fill.full.value");
    }
    case v1::Fill::kArange: {
      const double start = fill.arange().start(), step = fill.arange().step();
      if (!std::isfinite(start) || !std::isfinite(step)) {
        return absl::InvalidArgumentError("fill.arange: start and step must be finite");
      }
      // A zero-size array generates no value to check.
      if (num_elements == 0) return absl::OkStatus();
      // The values run monotonically from the first to the last, so both ends in the dtype's
      // range means every value is (a conversion from out of range is undefined behaviour).
      const double last = start + step * static_cast<double>(num_elements - 1);
      for (const double v : {start, last}) {
        if (!FitsAfterConversion(v, dtype)) {
          return absl::InvalidArgumentError(absl::StrCat("fill.arange: value ", v, " (start ",
                                                         start, ", step ", step, ") is outside ",
                                                         DTypeName(dtype)));
        }
      }
      return absl::OkStatus();
    }
    case v1::Fill::kUniform: {
      const auto& u = fill.uniform();
      if (!std::isfinite(u.low()) || !std::isfinite(u.high()) || !(u.low() < u.high())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fill.uniform: need finite low < high, got [", u.low(), ", ", u.high(), ")"));
      }
      if (IsFloating(dtype) &&
          !(FitsAfterConversion(u.low(), dtype) && FitsAfterConversion(u.high(), dtype))) {
        return absl::InvalidArgumentError(absl::StrCat("fill.uniform: [", u.low(), ", ", u.high(),
                                                       ") is outside ", DTypeName(dtype)));
      }
      if (dtype != DType::kBool && !IsFloating(dtype)) {
        RETURN_IF_ERROR(
            ValidateScalarFor(Scalar::Float(std::floor(u.low())), dtype, "fill.uniform.low"));
        RETURN_IF_ERROR(
            ValidateScalarFor(Scalar::Float(std::ceil(u.high()) - 1), dtype, "fill.uniform.high"));
      }
      return absl::OkStatus();
    }
    case v1::Fill::kNormal: {
      const auto& n = fill.normal();
      if (!IsFloating(dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fill.normal: normal draws need a floating dtype, not ", DTypeName(dtype)));
      }
      if (!std::isfinite(n.mean()) || !std::isfinite(n.stddev()) || n.stddev() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("fill.normal: need a finite mean and a finite stddev >= 0, got mean ",
                         n.mean(), ", stddev ", n.stddev()));
      }
      return absl::OkStatus();
    }
    case v1::Fill::kIntegers: {
      const auto& n = fill.integers();
      if (dtype == DType::kBool || IsFloating(dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fill.integers: integer draws need an integer dtype, not ", DTypeName(dtype)));
      }
      if (!(n.low() < n.high())) {
        return absl::InvalidArgumentError(
            absl::StrCat("fill.integers: need low < high, got [", n.low(), ", ", n.high(), ")"));
      }
      RETURN_IF_ERROR(ValidateScalarFor(Scalar::Int(n.low()), dtype, "fill.integers.low"));
      return ValidateScalarFor(Scalar::Int(n.high() - 1), dtype, "fill.integers.high");
    }
    case v1::Fill::kLinspace: {
      const auto& l = fill.linspace();
      if (!std::isfinite(l.start()) || !std::isfinite(l.stop())) {
        return absl::InvalidArgumentError("fill.linspace: start and stop must be finite");
      }
      for (const double v : {l.start(), l.stop()}) {
        if (!FitsAfterConversion(v, dtype)) {
          return absl::InvalidArgumentError(
              absl::StrCat("fill.linspace: value ", v, " is outside ", DTypeName(dtype)));
        }
      }
      return absl::OkStatus();
    }
    case v1::Fill::kEye:
    case v1::Fill::kTri:
      if (shape.size() < 2) {
        return absl::InvalidArgumentError(
            absl::StrCat("fill.", fill.has_eye() ? "eye" : "tri",
                         ": needs an array of rank 2 or more (it marks a diagonal of the last two "
                         "axes); the shape is ",
                         shape.size() == 1 ? "1-d" : "0-d"));
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();  // zeros, ones, or unset (zeros)
  }
}

// The generator of a generated fill (arange, the random draws, linspace, eye, tri) for an array
// of `shape`; nullopt for constant fills.
std::optional<Generator> GeneratorFor(const v1::Fill& fill, const Shape& shape) {
  Generator g;
  switch (fill.kind_case()) {
    case v1::Fill::kArange:
      g.start = fill.arange().start();
      g.step = fill.arange().step();
      return g;
    case v1::Fill::kUniform:
      g.kind = Generator::Kind::kUniform;
      g.low = fill.uniform().low();
      g.high = fill.uniform().high();
      g.seed = fill.uniform().seed();
      return g;
    case v1::Fill::kNormal:
      g.kind = Generator::Kind::kNormal;
      g.low = fill.normal().mean();
      g.high = fill.normal().stddev();
      g.seed = fill.normal().seed();
      return g;
    case v1::Fill::kIntegers:
      g.kind = Generator::Kind::kIntegers;
      g.integer_low = fill.integers().low();
      g.integer_span = static_cast<uint64_t>(fill.integers().high()) -
                       static_cast<uint64_t>(fill.integers().low());
      g.seed = fill.integers().seed();
      return g;
    case v1::Fill::kLinspace: {
      // As numpy.linspace: step = delta / div, values start + i * step, the last exactly stop.
      const int64_t n = NumElements(shape);
      const int64_t div = fill.linspace().endpoint() ? n - 1 : n;
      g.kind = Generator::Kind::kLinspace;
      g.start = fill.linspace().start();
      g.stop = fill.linspace().stop();
      g.step = div > 0 ? (g.stop - g.start) / static_cast<double>(div) : 0;
      g.last_index = fill.linspace().endpoint() && n > 1 ? n - 1 : -1;
      return g;
    }
    case v1::Fill::kEye:
    case v1::Fill::kTri:
      g.kind = fill.has_eye() ? Generator::Kind::kEye : Generator::Kind::kTri;
      g.rows = shape[shape.size() - 2];
      g.cols = shape.back();
      g.diagonal = fill.has_eye() ? fill.eye().k() : fill.tri().k();
      return g;
    default:
      return std::nullopt;
  }
}

absl::Status LaunchFill(Backend& backend, const Array& array, const v1::Fill& fill,
                        const CallContext& call) {
  for (const Chunk& chunk : array.chunks) {
    RETURN_IF_ERROR(call.CheckAlive());  // a fill of many chunks is long CPU work
    const Shape shape = BoxShape(chunk.spec.box);
    if (const std::optional<Generator> g = GeneratorFor(fill, array.shape)) {
      RETURN_IF_ERROR(
          backend.FillGenerated(array.dtype, chunk.buffer, array.shape, chunk.spec.box, *g));
      continue;
    }
    Scalar value = Scalar::Int(fill.has_ones() ? 1 : 0);
    if (fill.has_full()) {
      ASSIGN_OR_RETURN(value, ScalarFromProto(fill.full().value(), ""));
    }
    RETURN_IF_ERROR(
        backend.FillConstant(array.dtype, BufferBox{chunk.buffer, shape, FullBox(shape)}, value));
  }
  return absl::OkStatus();
}

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
  }
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
  RETURN_IF_ERROR(LaunchFill(*backend_, array, request.fill(), call));
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
