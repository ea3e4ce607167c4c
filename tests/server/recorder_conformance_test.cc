// The graph recorder conformance suite: the same in-process recordings (loops, branches, nesting,
// GEMM, cancellation, several recordings at once) against every backend's GraphRecorder, each
// replay checked against a plain C++ reference. The work to record goes to the recording object;
// inputs are set up and results read on the backend, eagerly. Cases of one backend only (several
// GPUs, NCCL, the host recorder's ledger) stay in graph_recorder_test.cc and
// host_graph_recorder_test.cc. The "cuda" cases skip where no GPU is usable, unless
// DISTARRAY_REQUIRE_BACKENDS names cuda.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/box.h"
#include "common/status_macros.h"
#include "server/backend/backend.h"
#include "server/backend/device_ops.h"
#include "server/backend/graph_recorder.h"
#include "server/daemon/backend_factory.h"
#include "tests/support/count_loop_reference.h"
#include "tests/support/in_process_backend.h"
#include "tests/support/shared_backend_test.h"

namespace distarray {
namespace {

using testing::AllOf;
using testing::ArrayArg;
using testing::BackendRequired;
using testing::CancelledAfter;
using testing::HostLoop;
using testing::Mod7;
using testing::RunCountLoopOnHost;
using testing::ScalarArg;
using testing::Whole;

// What a graph cannot hold does not exist on a recording: host transfers and Synchronize are
// Backend's alone, so an op that needs them cannot be handed a recording (it does not compile).
template <typename Sink>
concept ReadsToHost = requires(Sink& sink, const BufferPtr& buffer, void* host) {
  sink.ReadToHost(buffer, int64_t{0}, int64_t{0}, host);
};
template <typename Sink>
concept WritesFromHost = requires(Sink& sink, const BufferPtr& buffer, const void* host) {
  sink.WriteFromHost(buffer, int64_t{0}, host, int64_t{0});
};
template <typename Sink>
concept Synchronizes = requires(Sink& sink) {
  sink.Synchronize();
};

// The concepts do see the calls where they exist.
static_assert(ReadsToHost<Backend> && WritesFromHost<Backend> && Synchronizes<Backend>);
static_assert(!ReadsToHost<GraphRecording>, "a recording cannot read to the host");
static_assert(!WritesFromHost<GraphRecording>, "a recording cannot write from the host");
static_assert(!Synchronizes<GraphRecording>, "a recording cannot synchronize");
static_assert(!ReadsToHost<DeviceOps> && !WritesFromHost<DeviceOps> && !Synchronizes<DeviceOps>,
              "the sink interface every op is written against has no host transfers");

absl::Status Alive() { return absl::OkStatus(); }

// bool as the devices store it, without std::vector<bool>'s bit packing.
using bool8 = unsigned char;

class RecorderConformanceTest : public testing::SharedBackendTest {
 protected:
  BackendOptions OptionsFor(const std::string& kind) const override {
    BackendOptions options;
    options.kind = kind;
    options.host_devices = 2;
    if (kind == "host") options.memory_limit_bytes = int64_t{64} << 20;
    return options;
  }

  void SetUp() override {
    SharedBackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    recorder_ = backend_->graph_recorder();
    ASSERT_NE(recorder_, nullptr) << "backend " << GetParam() << " has no graph recorder";
  }

  template <typename T>
  absl::StatusOr<BufferPtr> Upload(const std::vector<T>& values, int device = 0) {
    return testing::UploadTo(*backend_, values, device);
  }
  template <typename T>
  absl::Status Write(const BufferPtr& buffer, const std::vector<T>& values) {
    return backend_->WriteFromHost(buffer, 0, values.data(),
                                   static_cast<int64_t>(values.size() * sizeof(T)));
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> Read(const BufferPtr& buffer, int64_t n) {
    return testing::ReadFrom<T>(*backend_, buffer, n);
  }
  absl::StatusOr<BufferPtr> Flag(bool value) { return Upload(std::vector<bool8>{value}); }

  absl::StatusOr<std::unique_ptr<RecordedGraph>> RecordCountLoop(const BufferPtr& a, int64_t n,
                                                                 double limit, int64_t cap) {
    return testing::RecordCountLoop(*recorder_, a, n, limit, cap);
  }

  GraphRecorder* recorder_ = nullptr;
};

TEST_P(RecorderConformanceTest, ZeroIterationsWhenFlagStartsFalse) {
  constexpr int64_t kN = 4096;
  const std::vector<float> initial = Mod7(kN, 1000);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(initial));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, RecordCountLoop(a, kN, 1000, 50));
  DA_ASSERT_OK(graph->Launch({a}, {a}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
  EXPECT_EQ(stats.iterations, 0);
  EXPECT_FALSE(stats.hit_iteration_cap);
  EXPECT_FALSE(stats.cancelled);
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(a, kN));
  EXPECT_EQ(result, initial);
}

TEST_P(RecorderConformanceTest, IterationCapStopsLoop) {
  constexpr int64_t kN = 4096;
  const std::vector<float> initial = Mod7(kN, 0);
  const HostLoop expected = RunCountLoopOnHost(initial, 1000, 5);
  ASSERT_TRUE(expected.hit_cap);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(initial));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, RecordCountLoop(a, kN, 1000, 5));
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE(replay);
    DA_ASSERT_OK(Write(a, initial));
    DA_ASSERT_OK(graph->Launch({a}, {a}));
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
    EXPECT_EQ(stats.iterations, 5);
    EXPECT_TRUE(stats.hit_iteration_cap);
    EXPECT_FALSE(stats.cancelled);
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(a, kN));
    EXPECT_EQ(result, expected.a);
  }
}

TEST_P(RecorderConformanceTest, IfElsePicksBranch) {
  constexpr int64_t kN = 256;
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, Flag(false));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr out, Upload(std::vector<float>(kN, -1.0f)));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  // if (flag) out = 1 else out = 2; if (flag) out += 10 (no else).
  DA_ASSERT_OK(recording->BeginIf(flag));
  DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(out, kN), Scalar::Float(1)));
  DA_ASSERT_OK(recording->Else());
  DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(out, kN), Scalar::Float(2)));
  DA_ASSERT_OK(recording->EndIf());
  DA_ASSERT_OK(recording->BeginIf(flag));
  DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, out, kN,
                                      {ArrayArg(out), ScalarArg(10)}));
  DA_ASSERT_OK(recording->EndIf());
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  recording.reset();
  for (bool value : {true, false, true, false}) {
    SCOPED_TRACE(value);
    DA_ASSERT_OK(Write(flag, std::vector<bool8>{value}));
    DA_ASSERT_OK(graph->Launch({flag}, {out}));
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
    EXPECT_EQ(stats.iterations, 0);
    EXPECT_FALSE(stats.hit_iteration_cap);
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(out, kN));
    EXPECT_EQ(result, std::vector<float>(kN, value ? 11.0f : 2.0f));
  }
}

TEST_P(RecorderConformanceTest, CancelStopsRunningLoop) {
  constexpr int64_t kN = 1024;
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, Flag(true));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(std::vector<float>(kN, 0.0f)));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  // The flag never changes: only the cap (out of reach) or the cancel word ends the loop.
  DA_ASSERT_OK(recording->BeginWhile(flag, std::numeric_limits<int64_t>::max()));
  DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a, kN,
                                      {ArrayArg(a), ScalarArg(1)}));
  DA_ASSERT_OK(recording->EndWhile(flag));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  recording.reset();

  DA_ASSERT_OK(graph->Launch({flag, a}, {a}));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<GraphRunStats> stats = graph->Wait(CancelledAfter(std::chrono::milliseconds(20)));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kCancelled) << stats.status();
  EXPECT_LT(waited, std::chrono::seconds(2));
  // The replay drained: the device is usable, and the loop ran some whole iterations.
  DA_ASSERT_OK(backend().Synchronize());
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(a, kN));
  EXPECT_GT(result[0], 0.0f);
  EXPECT_EQ(result, std::vector<float>(kN, result[0]));

  // The next replay starts with the cancel word clear.
  DA_ASSERT_OK(Write(flag, std::vector<bool8>{false}));
  DA_ASSERT_OK(graph->Launch({flag, a}, {a}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats next, graph->Wait(Alive));
  EXPECT_EQ(next.iterations, 0);
  EXPECT_FALSE(next.cancelled);
  DA_ASSERT_OK(backend().FillConstant(DType::kFloat32, Whole(a, kN), Scalar::Float(3)));
  DA_ASSERT_OK_AND_ASSIGN(result, Read<float>(a, kN));
  EXPECT_EQ(result, std::vector<float>(kN, 3.0f));
}

TEST_P(RecorderConformanceTest, NestedLoops) {
  // o = 0; total = 0; while (o < 3) { b = 0; while (b < 4) { b += 1; total += 1 } o += 1 }
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr o, Upload(std::vector<float>{0}));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr total, Upload(std::vector<float>{0}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr outer_flag, recording->Allocate(0, 1));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr inner_flag, recording->Allocate(0, 1));
  auto less = [&](const BufferPtr& flag, const BufferPtr& x, double limit) {
    return recording->Elementwise(ElementwiseOpId::kLess, DType::kFloat32, flag, 1,
                                  {ArrayArg(x), ScalarArg(limit)});
  };
  auto increment = [&](const BufferPtr& x) {
    return recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, x, 1,
                                  {ArrayArg(x), ScalarArg(1)});
  };
  DA_ASSERT_OK(less(outer_flag, o, 3));
  DA_ASSERT_OK(recording->BeginWhile(outer_flag, 100));
  {
    // Allocated inside a loop body: made at once, once, outside the graph, and dropped here by
    // the caller; the graph keeps it.
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr b, recording->Allocate(0, sizeof(float)));
    DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(b, 1), Scalar::Float(0)));
    DA_ASSERT_OK(less(inner_flag, b, 4));
    DA_ASSERT_OK(recording->BeginWhile(inner_flag, 100));
    DA_ASSERT_OK(increment(b));
    DA_ASSERT_OK(increment(total));
    DA_ASSERT_OK(less(inner_flag, b, 4));
    DA_ASSERT_OK(recording->EndWhile(inner_flag));
  }
  DA_ASSERT_OK(increment(o));
  DA_ASSERT_OK(less(outer_flag, o, 3));
  DA_ASSERT_OK(recording->EndWhile(outer_flag));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  recording.reset();
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE(replay);
    DA_ASSERT_OK(Write(o, std::vector<float>{0}));
    DA_ASSERT_OK(Write(total, std::vector<float>{0}));
    DA_ASSERT_OK(graph->Launch({o, total}, {o, total}));
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
    EXPECT_EQ(stats.iterations, 3 + 3 * 4);
    EXPECT_FALSE(stats.hit_iteration_cap);
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> o_value, Read<float>(o, 1));
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> total_value, Read<float>(total, 1));
    EXPECT_EQ(o_value[0], 3.0f);
    EXPECT_EQ(total_value[0], 12.0f);
  }
}

TEST_P(RecorderConformanceTest, GemmInsideLoop) {
  {
    SCOPED_TRACE("a counted loop of products into one output");
    // c = a @ b three times in a loop (on CUDA: cuBLAS captured into a conditional body, on the
    // fixed workspace).
    constexpr int64_t kM = 64, kK = 48, kN = 32;
    std::vector<float> a(kM * kK), b(kK * kN), expected(kM * kN, 0.0f);
    for (int64_t i = 0; i < kM * kK; ++i) a[i] = static_cast<float>(i % 5);
    for (int64_t i = 0; i < kK * kN; ++i) b[i] = static_cast<float>(i % 3) - 1;
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        for (int64_t p = 0; p < kK; ++p) expected[i * kN + j] += a[i * kK + p] * b[p * kN + j];
      }
    }
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, Upload(a));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr db, Upload(b));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dc, Upload(std::vector<float>(kM * kN, 0.0f)));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr count, Upload(std::vector<float>{0}));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, recording->Allocate(0, 1));
    auto condition = [&] {
      return recording->Elementwise(ElementwiseOpId::kLess, DType::kFloat32, flag, 1,
                                    {ArrayArg(count), ScalarArg(3)});
    };
    DA_ASSERT_OK(condition());
    DA_ASSERT_OK(recording->BeginWhile(flag, 10));
    DA_ASSERT_OK(recording->Gemm(DType::kFloat32, da, db, dc, kM, kN, kK, /*allow_tf32=*/false));
    DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, count, 1,
                                        {ArrayArg(count), ScalarArg(1)}));
    DA_ASSERT_OK(condition());
    DA_ASSERT_OK(recording->EndWhile(flag));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
    recording.reset();
    DA_ASSERT_OK(graph->Launch({da, db, count}, {dc, count}));
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
    EXPECT_EQ(stats.iterations, 3);
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> c, Read<float>(dc, kM * kN));
    EXPECT_EQ(c, expected);
  }
  {
    SCOPED_TRACE("a product fed back into its operand until the cap");
    // c = a @ a, then a = c, twice: a 2x2 matrix squared twice is its fourth power.
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(std::vector<float>{1, 1, 0, 1}));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr go, Flag(true));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr c, recording->Allocate(0, 4 * sizeof(float)));
    DA_ASSERT_OK(recording->BeginWhile(go, 2));
    DA_ASSERT_OK(recording->Gemm(DType::kFloat32, a, a, c, 2, 2, 2, false));
    DA_ASSERT_OK(recording->Cast(DType::kFloat32, DType::kFloat32, c, a, 4));
    DA_ASSERT_OK(recording->EndWhile(go));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
    DA_ASSERT_OK(graph->Launch({a, go}, {a}));
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
    EXPECT_EQ(stats.iterations, 2);
    EXPECT_TRUE(stats.hit_iteration_cap);
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(a, 4));
    EXPECT_EQ(result, (std::vector<float>{1, 4, 0, 1}));
  }
}

// A recording is an object, not a mode of the backend or of a thread: several may be open on one
// device at once, from one thread, their work interleaved, and each graph replays its own work
// only. (There used to be a refusal to begin a second recording on a thread already recording.)
TEST_P(RecorderConformanceTest, TwoRecordingsOpenAtOnceReplayTheirOwnWork) {
  constexpr int64_t kN = 512;
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr x, Upload(std::vector<float>(kN, 0.0f)));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr y, Upload(std::vector<float>(kN, 1.0f)));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> first, recorder_->Begin(0));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> second, recorder_->Begin(0));
  // first: while (x < 5) x += 1 (a loop, so its nesting state is open while the second records).
  // second: if (go) y *= 3 else y = -1, then y += 0.5.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr x_less, first->Allocate(0, kN));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr x_flag, first->Allocate(0, 1));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr go, Flag(true));
  auto x_condition = [&]() -> absl::Status {
    RETURN_IF_ERROR(first->Elementwise(ElementwiseOpId::kLess, DType::kFloat32, x_less, kN,
                                       {ArrayArg(x), ScalarArg(5)}));
    return first->Reduce(ReduceKind::kAll, DType::kBool, x_less, AllOf(kN), x_flag, 1, nullptr);
  };
  DA_ASSERT_OK(x_condition());
  DA_ASSERT_OK(first->BeginWhile(x_flag, 100));
  DA_ASSERT_OK(second->BeginIf(go));
  DA_ASSERT_OK(first->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, x, kN,
                                  {ArrayArg(x), ScalarArg(1)}));
  DA_ASSERT_OK(second->Elementwise(ElementwiseOpId::kMultiply, DType::kFloat32, y, kN,
                                   {ArrayArg(y), ScalarArg(3)}));
  DA_ASSERT_OK(second->Else());
  DA_ASSERT_OK(x_condition());
  DA_ASSERT_OK(second->FillConstant(DType::kFloat32, Whole(y, kN), Scalar::Float(-1)));
  DA_ASSERT_OK(first->EndWhile(x_flag));
  DA_ASSERT_OK(second->EndIf());
  DA_ASSERT_OK(second->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, y, kN,
                                   {ArrayArg(y), ScalarArg(0.5)}));
  // Finished in the other order than begun.
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> second_graph, second->Finish());
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> first_graph, first->Finish());
  second.reset();
  first.reset();
  // Recording ran nothing.
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> got_x, Read<float>(x, kN));
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> got_y, Read<float>(y, kN));
  EXPECT_EQ(got_x, std::vector<float>(kN, 0.0f));
  EXPECT_EQ(got_y, std::vector<float>(kN, 1.0f));

  // The first graph touches x only.
  DA_ASSERT_OK(first_graph->Launch({x}, {x}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats first_stats, first_graph->Wait(Alive));
  EXPECT_EQ(first_stats.iterations, 5);
  EXPECT_FALSE(first_stats.hit_iteration_cap);
  DA_ASSERT_OK_AND_ASSIGN(got_x, Read<float>(x, kN));
  DA_ASSERT_OK_AND_ASSIGN(got_y, Read<float>(y, kN));
  EXPECT_EQ(got_x, std::vector<float>(kN, 5.0f));
  EXPECT_EQ(got_y, std::vector<float>(kN, 1.0f));

  // The second graph touches y only, along the branch its flag picks, on every replay.
  for (bool value : {true, false, true}) {
    SCOPED_TRACE(value);
    DA_ASSERT_OK(Write(y, std::vector<float>(kN, 1.0f)));
    DA_ASSERT_OK(Write(go, std::vector<bool8>{value}));
    DA_ASSERT_OK(second_graph->Launch({go}, {y}));
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats second_stats, second_graph->Wait(Alive));
    EXPECT_EQ(second_stats.iterations, 0);
    DA_ASSERT_OK_AND_ASSIGN(got_x, Read<float>(x, kN));
    DA_ASSERT_OK_AND_ASSIGN(got_y, Read<float>(y, kN));
    EXPECT_EQ(got_x, std::vector<float>(kN, 5.0f));
    EXPECT_EQ(got_y, std::vector<float>(kN, value ? 3.5f : -0.5f));
  }
}

// Work sent to the backend while a recording is open runs at once, host transfers and
// Synchronize included, and is not in the recorded graph: only what was sent to the recording
// is replayed.
TEST_P(RecorderConformanceTest, BackendWorkWhileRecordingRunsEagerlyAndIsNotRecorded) {
  constexpr int64_t kN = 64;
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr x, Upload(std::vector<float>(kN, 1.0f)));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr y, Upload(std::vector<float>(kN, 0.0f)));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  // Recorded: x += 1.
  DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, x, kN,
                                      {ArrayArg(x), ScalarArg(1)}));
  // Eager, with the recording open: fill x with 3 and y = x * 2, seen at once.
  DA_ASSERT_OK(backend().FillConstant(DType::kFloat32, Whole(x, kN), Scalar::Float(3)));
  DA_ASSERT_OK(backend().Elementwise(ElementwiseOpId::kMultiply, DType::kFloat32, y, kN,
                                     {ArrayArg(x), ScalarArg(2)}));
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> got_x, Read<float>(x, kN));
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> got_y, Read<float>(y, kN));
  // x is 3, not 4: the recorded increment did not run.
  EXPECT_EQ(got_x, std::vector<float>(kN, 3.0f));
  EXPECT_EQ(got_y, std::vector<float>(kN, 6.0f));
  // An eager allocation, write and copy, then a Synchronize: all at once, recording open.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr z, backend().Allocate(0, kN * sizeof(float)));
  DA_ASSERT_OK(Write(z, std::vector<float>(kN, 7.0f)));
  DA_ASSERT_OK(backend().Copy(DType::kFloat32, {BoxCopy{Whole(z, kN), Whole(y, kN)}}));
  DA_ASSERT_OK(backend().Synchronize());
  DA_ASSERT_OK_AND_ASSIGN(got_y, Read<float>(y, kN));
  EXPECT_EQ(got_y, std::vector<float>(kN, 7.0f));
  // Recorded after all that: y += x.
  DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, y, kN,
                                      {ArrayArg(y), ArrayArg(x)}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  recording.reset();

  // The graph holds the two recorded ops only: none of the eager fill, product or copy.
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE(replay);
    DA_ASSERT_OK(Write(x, std::vector<float>(kN, 10.0f)));
    DA_ASSERT_OK(Write(y, std::vector<float>(kN, 100.0f)));
    DA_ASSERT_OK(graph->Launch({x, y}, {x, y}));
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
    EXPECT_EQ(stats.iterations, 0);
    DA_ASSERT_OK_AND_ASSIGN(got_x, Read<float>(x, kN));
    DA_ASSERT_OK_AND_ASSIGN(got_y, Read<float>(y, kN));
    EXPECT_EQ(got_x, std::vector<float>(kN, 11.0f));
    EXPECT_EQ(got_y, std::vector<float>(kN, 111.0f));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RecorderConformanceTest, ::testing::Values("host", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace distarray
