#include "server/service/array_service.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>

#include <google/protobuf/descriptor.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/box.h"
#include "common/dtype.h"
#include "common/names.h"
#include "common/proto_convert.h"
#include "common/status_macros.h"
#include "server/backend/call_bound.h"
#include "server/engine/upload_session.h"
#include "server/logging/request_log.h"
#include "server/service/array_info.h"
#include "server/service/download_message.h"
#include "server/service/status_conversion.h"

namespace distarray {
namespace {

// A steady_clock time as nanoseconds of the host's monotonic clock (on Linux, CLOCK_MONOTONIC).
int64_t MonotonicNanos(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The call metadata key that names the client's session (see the proto's Sessions section).
constexpr char kSessionKey[] = "distarray-session";
constexpr size_t kMaxSessionIdBytes = 128;
// A ListArrays page stops growing once it would pass this many bytes (it always holds at least
// one array, and one ArrayInfo is at most 3 MiB), so a page stays under gRPC's default 4 MiB.
constexpr size_t kMaxListPageBytes = size_t{1} << 20;

absl::StatusOr<std::string> SessionOf(const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kSessionKey);
  if (it == metadata.end()) return std::string();
  const absl::string_view id(it->second.data(), it->second.size());
  if (id.empty() || id.size() > kMaxSessionIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("metadata ", kSessionKey, ": 1 to ",
                                                   kMaxSessionIdBytes, " bytes, got ", id.size()));
  }
  return std::string(id);
}

// Whether a call's client cancelled it, probed at most once per kCancelProbeInterval. gRPC's
// synchronous IsCancelled() polls the call's completion queue: about 20 µs a probe, and an
// elementwise RPC checks five times (it measured 87 µs of a 120 µs call on a 2-core host). A
// call stops within one interval of its client's cancel; a deadline is checked every time (it is
// a clock read).
class CancelProbe {
 public:
  static constexpr std::chrono::nanoseconds kCancelProbeInterval = std::chrono::milliseconds(1);

  // The first probe comes one interval into the call: a call shorter than that runs to its end.
  CancelProbe() : next_probe_(Now() + kCancelProbeInterval.count()) {}

  bool Cancelled(grpc::ServerContext& context) {
    if (cancelled_.load(std::memory_order_relaxed)) return true;
    const int64_t now = Now();
    int64_t next = next_probe_.load(std::memory_order_relaxed);
    // One caller probes per interval; the others go on.
    if (now < next || !next_probe_.compare_exchange_strong(next, now + kCancelProbeInterval.count(),
                                                           std::memory_order_relaxed)) {
      return false;
    }
    if (!context.IsCancelled()) return false;
    cancelled_.store(true, std::memory_order_relaxed);
    return true;
  }

 private:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::atomic<int64_t> next_probe_;
  std::atomic<bool> cancelled_{false};
};

// OK while the call is wanted. The deadline is checked directly so an expired call answers
// DEADLINE_EXCEEDED rather than the CANCELLED that IsCancelled() alone would suggest.
absl::Status CallAlive(grpc::ServerContext* context, const DrainGate* drain, CancelProbe& probe) {
  if (drain != nullptr) RETURN_IF_ERROR(drain->CheckRunning());
  if (context->deadline() <= std::chrono::system_clock::now()) {
    return absl::DeadlineExceededError("the call's deadline passed; its result was discarded");
  }
  if (probe.Cancelled(*context)) {
    return absl::CancelledError("the client cancelled the call; its result was discarded");
  }
  return absl::OkStatus();
}

// The client's deadline for the call, or the infinite future when it set none.
absl::Time ClientDeadline(const grpc::ServerContext& context) {
  return context.deadline() == std::chrono::system_clock::time_point::max()
             ? absl::InfiniteFuture()
             : absl::FromChrono(context.deadline());
}

// `call` stopped, as at a deadline, once RunGraph has run longer than the daemon allows: the
// default bound when the client set no deadline, the maximum whatever it set. The replay's wait
// polls `alive` and sets the devices' cancel word, so a loop stops on the GPUs too.
CallContext WithRunTimeBound(const CallContext& call, const grpc::ServerContext& context,
                             const EngineOptions& options) {
  const bool client_deadline = ClientDeadline(context) != absl::InfiniteFuture();
  const absl::Duration bound =
      client_deadline ? options.run_graph_max_time : options.run_graph_default_time;
  const char* flag = client_deadline ? "--run_graph_max_seconds" : "--run_graph_default_seconds";
  CallContext bounded = call;
  bounded.alive = [alive = call.alive, until = absl::Now() + bound, bound, flag]() -> absl::Status {
    if (alive) RETURN_IF_ERROR(alive());
    if (absl::Now() >= until) {
      return absl::DeadlineExceededError(
          absl::StrCat("RunGraph ran for the daemon's limit of ", absl::FormatDuration(bound), " (",
                       flag, "); it was stopped and its results discarded"));
    }
    return absl::OkStatus();
  };
  return bounded;
}

// How long the answer to a call that registered something may take to reach its client, after the
// handler returns: gRPC serializes the response then (a 65,536-chunk index map is about 1 MB), and
// it crosses the connection. Generous for a loaded host, so a client whose deadline passes before
// it has the answer is, as far as the daemon can tell, told DEADLINE_EXCEEDED by the daemon too.
// 1 ms + 50 MB/s (31 ms for a 1.5 MB answer) was too little on two cores busy with other tests:
// 2 of 44 creates answered in that window reached their client after its deadline.
constexpr auto kAnswerFloor = std::chrono::milliseconds(2);
constexpr double kAnswerBytesPerSecond = 15e6;

// CallAlive, and for a call whose result was registered also that `response_bytes` of answer can
// still reach the client before its deadline.
absl::Status AnswerInTime(grpc::ServerContext* context, const DrainGate* drain, CancelProbe& probe,
                          size_t response_bytes) {
  RETURN_IF_ERROR(CallAlive(context, drain, probe));
  const auto needed =
      kAnswerFloor + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                         std::chrono::duration<double>(response_bytes / kAnswerBytesPerSecond));
  if (context->deadline() - std::chrono::system_clock::now() < needed) {
    return absl::DeadlineExceededError(
        absl::StrCat("the call's deadline would pass before its answer (", response_bytes,
                     " bytes) could reach the client; its result was discarded"));
  }
  return absl::OkStatus();
}

// The position of DownloadArray among the service's methods, which is how grpc::Service names
// the method whose handler it replaces: the proto's declaration order, as the generated code uses.
int DownloadArrayMethodIndex() {
  const google::protobuf::MethodDescriptor* method =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(
          "distarray.v1.ArrayService.DownloadArray");
  if (method == nullptr) {  // the generated descriptors are linked in; this cannot happen
    spdlog::critical("distarray.v1.ArrayService.DownloadArray is not in the descriptor pool");
    std::abort();
  }
  return method->index();
}

// The bytes of the whole array `handle` names, 0 when it names none: a transfer of part of it
// expects the other parts (TransferLog::Stream::set_whole_bytes). The shape of a registered
// array was checked when it was made, so the product does not overflow.
int64_t WholeBytes(const Engine& engine, absl::string_view handle, const CallContext& call) {
  if (handle.empty()) return 0;
  const absl::StatusOr<ArrayPtr> array = engine.Describe(handle, call);
  if (!array.ok()) return 0;
  return NumElements((*array)->shape) * DTypeSize((*array)->dtype);
}

}  // namespace

ArrayServiceImpl::ArrayServiceImpl(Engine& engine, Metrics& metrics,
                                   SharedMemoryOptions shared_memory)
    : engine_(engine),
      metrics_(metrics),
      upload_watchdog_(absl::Milliseconds(engine.options().upload_idle_timeout_ms),
                       engine.options().upload_min_bytes_per_second),
      shared_memory_(std::move(shared_memory)),
      segments_(shared_memory_.limits) {
  engine_.SetSessionEndListener(
      [this](const std::string& session_key) { segments_.ReleaseSession(session_key); });
  MarkMethodStreamed(
      DownloadArrayMethodIndex(),
      new grpc::internal::SplitServerStreamingHandler<v1::DownloadArrayRequest, grpc::ByteBuffer>(
          [this](grpc::ServerContext* context, DownloadStream* stream) {
            return StreamedDownloadArray(context, stream);
          }));
}

ArrayServiceImpl::~ArrayServiceImpl() { engine_.SetSessionEndListener(nullptr); }

template <typename Body>
grpc::Status ArrayServiceImpl::Handle(absl::string_view method, grpc::ServerContext* context,
                                      Body&& body, SessionUse use) {
  return Handle(method, context, nullptr, std::forward<Body>(body), use);
}

template <typename Body>
grpc::Status ArrayServiceImpl::Handle(absl::string_view method, grpc::ServerContext* context,
                                      const google::protobuf::Message* response, Body&& body,
                                      SessionUse use) {
  const auto start = std::chrono::steady_clock::now();
  const DrainGate::CallScope in_flight(drain_gate_);
  RequestLogContext log_context = MakeRequestLogContext(method, *context);
  ScopedRequestLog log_scope(&log_context);
  absl::Status status;
  absl::StatusOr<std::string> tenant = authenticator_ != nullptr
                                           ? authenticator_->TenantOf(context->client_metadata())
                                           : std::string(kDefaultTenant);
  absl::StatusOr<std::string> session = SessionOf(*context);
  if (drain_gate_ != nullptr && !drain_gate_->Admit().ok()) {
    status = drain_gate_->Admit();  // shutting down: the client retries elsewhere
  } else if (!tenant.ok()) {
    status = tenant.status();  // before anything else: an unknown caller learns nothing
  } else if (!session.ok()) {
    status = session.status();
  } else {
    SetRequestLogTenant(*tenant);
    // Before any work: a tenant at its bound holds this thread only for the refusal.
    absl::StatusOr<TenantCallSlots::Slot> slot =
        method == "KeepAlive" ? TenantCallSlots::Slot() : call_slots_->Acquire(*tenant);
    if (!slot.ok()) {
      status = slot.status();
    } else {
      auto probe = std::make_shared<CancelProbe>();
      CallContext call{*std::move(session),
                       [this, context, probe] { return CallAlive(context, drain_gate_, *probe); }};
      // Waits outside the process on the call's behalf (a cluster member) end with it.
      const ScopedCallBound bound(ClientDeadline(*context), call.alive);
      call.tenant = *std::move(tenant);
      call.results = std::make_shared<CallResults>();
      const bool renew = use == SessionUse::kRenew;
      status = renew ? engine_.TouchSession(call) : absl::OkStatus();
      if (status.ok()) {
        status = engine_.NameLostArrays(body(call), call.tenant);
        if (status.ok() && response != nullptr) {
          status = AnswerInTime(context, drain_gate_, *probe, response->ByteSizeLong());
        }
        if (!status.ok()) TakeBack(call);
        // A long call counts as activity until it ends, not only when it began.
        if (renew) engine_.TouchSession(call).IgnoreError();
      }
    }
  }
  // The drain's refusals (new calls, and running ones cut off when the drain time is spent) are
  // the shutdown working as designed, and clients retry them: not errors. One line per interval
  // counts them; each one is at debug.
  if (DrainGate::IsRefusal(status)) {
    spdlog::debug("{} refused: {}", std::string(method), status.ToString());
    if (const int64_t refused = drain_refusals_.Count(); refused > 0) {
      spdlog::info("draining: refused {} call{} with UNAVAILABLE (the clients retry)", refused,
                   refused == 1 ? "" : "s");
    }
    return ToGrpcStatus(status);
  }
  const auto end = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(end - start).count();
  switch (status.code()) {
    case absl::StatusCode::kOk:
      // With the handler's span on the host's monotonic clock, which a client on the same host
      // reads too: bench/loop_bench --trace_calls splits a call's legs with it.
      spdlog::debug("{} ok in {:.3f} ms (monotonic {} to {} ns)", std::string(method),
                    seconds * 1e3, MonotonicNanos(start), MonotonicNanos(end));
      break;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDataLoss:
      spdlog::error("{} failed: {}", std::string(method), status.ToString());
      break;
    default:
      spdlog::info("{} rejected: {}", std::string(method), status.ToString());
  }
  return ToGrpcStatus(status);
}

void ArrayServiceImpl::TakeBack(const CallContext& call) {
  absl::MutexLock lock(&call.results->mu);
  // NOT_FOUND where the engine took a result back itself (RunGraph's all-or-nothing outputs).
  for (const std::string& handle : call.results->arrays) engine_.Delete(handle, call).IgnoreError();
  for (const std::string& id : call.results->programs) {
    v1::DeleteProgramRequest request;
    request.set_program_id(id);
    engine_.DeleteProgram(request, call).IgnoreError();
  }
  call.results->arrays.clear();
  call.results->programs.clear();
}

grpc::Status ArrayServiceImpl::GetServerInfo(grpc::ServerContext* context,
                                             const v1::GetServerInfoRequest*,
                                             v1::GetServerInfoResponse* response) {
  return Handle("GetServerInfo", context, [&](const CallContext&) {
    *response = engine_.ServerInfo();
    response->set_health_port(health_port_);
    if (shared_memory_.enabled && !shared_memory_.host_id.empty()) {
      response->set_host_id(shared_memory_.host_id);
      response->add_features("upload_from_shared_memory");
      response->add_features("download_to_shared_memory");
      response->mutable_limits()->set_max_shared_memory_segments(
          shared_memory_.limits.max_segments_per_tenant);
      response->mutable_limits()->set_max_shared_memory_bytes(
          shared_memory_.limits.max_bytes_per_tenant);
    }
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::CreateArray(grpc::ServerContext* context,
                                           const v1::CreateArrayRequest* request,
                                           v1::CreateArrayResponse* response) {
  return Handle("CreateArray", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Create(*request, call));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::UploadArray(grpc::ServerContext* context,
                                           grpc::ServerReader<v1::UploadArrayRequest>* reader,
                                           v1::UploadArrayResponse* response) {
  return Handle("UploadArray", context, response, [&](const CallContext& call) -> absl::Status {
    // A stream silent for the idle timeout, or slower than the minimum rate, is cancelled: the
    // client sees CANCELLED, and the session's allocation is released when `session` goes out of
    // scope below.
    UploadWatchdog::Watch watch = upload_watchdog_.Start(context, /*check_rate=*/true);
    const auto idle_error = [&] {
      if (watch.too_slow()) {
        return absl::CancelledError(absl::StrCat(
            "the upload sent less than --upload_min_bytes_per_second (",
            engine_.options().upload_min_bytes_per_second, " bytes per second) over ",
            engine_.options().upload_idle_timeout_ms, " ms; the upload was cancelled"));
      }
      return absl::CancelledError(absl::StrCat("no upload message for ",
                                               engine_.options().upload_idle_timeout_ms,
                                               " ms; the upload was cancelled"));
    };
    v1::UploadArrayRequest message;
    if (!reader->Read(&message)) {
      if (watch.timed_out()) return idle_error();
      return absl::InvalidArgumentError("the stream carried no header");
    }
    watch.Touch();
    if (!message.has_header()) {
      return absl::InvalidArgumentError("header: the first message must be the header");
    }
    TransferLog::Stream transfer =
        transfer_log_->Begin("upload", call.tenant, message.header().handle());
    ASSIGN_OR_RETURN(std::unique_ptr<UploadSession> session,
                     engine_.BeginUpload(message.header(), call));
    transfer.set_whole_bytes(WholeBytes(engine_, message.header().handle(), call));
    watch.Touch();
    int64_t received = 0;
    while (reader->Read(&message)) {
      watch.Touch();
      if (message.has_header()) {
        return absl::InvalidArgumentError("header: only the first message may be a header");
      }
      received += message.data().size();
      watch.Received(static_cast<int64_t>(message.data().size()));
      transfer.Add(message.data().size());
      const absl::Status appended = session->Append(message.data());
      // The watchdog cancels the call it fired on: that reason, not a client's cancel, is the
      // answer (it can fire between this piece's arrival and the checks of the call).
      if (watch.timed_out()) return idle_error();
      RETURN_IF_ERROR(appended);
      RETURN_IF_ERROR(call.CheckAlive());  // e.g. the drain's time ran out
      watch.Touch();
    }
    if (watch.timed_out()) return idle_error();
    if (context->IsCancelled()) return absl::CancelledError("the client cancelled the upload");
    RETURN_IF_ERROR(call.CheckAlive());
    ASSIGN_OR_RETURN(ArrayPtr array, session->Finish());
    metrics_.RecordTransferBytes("upload", received);
    transfer.set_array(array->handle);
    transfer.Succeed();
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::StreamedDownloadArray(grpc::ServerContext* context,
                                                     DownloadStream* stream) {
  return Handle("DownloadArray", context, [&](const CallContext& call) -> absl::Status {
    // The request is read here, not before the handler runs as for a plain server stream, so a
    // client that opens the call and sends nothing is cancelled like a silent upload.
    v1::DownloadArrayRequest request;
    {
      UploadWatchdog::Watch watch = upload_watchdog_.Start(context);
      if (!stream->Read(&request)) {
        if (watch.timed_out()) {
          return absl::CancelledError(absl::StrCat("no download request for ",
                                                   engine_.options().upload_idle_timeout_ms,
                                                   " ms; the download was cancelled"));
        }
        // Read fails alike for a cancel, a passed deadline, a half-close and a request that
        // does not parse; tell them apart as a plain server stream's caller would see them.
        RETURN_IF_ERROR(call.CheckAlive());
        if (context->IsCancelled()) {
          return absl::CancelledError("the client cancelled the download");
        }
        return absl::InvalidArgumentError(
            "the stream carried no request, or one that is not a DownloadArrayRequest");
      }
    }
    TransferLog::Stream transfer = transfer_log_->Begin("download", call.tenant, request.handle());
    transfer.set_whole_bytes(WholeBytes(engine_, request.handle(), call));
    bool first = true;
    int64_t sent = 0;
    v1::DownloadArrayResponse head;  // the message but its bytes
    absl::Status stopped;            // why the download stopped early, when the call ended
    absl::Status downloaded = engine_.Download(
        request,
        [&](const Shape& shape, DType dtype, absl::string_view bytes) {
          if (absl::Status alive = call.CheckAlive(); !alive.ok()) {
            stopped = alive;  // cancelled, past its deadline, or cut off by the drain
            return false;
          }
          if (first) {  // the first message alone says what the bytes are
            *head.mutable_shape() = ToProto(shape);
            head.set_dtype(ToProto(dtype));
            first = false;
          } else {
            head.Clear();
          }
          sent += bytes.size();
          transfer.Add(bytes.size());
          return stream->Write(SerializeDownloadMessage(head, bytes));
        },
        call);
    if (!stopped.ok()) downloaded = stopped;
    RETURN_IF_ERROR(downloaded);
    transfer.Succeed();
    metrics_.RecordTransferBytes("download", sent);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::UploadFromSharedMemory(
    grpc::ServerContext* context, const v1::UploadFromSharedMemoryRequest* request,
    v1::UploadFromSharedMemoryResponse* response) {
  return Handle(
      "UploadFromSharedMemory", context, response, [&](const CallContext& call) -> absl::Status {
        RETURN_IF_ERROR(CheckSharedMemoryEnabled(shared_memory_));
        TransferLog::Stream transfer =
            transfer_log_->Begin("shared-memory upload", call.tenant, request->header().handle());
        transfer.set_whole_bytes(WholeBytes(engine_, request->header().handle(), call));
        ASSIGN_OR_RETURN(ArrayPtr array,
                         distarray::UploadFromSharedMemory(engine_, segments_, *request, call));
        metrics_.RecordTransferBytes("upload", request->source().bytes());
        transfer.Add(request->source().bytes());
        transfer.set_array(array->handle);
        transfer.Succeed();
        *response->mutable_array() = ToArrayInfo(*array);
        return absl::OkStatus();
      });
}

grpc::Status ArrayServiceImpl::DownloadToSharedMemory(
    grpc::ServerContext* context, const v1::DownloadToSharedMemoryRequest* request,
    v1::DownloadToSharedMemoryResponse* response) {
  return Handle("DownloadToSharedMemory", context, [&](const CallContext& call) -> absl::Status {
    RETURN_IF_ERROR(CheckSharedMemoryEnabled(shared_memory_));
    TransferLog::Stream transfer =
        transfer_log_->Begin("shared-memory download", call.tenant, request->handle());
    transfer.set_whole_bytes(WholeBytes(engine_, request->handle(), call));
    ASSIGN_OR_RETURN(*response,
                     distarray::DownloadToSharedMemory(engine_, segments_, *request, call));
    metrics_.RecordTransferBytes("download", response->bytes());
    transfer.Add(response->bytes());
    transfer.Succeed();
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::CreateSharedMemory(grpc::ServerContext* context,
                                                  const v1::CreateSharedMemoryRequest* request,
                                                  v1::CreateSharedMemoryResponse* response) {
  return Handle("CreateSharedMemory", context, [&](const CallContext& call) -> absl::Status {
    RETURN_IF_ERROR(CheckSharedMemoryEnabled(shared_memory_));
    ASSIGN_OR_RETURN(SharedMemoryTable::SegmentPtr segment,
                     segments_.Create(call, request->bytes()));
    response->set_name(segment->name());
    response->set_bytes(segment->size());
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::ReleaseSharedMemory(grpc::ServerContext* context,
                                                   const v1::ReleaseSharedMemoryRequest* request,
                                                   v1::ReleaseSharedMemoryResponse*) {
  return Handle("ReleaseSharedMemory", context, [&](const CallContext& call) -> absl::Status {
    RETURN_IF_ERROR(CheckSharedMemoryEnabled(shared_memory_));
    return segments_.Release(call, request->name(), "name");
  });
}

grpc::Status ArrayServiceImpl::DescribeArray(grpc::ServerContext* context,
                                             const v1::DescribeArrayRequest* request,
                                             v1::DescribeArrayResponse* response) {
  return Handle("DescribeArray", context, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Describe(request->handle(), call));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::ListArrays(grpc::ServerContext* context,
                                          const v1::ListArraysRequest* request,
                                          v1::ListArraysResponse* response) {
  return Handle("ListArrays", context, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(Engine::Page page,
                     engine_.ListPage(request->page_size(), request->page_token(), call));
    size_t bytes = 0;
    for (size_t i = 0; i < page.arrays.size(); ++i) {
      v1::ArrayInfo info = ToArrayInfo(*page.arrays[i]);
      const size_t size = info.ByteSizeLong();
      if (i > 0 && bytes + size > kMaxListPageBytes) {
        page.more = true;  // the rest follows on the next page
        break;
      }
      bytes += size;
      *response->add_arrays() = std::move(info);
    }
    if (page.more && response->arrays_size() > 0) {
      response->set_next_page_token(response->arrays(response->arrays_size() - 1).handle());
    }
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::DeleteArray(grpc::ServerContext* context,
                                           const v1::DeleteArrayRequest* request,
                                           v1::DeleteArrayResponse*) {
  return Handle("DeleteArray", context,
                [&](const CallContext& call) { return engine_.Delete(request->handle(), call); });
}

grpc::Status ArrayServiceImpl::Reshard(grpc::ServerContext* context,
                                       const v1::ReshardRequest* request,
                                       v1::ReshardResponse* response) {
  return Handle("Reshard", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Reshard(*request, call));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::ChangeMode(grpc::ServerContext* context,
                                          const v1::ChangeModeRequest* request,
                                          v1::ChangeModeResponse* response) {
  return Handle("ChangeMode", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.ChangeMode(*request, call));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::Elementwise(grpc::ServerContext* context,
                                           const v1::ElementwiseRequest* request,
                                           v1::ElementwiseResponse* response) {
  return Handle("Elementwise", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Elementwise(*request, call));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::Reduce(grpc::ServerContext* context,
                                      const v1::ReduceRequest* request,
                                      v1::ReduceResponse* response) {
  return Handle("Reduce", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Reduce(*request, call));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::Matmul(grpc::ServerContext* context,
                                      const v1::MatmulRequest* request,
                                      v1::MatmulResponse* response) {
  return Handle("Matmul", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Matmul(*request, call));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::Linalg(grpc::ServerContext* context,
                                      const v1::LinalgRequest* request,
                                      v1::LinalgResponse* response) {
  return Handle("Linalg", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<ArrayPtr> arrays, engine_.Linalg(*request, call));
    for (const ArrayPtr& array : arrays) *response->add_arrays() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::Manipulate(grpc::ServerContext* context,
                                          const v1::ManipulateRequest* request,
                                          v1::ManipulateResponse* response) {
  return Handle("Manipulate", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Manipulate(*request, call));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::Sparse(grpc::ServerContext* context,
                                      const v1::SparseRequest* request,
                                      v1::SparseResponse* response) {
  return Handle("Sparse", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<ArrayPtr> arrays, engine_.Sparse(*request, call));
    for (const ArrayPtr& array : arrays) *response->add_arrays() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::RunGraph(grpc::ServerContext* context,
                                        const v1::RunGraphRequest* request,
                                        v1::RunGraphResponse* response) {
  return Handle("RunGraph", context, response, [&](const CallContext& call) -> absl::Status {
    const CallContext bounded = WithRunTimeBound(call, *context, engine_.options());
    // Waits on cluster members end at the run-time bound too (its `alive` is polled).
    const ScopedCallBound run_bound(ClientDeadline(*context), bounded.alive);
    ASSIGN_OR_RETURN(GraphRunOutcome outcome, engine_.RunGraph(*request, bounded));
    for (const auto& [variable, array] : outcome.outputs) {
      (*response->mutable_outputs())[variable] = ToArrayInfo(*array);
    }
    for (auto& [variable, value] : outcome.values) {
      (*response->mutable_values())[variable] = std::move(value);
    }
    response->set_iterations(outcome.stats.iterations);
    response->set_hit_iteration_cap(outcome.stats.hit_iteration_cap);
    response->set_graph_cache_hit(outcome.cache_hit);
    response->set_execution(outcome.execution);
    response->set_device_seconds(outcome.stats.device_seconds);
    response->set_fused_loops(outcome.fused_loops);
    response->set_fused_chains_in_bodies(outcome.fused_chains_in_bodies);
    response->set_fused_chain_statements_in_bodies(outcome.fused_chain_statements_in_bodies);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::RegisterProgram(grpc::ServerContext* context,
                                               const v1::RegisterProgramRequest* request,
                                               v1::RegisterProgramResponse* response) {
  return Handle("RegisterProgram", context, response, [&](const CallContext& call) -> absl::Status {
    ASSIGN_OR_RETURN(*response->mutable_program_id(), engine_.RegisterProgram(*request, call));
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::DeleteProgram(grpc::ServerContext* context,
                                             const v1::DeleteProgramRequest* request,
                                             v1::DeleteProgramResponse*) {
  return Handle("DeleteProgram", context,
                [&](const CallContext& call) { return engine_.DeleteProgram(*request, call); });
}

grpc::Status ArrayServiceImpl::Synchronize(grpc::ServerContext* context,
                                           const v1::SynchronizeRequest* request,
                                           v1::SynchronizeResponse*) {
  return Handle("Synchronize", context,
                [&](const CallContext& call) { return engine_.Synchronize(*request, call); });
}

grpc::Status ArrayServiceImpl::KeepAlive(grpc::ServerContext* context, const v1::KeepAliveRequest*,
                                         v1::KeepAliveResponse* response) {
  return Handle("KeepAlive", context, [&](const CallContext& call) {
    *response = engine_.KeepAlive(call);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::EndSession(grpc::ServerContext* context,
                                          const v1::EndSessionRequest*,
                                          v1::EndSessionResponse* response) {
  return Handle(
      "EndSession", context,
      [&](const CallContext& call) {
        *response = engine_.EndSession(call);
        return absl::OkStatus();
      },
      SessionUse::kEnd);
}

}  // namespace distarray
