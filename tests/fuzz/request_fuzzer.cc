// libFuzzer target over the engine: each input is a FuzzCase (tests/fuzz/fuzz_case.proto), a
// short sequence of distarray.v1 requests run in-process against a fresh engine on the host
// backend (4 simulated devices, 4 MiB each), with no network in between. It drives every
// request the daemon serves through the same Engine calls the gRPC service makes, including
// upload streams, downloads the client cancels, uploads it abandons, and shared-memory segments
// and transfers through them (the service's segment table, with real segments in /dev/shm).
//
// Besides the sanitizers' reports, the target aborts when
//  - a request answers UNKNOWN, INTERNAL or DATA_LOSS (a client mistake has a precise code);
//  - a finished download carries a byte count other than its shape and dtype imply;
//  - memory is still charged to a device once every array is deleted and the devices are idle.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/box.h"
#include "common/dtype.h"
#include "google/protobuf/stubs/logging.h"
#include "server/engine/engine.h"
#include "server/engine/upload_session.h"
#include "server/host/host_backend.h"
#include "server/service/shared_memory_table.h"
#include "server/service/shared_memory_transfer.h"
#include "tests/fuzz/fuzz_case.pb.h"

namespace distarray::fuzz {
namespace {

// Bounds on the work one input can buy, so that the fuzzer spends its time on many inputs rather
// than on a few large ones. The memory limit bounds what any one array can cost.
constexpr int kMaxActions = 16;
constexpr size_t kMaxInputBytes = 1 << 16;
constexpr int kDevices = 4;
// Small, so that one input's fills and copies stay in the milliseconds (the fuzzer needs
// thousands of inputs a second). Downloads still span several slabs: a sparse array (elements no
// chunk covers) has logical values that cost no device memory.
constexpr int64_t kMemoryLimitBytes = int64_t{4} << 20;
constexpr int64_t kMaxPadBytes = int64_t{1} << 20;
// A download past either bound is cancelled as a client would: the daemon streams what it is
// asked for, so a large region is legitimately slow, and the fuzzer has better uses for its time.
constexpr int64_t kMaxDownloadPieces = 4096;
constexpr int64_t kMaxDownloadBytes = int64_t{4} << 20;
constexpr size_t kMaxHandles = 64;

[[noreturn]] void Fail(const std::string& what, const Action& action) {
  std::fprintf(stderr, "request_fuzzer: %s\naction: %s\n", what.c_str(),
               action.ShortDebugString().substr(0, 4096).c_str());
  std::abort();
}

// DISTARRAY_FUZZ_VERBOSE=1 prints every request's status (to see what a seed or a crash input
// reaches).
bool Verbose() {
  static const bool verbose = std::getenv("DISTARRAY_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

// A client mistake gets a precise code; these three mean the server lost track of something.
void CheckStatus(const absl::Status& status, const Action& action) {
  if (Verbose()) {
    std::fprintf(stderr, "%s -> %s\n",
                 Action::descriptor()->FindFieldByNumber(action.kind_case()) != nullptr
                     ? Action::descriptor()->FindFieldByNumber(action.kind_case())->name().c_str()
                     : "?",
                 status.ToString().substr(0, 300).c_str());
  }
  switch (status.code()) {
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kDataLoss:
      Fail("unexpected status " + status.ToString(), action);
    default:
      break;
  }
}

// Small bounds, so an input's segments cost little: the table's per-tenant checks still bite.
constexpr SharedMemoryLimits kSegmentLimits{.max_segments_per_tenant = 4,
                                            .max_bytes_per_tenant = int64_t{2} << 20};

class Runner {
 public:
  // A zero lease: every session has expired by the time a sweep runs, so sweeps are
  // deterministic.
  explicit Runner(std::unique_ptr<Backend> backend)
      : engine_(std::move(backend), Options()), segments_(kSegmentLimits) {
    // As the service does: an expired session's segments go with it.
    engine_.SetSessionEndListener(
        [this](const std::string& session_key) { segments_.ReleaseSession(session_key); });
  }
  ~Runner() { engine_.SetSessionEndListener(nullptr); }

  void Run(const Action& action) {
    const CallContext call = CallFor(action);
    engine_.TouchSession(call).IgnoreError();
    switch (action.kind_case()) {
      case Action::kCreate:
        Keep(engine_.Create(action.create(), call), action);
        break;
      case Action::kUpload:
        RunUpload(action, call);
        break;
      case Action::kDownload:
        RunDownload(action);
        break;
      case Action::kDescribe: {
        v1::DescribeArrayRequest request = action.describe();
        SetHandle(action, request.mutable_handle());
        CheckStatus(engine_.Describe(request.handle()).status(), action);
        break;
      }
      case Action::kList:
        CheckStatus(
            engine_.ListPage(action.list().page_size(), action.list().page_token()).status(),
            action);
        break;
      case Action::kDelete: {
        v1::DeleteArrayRequest request = action.delete_();
        SetHandle(action, request.mutable_handle());
        CheckStatus(engine_.Delete(request.handle()), action);
        break;
      }
      case Action::kReshard: {
        v1::ReshardRequest request = action.reshard();
        SetHandle(action, request.mutable_handle());
        Keep(engine_.Reshard(request, call), action);
        break;
      }
      case Action::kChangeMode: {
        v1::ChangeModeRequest request = action.change_mode();
        SetHandle(action, request.mutable_handle());
        Keep(engine_.ChangeMode(request, call), action);
        break;
      }
      case Action::kElementwise: {
        v1::ElementwiseRequest request = action.elementwise();
        auto* operands = request.mutable_spec()->mutable_operands();
        for (int i = 0; i < action.operands_from_size() && i < operands->size(); ++i) {
          if (!handles_.empty()) {
            operands->at(i).set_handle(handles_[action.operands_from(i) % handles_.size()]);
          }
        }
        if (action.has_handle_from()) SetHandle(action, request.mutable_spec()->mutable_out());
        Keep(engine_.Elementwise(request, call), action);
        break;
      }
      case Action::kReduce: {
        v1::ReduceRequest request = action.reduce();
        SetHandle(action, request.mutable_spec()->mutable_operand()->mutable_handle());
        Keep(engine_.Reduce(request, call), action);
        break;
      }
      case Action::kMatmul: {
        v1::MatmulRequest request = action.matmul();
        if (!handles_.empty()) {
          v1::MatmulOpSpec& spec = *request.mutable_spec();
          std::vector<v1::Operand*> sides = {spec.mutable_a(), spec.mutable_b()};
          if (spec.has_sparse_a()) {
            sides = {spec.mutable_sparse_a()->mutable_indptr(),
                     spec.mutable_sparse_a()->mutable_indices(),
                     spec.mutable_sparse_a()->mutable_data(), spec.mutable_b()};
          }
          for (int i = 0; i < action.operands_from_size() && i < static_cast<int>(sides.size());
               ++i) {
            sides[i]->set_handle(handles_[action.operands_from(i) % handles_.size()]);
          }
        }
        Keep(engine_.Matmul(request, call), action);
        break;
      }
      case Action::kSparse: {
        v1::SparseRequest request = action.sparse();
        v1::CsrMatrix* matrix = request.mutable_spec()->has_transpose()
                                    ? request.mutable_spec()->mutable_transpose()
                                    : request.mutable_spec()->mutable_to_dense();
        if (!handles_.empty()) {
          v1::Operand* parts[] = {matrix->mutable_indptr(), matrix->mutable_indices(),
                                  matrix->mutable_data()};
          for (int i = 0; i < action.operands_from_size() && i < 3; ++i) {
            parts[i]->set_handle(handles_[action.operands_from(i) % handles_.size()]);
          }
        }
        absl::StatusOr<std::vector<ArrayPtr>> results = engine_.Sparse(request, call);
        CheckStatus(results.status(), action);
        if (results.ok()) {
          for (const ArrayPtr& array : *results) {
            if (handles_.size() < kMaxHandles) handles_.push_back(array->handle);
          }
        }
        break;
      }
      case Action::kLinalg: {
        v1::LinalgRequest request = action.linalg();
        if (!handles_.empty()) {
          v1::Operand* sides[] = {request.mutable_spec()->mutable_a(),
                                  request.mutable_spec()->mutable_b()};
          for (int i = 0; i < action.operands_from_size() && i < 2; ++i) {
            if (i == 1 && !request.spec().has_b()) break;
            sides[i]->set_handle(handles_[action.operands_from(i) % handles_.size()]);
          }
        }
        absl::StatusOr<std::vector<ArrayPtr>> results = engine_.Linalg(request, call);
        CheckStatus(results.status(), action);
        if (results.ok()) {
          for (const ArrayPtr& array : *results) {
            if (handles_.size() < kMaxHandles) handles_.push_back(array->handle);
          }
        }
        break;
      }
      case Action::kManipulate: {
        v1::ManipulateRequest request = action.manipulate();
        v1::ManipulationSpec& spec = *request.mutable_spec();
        std::vector<v1::Operand*> operands;
        switch (spec.op_case()) {
          case v1::ManipulationSpec::kGetItem:
            operands = {spec.mutable_get_item()->mutable_source()};
            break;
          case v1::ManipulationSpec::kSetItem:
            operands = {spec.mutable_set_item()->mutable_target(),
                        spec.mutable_set_item()->mutable_value()};
            break;
          case v1::ManipulationSpec::kPermuteDims:
            operands = {spec.mutable_permute_dims()->mutable_source()};
            break;
          case v1::ManipulationSpec::kReshape:
            operands = {spec.mutable_reshape()->mutable_source()};
            break;
          case v1::ManipulationSpec::kConcat:
            for (v1::Operand& o : *spec.mutable_concat()->mutable_sources()) operands.push_back(&o);
            break;
          case v1::ManipulationSpec::kBroadcastTo:
            operands = {spec.mutable_broadcast_to()->mutable_source()};
            break;
          case v1::ManipulationSpec::kSort:
            operands = {spec.mutable_sort()->mutable_source()};
            break;
          case v1::ManipulationSpec::kSearchSorted:
            operands = {spec.mutable_search_sorted()->mutable_sorted(),
                        spec.mutable_search_sorted()->mutable_values()};
            break;
          case v1::ManipulationSpec::kScan:
            operands = {spec.mutable_scan()->mutable_source()};
            break;
          case v1::ManipulationSpec::OP_NOT_SET:
            break;
        }
        // Index arrays held in the daemon (IndexItem.array) take the operands after the spec's.
        v1::IndexKey* key = spec.has_get_item()   ? spec.mutable_get_item()->mutable_key()
                            : spec.has_set_item() ? spec.mutable_set_item()->mutable_key()
                                                  : nullptr;
        if (key != nullptr) {
          for (v1::IndexItem& item : *key->mutable_items()) {
            if (item.has_array()) operands.push_back(item.mutable_array());
          }
        }
        for (int i = 0; i < action.operands_from_size() && i < static_cast<int>(operands.size());
             ++i) {
          if (!handles_.empty()) {
            operands[i]->set_handle(handles_[action.operands_from(i) % handles_.size()]);
          }
        }
        Keep(engine_.Manipulate(request, call), action);
        break;
      }
      case Action::kRunGraph: {
        v1::RunGraphRequest request = action.run_graph();
        if (request.has_program() && !handles_.empty()) {
          for (int i = 0; i < action.operands_from_size() && i < request.program().inputs_size();
               ++i) {
            (*request.mutable_arguments())[request.program().inputs(i)] =
                handles_[action.operands_from(i) % handles_.size()];
          }
        }
        if (request.has_program_id() && !programs_.empty() && action.has_handle_from()) {
          request.set_program_id(programs_[action.handle_from() % programs_.size()]);
        }
        absl::StatusOr<GraphRunOutcome> outcome = engine_.RunGraph(request, call);
        CheckStatus(outcome.status(), action);
        if (outcome.ok()) {
          for (const auto& [variable, array] : outcome->outputs) {
            if (handles_.size() < kMaxHandles) handles_.push_back(array->handle);
          }
        }
        break;
      }
      case Action::kRegisterProgram: {
        absl::StatusOr<std::string> id = engine_.RegisterProgram(action.register_program());
        CheckStatus(id.status(), action);
        if (id.ok()) programs_.push_back(*id);
        break;
      }
      case Action::kUploadFromSharedMemory: {
        v1::UploadFromSharedMemoryRequest request = action.upload_from_shared_memory();
        if (request.has_header() && !request.header().has_new_array()) {
          SetHandle(action, request.mutable_header()->mutable_handle());
        }
        if (request.has_source()) UseSegmentIfUnnamed(request.mutable_source());
        Keep(UploadFromSharedMemory(engine_, segments_, request, call), action);
        break;
      }
      case Action::kDownloadToSharedMemory: {
        v1::DownloadToSharedMemoryRequest request = action.download_to_shared_memory();
        SetHandle(action, request.mutable_handle());
        if (request.has_destination()) UseSegmentIfUnnamed(request.mutable_destination());
        CheckStatus(DownloadToSharedMemory(engine_, segments_, request, call).status(), action);
        break;
      }
      case Action::kCreateSharedMemory: {
        absl::StatusOr<SharedMemoryTable::SegmentPtr> segment =
            segments_.Create(call, action.create_shared_memory().bytes());
        CheckStatus(segment.status(), action);
        if (segment.ok()) segment_names_.push_back((*segment)->name());
        break;
      }
      case Action::kReleaseSharedMemory: {
        v1::ReleaseSharedMemoryRequest request = action.release_shared_memory();
        if (request.name().empty() && !segment_names_.empty()) {
          request.set_name(segment_names_[action.handle_from() % segment_names_.size()]);
        }
        CheckStatus(segments_.Release(call, request.name(), "name"), action);
        break;
      }
      case Action::kSynchronize: {
        v1::SynchronizeRequest request = action.synchronize();
        for (uint32_t from : action.operands_from()) {
          if (!handles_.empty()) request.add_handles(handles_[from % handles_.size()]);
        }
        CheckStatus(engine_.Synchronize(request), action);
        break;
      }
      case Action::kKeepAlive:
        engine_.KeepAlive(call);
        break;
      case Action::kEndSession:
        engine_.EndSession(call);
        break;
      case Action::kSweepSessions:
        engine_.SweepExpiredSessions();
        break;
      case Action::KIND_NOT_SET:
        break;
    }
  }

  // Deletes everything (cached graphs too), waits for the devices, and checks that no memory is
  // still charged.
  void Finish() {
    engine_.ClearGraphCache();
    for (const ArrayPtr& array : engine_.List()) {
      const absl::Status status = engine_.Delete(array->handle);
      if (!status.ok()) Fail("deleting a listed array: " + status.ToString(), Action());
    }
    const absl::Status status = engine_.Synchronize(v1::SynchronizeRequest());
    if (!status.ok()) Fail("final synchronize: " + status.ToString(), Action());
    for (int d = 0; d < engine_.backend().device_count(); ++d) {
      const int64_t used = engine_.backend().memory(d).used_bytes;
      if (used != 0) {
        Fail("device " + std::to_string(d) + " still charges " + std::to_string(used) +
                 " bytes with no array left",
             Action());
      }
    }
  }

 private:
  // A range with no name takes the name of the case's last segment (if any), so mutations reach
  // the mapping; any other name is checked and, almost always, not found.
  void UseSegmentIfUnnamed(v1::SharedMemoryRange* range) const {
    if (range->name().empty() && !segment_names_.empty()) {
      range->set_name(segment_names_.back());
    }
  }

  void SetHandle(const Action& action, std::string* handle) const {
    if (action.has_handle_from() && !handles_.empty()) {
      *handle = handles_[action.handle_from() % handles_.size()];
    }
  }

  // Programs are bounded tighter than the daemon's defaults, so no input spends the fuzzer's
  // time in one long loop.
  static EngineOptions Options() {
    EngineOptions options{.session_lease = absl::ZeroDuration()};
    options.programs.max_loop_iterations = 64;
    options.programs.max_statements = 256;
    options.programs.max_registered_programs = 4;
    return options;
  }

  void Keep(const absl::StatusOr<ArrayPtr>& result, const Action& action) {
    CheckStatus(result.status(), action);
    if (result.ok() && handles_.size() < kMaxHandles) handles_.push_back((*result)->handle);
  }

  // The call an action stands for: its session, and a liveness check that turns CANCELLED at
  // the requested check.
  static CallContext CallFor(const Action& action) {
    CallContext call;
    if (action.session() != 0) call.session = "session-" + std::to_string(action.session() % 4);
    if (const uint32_t cancel_at = action.cancel_at_check(); cancel_at != 0) {
      call.alive = [checks = uint32_t{0}, cancel_at]() mutable {
        return ++checks >= cancel_at ? absl::CancelledError("the client cancelled")
                                     : absl::OkStatus();
      };
    }
    return call;
  }

  void RunUpload(const Action& action, const CallContext& call) {
    const Upload& upload = action.upload();
    v1::UploadHeader header = upload.header();
    if (!header.has_new_array()) SetHandle(action, header.mutable_handle());
    absl::StatusOr<std::unique_ptr<UploadSession>> session = engine_.BeginUpload(header, call);
    CheckStatus(session.status(), action);
    if (!session.ok()) return;
    int64_t received = 0;
    for (const std::string& piece : upload.pieces()) {
      const absl::Status status = (*session)->Append(piece);
      CheckStatus(status, action);
      if (!status.ok()) return;  // the service ends the stream at the first error
      received += static_cast<int64_t>(piece.size());
    }
    const int64_t missing = (*session)->expected_bytes() - received;
    if (upload.pad() && missing > 0 && missing <= kMaxPadBytes) {
      const absl::Status status = (*session)->Append(std::string(missing, '\0'));
      CheckStatus(status, action);
      if (!status.ok()) return;
    }
    if (upload.abandon()) return;
    Keep((*session)->Finish(), action);
  }

  void RunDownload(const Action& action) {
    v1::DownloadArrayRequest request = action.download().request();
    SetHandle(action, request.mutable_handle());
    const int64_t cancel_after = action.download().cancel_after_pieces();
    int64_t pieces = 0;
    int64_t bytes = 0;
    bool stopped = false;
    Shape shape;
    DType dtype = DType::kFloat32;
    const absl::Status status =
        engine_.Download(request, [&](const Shape& s, DType d, absl::string_view data) {
          if (pieces == 0) {
            shape = s;
            dtype = d;
          } else if (s != shape || d != dtype) {
            Fail("a download changed its shape or dtype between pieces", action);
          }
          ++pieces;
          bytes += static_cast<int64_t>(data.size());
          if ((cancel_after > 0 && pieces >= cancel_after) || pieces >= kMaxDownloadPieces ||
              bytes >= kMaxDownloadBytes) {
            stopped = true;
            return false;
          }
          return true;
        });
    CheckStatus(status, action);
    if (status.ok() && !stopped && pieces > 0 && bytes != NumElements(shape) * DTypeSize(dtype)) {
      Fail("a download carried " + std::to_string(bytes) + " bytes for its shape and dtype",
           action);
    }
  }

  Engine engine_;
  SharedMemoryTable segments_;              // after the engine: destroyed first
  std::vector<std::string> segment_names_;  // every segment the case made, released or not
  std::vector<std::string> handles_;
  std::vector<std::string> programs_;  // registered program ids
};

}  // namespace
}  // namespace distarray::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Mutated strings are often not UTF-8; protobuf logs each such parse failure, which is noise.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace distarray;
  fuzz::FuzzCase fuzz_case;
  // -1 keeps unparsable and oversized inputs out of the corpus.
  if (size > fuzz::kMaxInputBytes || !fuzz_case.ParseFromArray(data, static_cast<int>(size)) ||
      fuzz_case.actions_size() > fuzz::kMaxActions) {
    return -1;
  }
  auto backend = HostBackend::Create(
      {.device_count = fuzz::kDevices, .memory_limit_bytes = fuzz::kMemoryLimitBytes});
  if (!backend.ok()) std::abort();
  fuzz::Runner runner(*std::move(backend));
  for (const fuzz::Action& action : fuzz_case.actions()) runner.Run(action);
  runner.Finish();
  return 0;
}
