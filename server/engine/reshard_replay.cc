// Many-piece reshards replayed as cached graphs. A reshard launches one copy (and, for strided
// pieces, packing and unpacking kernels with staging buffers) per piece, and on the CUDA backend
// each piece costs ~15 us of host work: a 2048^2 float32 matrix moved from 64 row blocks to 64
// column blocks over 2 H200s (4096 pieces) took 68.7 ms as a Reshard RPC and 8.0 ms as the same
// reshard in a one-statement RunGraph program replayed from the graph cache (1024 pieces: 22.8
// against 3.2 ms; 64 pieces of a 256 MiB matrix: 1.43 against 1.50 ms; bench/
// request_graph_bench). The first run records, which costs about what the eager reshard does.
// A replay copies the array into the graph's input slot and the result out of its output slot,
// and a cached graph keeps both slots' memory, so only reshards with many pieces of a small
// array take this path. The host backend's replays gained nothing (0.76-1.12x) and stay eager.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/graph/program_digest.h"
#include "server/ops/chunk_index.h"

namespace distarray {
namespace {

// At least this many pieces of at most kReplayMaxPieceBytes on average (64 pieces of 256 KiB
// replayed 2x faster, 64 of 4 MiB no faster), and at most kReplayMaxBytes in all (each cached
// graph holds two copies of the array).
constexpr int64_t kReplayMinPieces = 32;
constexpr int64_t kReplayMaxPieceBytes = int64_t{1} << 20;
constexpr int64_t kReplayMaxBytes = int64_t{256} << 20;

// Source and destination chunks whose hulls meet (the chunk index planning uses): at least the
// reshard's pieces (a piece is one pair's intersection), counted up to `enough`, or fewer where
// counting would pass the planning budget (the reshard then stays eager).
int64_t PiecesAtLeast(const IndexMap& from, const IndexMap& to, int64_t enough,
                      const StopCheck& stop) {
  const ChunkIndex index(from);
  PlanBudget budget(kDefaultPlanWorkLimit, stop);
  int64_t pieces = 0;
  for (const ChunkSpec& chunk : to) {
    if (!index.ForEachOverlap(chunk.box, budget, [&](int64_t) { return ++pieces < enough; })) {
      break;
    }
  }
  return pieces;
}

}  // namespace

absl::StatusOr<std::optional<std::vector<Chunk>>> Engine::ReshardByReplay(
    const ArrayPtr& array, const IndexMap& map, const v1::ReshardRequest& request,
    const CallContext& call) {
  GraphRecorder* recorder = backend_->graph_recorder();
  if (!options_.use_graphs || recorder == nullptr || !recorder->ReplayBeatsLaunches() ||
      request.in_place()) {
    return std::nullopt;
  }
  const int64_t bytes = NumElements(array->shape) * DTypeSize(array->dtype);
  if (bytes > kReplayMaxBytes) return std::nullopt;
  const int64_t enough = std::max(kReplayMinPieces, bytes / kReplayMaxPieceBytes);
  if (PiecesAtLeast(array->index_map(), map, enough, call.alive) < enough) return std::nullopt;
  // The request as a program: b = reshard(a), keyed by tenant like any inline program so that
  // one tenant's cache hits say nothing of another's requests.
  // Names are passed as std::string rvalues: GCC 12 at -O3 reports a false -Wrestrict inside
  // std::string::assign(const char*) when the generated add_inputs(const char*) is inlined here.
  v1::Program program;
  program.add_inputs(std::string("a"));
  v1::Statement& statement = *program.add_statements();
  statement.set_target("b");
  v1::ReshardStatement& reshard = *statement.mutable_reshard();
  reshard.set_source("a");
  if (request.has_index_map()) *reshard.mutable_index_map() = request.index_map();
  if (request.has_mode()) reshard.set_mode(request.mode());
  program.add_outputs(std::string("b"));
  const std::string key = absl::StrCat(call.tenant, "/reshard:", ProgramDigest(program));
  ASSIGN_OR_RETURN(ProgramRunResult ran,
                   runner_->Run(program, key, {array}, RequestContext(call), call.tenant));
  if (ran.execution == v1::GRAPH_EXECUTION_DEVICE_GRAPH) {
    graph_launches_.fetch_add(1, std::memory_order_relaxed);
  }
  return std::move(ran.outputs.at(0).second.chunks);
}

}  // namespace distarray
