// Engine::RunGraph, RegisterProgram and DeleteProgram: resolve the program and its arguments,
// hand them to the ProgramRunner (server/graph/), register the outputs.
#include <chrono>
#include <optional>

#include <spdlog/spdlog.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "server/engine/engine.h"
#include "server/graph/program_check.h"
#include "server/graph/program_digest.h"

namespace distarray {

absl::StatusOr<std::string> Engine::RegisterProgram(const v1::RegisterProgramRequest& request,
                                                    const CallContext& call) {
  RETURN_IF_ERROR(
      CheckProgramStructure(request.program(), options_.programs, ProgramBounds(), "program"));
  v1::Program program = request.program();
  // Fields this daemon does not know mean nothing to it: not kept, not charged.
  program.DiscardUnknownFields();
  const int64_t bytes = ProgramMemoryBytes(program);
  ASSIGN_OR_RETURN(std::string id,
                   programs_.Add(call.tenant, std::move(program), bytes, "program"));
  if (call.results != nullptr) {
    absl::MutexLock lock(&call.results->mu);
    call.results->programs.push_back(id);
  }
  return id;
}

absl::Status Engine::DeleteProgram(const v1::DeleteProgramRequest& request,
                                   const CallContext& call) {
  return programs_.Erase(call.tenant, request.program_id(), "program_id");
}

absl::StatusOr<GraphRunOutcome> Engine::RunGraph(const v1::RunGraphRequest& request,
                                                 const CallContext& call) {
  // Where the call's host time goes, for the debug log (docs/performance.md).
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  ProgramPtr program;
  std::string program_key;
  switch (request.source_case()) {
    case v1::RunGraphRequest::kProgram: {
      // Keyed by tenant too: a cache hit must not tell one tenant what another ran. By digest:
      // the program's bytes could be megabytes. A program seen before (the same bytes) passed the
      // checks and has its key; another is checked (the size bound first: it counts unknown
      // fields) and keyed by its known fields, which the graph cache goes by.
      const std::string bytes_key =
          absl::StrCat(call.tenant, "/", ProgramBytesDigest(request.program()));
      if (std::optional<std::string> known = checked_programs_.Find(bytes_key)) {
        program_key = *std::move(known);
      } else {
        RETURN_IF_ERROR(CheckProgramStructure(request.program(), options_.programs, ProgramBounds(),
                                              "program"));
        program_key = absl::StrCat(call.tenant, "/inline:", ProgramDigest(request.program()));
        checked_programs_.Insert(bytes_key, program_key);
      }
      // Aliasing constructor: the request outlives the call, so no copy of the program.
      program = ProgramPtr(ProgramPtr(), &request.program());
      break;
    }
    case v1::RunGraphRequest::kProgramId: {
      ASSIGN_OR_RETURN(program, programs_.Find(call.tenant, request.program_id(), "program_id"));
      program_key = "id:" + request.program_id();
      break;
    }
    case v1::RunGraphRequest::SOURCE_NOT_SET:
      return absl::InvalidArgumentError("program: give a program or a program_id");
  }

  // Every input bound, nothing else.
  const absl::flat_hash_set<std::string> inputs(program->inputs().begin(), program->inputs().end());
  for (const auto& [variable, handle] : request.arguments()) {
    if (!inputs.contains(variable)) {
      return absl::InvalidArgumentError(absl::StrCat("arguments: ", QuoteClientString(variable),
                                                     " is not an input of the program"));
    }
  }
  std::vector<ArrayPtr> arguments;
  for (const std::string& input : program->inputs()) {
    auto it = request.arguments().find(input);
    if (it == request.arguments().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("arguments: input ", QuoteClientString(input), " is not bound"));
    }
    ASSIGN_OR_RETURN(ArrayPtr array, registry_.Find(call.tenant, it->second,
                                                    absl::StrCat("arguments[", input, "]")));
    arguments.push_back(std::move(array));
  }
  const absl::flat_hash_set<std::string> outputs(program->outputs().begin(),
                                                 program->outputs().end());
  for (const auto& [variable, name] : request.output_names()) {
    const std::string field = absl::StrCat("output_names[", QuoteClientString(variable), "]");
    if (!outputs.contains(variable)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": not an output of the program"));
    }
    RETURN_IF_ERROR(ValidateName(name, field));
    RETURN_IF_ERROR(registry_.CheckNameFree(call.tenant, name, field));
  }

  const Clock::time_point resolved = Clock::now();
  absl::StatusOr<ProgramRunResult> ran =
      runner_->Run(*program, program_key, arguments, RequestContext(call), call.tenant);
  if (ran.ok()) {
    graph_iterations_.fetch_add(ran->stats.iterations, std::memory_order_relaxed);
    if (ran->execution == v1::GRAPH_EXECUTION_DEVICE_GRAPH) {
      graph_launches_.fetch_add(1, std::memory_order_relaxed);
    }
  } else if (absl::IsCancelled(ran.status()) || absl::IsDeadlineExceeded(ran.status())) {
    graph_cancels_.fetch_add(1, std::memory_order_relaxed);
  }
  ASSIGN_OR_RETURN(ProgramRunResult result, std::move(ran));
  const Clock::time_point ran_at = Clock::now();

  GraphRunOutcome outcome;
  outcome.values = std::move(result.values);
  outcome.stats = result.stats;
  outcome.cache_hit = result.cache_hit;
  outcome.fused_loops = result.fused_loops;
  outcome.fused_chains_in_bodies = result.fused_chains_in_bodies;
  outcome.fused_chain_statements_in_bodies = result.fused_chain_statements_in_bodies;
  outcome.execution = result.execution;
  for (auto& [variable, data] : result.outputs) {
    auto name = request.output_names().find(variable);
    absl::StatusOr<Array> out =
        NewResult(name == request.output_names().end() ? "" : name->second, call);
    absl::StatusOr<ArrayPtr> stored;
    if (out.ok()) {
      out->shape = std::move(data.shape);
      out->dtype = data.dtype;
      out->mode = data.mode;
      out->chunks = std::move(data.chunks);
      stored = Register(*std::move(out), /*in_place=*/false, call);
    } else {
      stored = out.status();
    }
    if (!stored.ok()) {
      // All outputs or none: take back the ones already registered.
      for (const auto& [unused, array] : outcome.outputs)
        registry_.Erase(call.tenant, array->handle, "").IgnoreError();
      return stored.status();
    }
    outcome.outputs.emplace_back(variable, *std::move(stored));
  }
  auto us = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  spdlog::debug(
      "RunGraph: arguments resolved in {:.0f} us, ran in {:.0f} us, outputs registered in {:.0f} "
      "us",
      us(start, resolved), us(resolved, ran_at), us(ran_at, Clock::now()));
  return outcome;
}

}  // namespace distarray
