// The host backend's graph recorder in-process: loops and branches recorded once with the
// backend's own calls, replayed on a simulated device's stream, and checked against plain C++
// references. The same cases as graph_recorder_test.cc runs on CUDA, so CI exercises the
// recording path without a GPU.
#include "server/host/host_graph_recorder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/box.h"
#include "common/status_macros.h"
#include "server/backend/graph_recorder.h"
#include "server/backend/memory_ledger.h"
#include "server/host/host_backend.h"
#include "tests/support/in_process_backend.h"

namespace distarray {
namespace {

using testing::AllOf;
using testing::ArrayArg;
using testing::CancelledAfter;
using testing::ScalarArg;
using testing::Whole;

// A FAILED_PRECONDITION whose message names `call`.
void ExpectRefused(const absl::Status& status, const std::string& call) {
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find(call), absl::string_view::npos) << status;
}

absl::Status Alive() { return absl::OkStatus(); }

// bool as the devices store it, without std::vector<bool>'s bit packing.
using bool8 = unsigned char;

class HostGraphRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostBackend::Options options;
    options.device_count = 2;
    options.memory_limit_bytes = int64_t{64} << 20;
    DA_ASSERT_OK_AND_ASSIGN(backend_, HostBackend::Create(options));
    recorder_ = backend_->graph_recorder();
    ASSERT_NE(recorder_, nullptr);
  }

  Backend& backend() { return *backend_; }
  int64_t used(int device = 0) const { return backend_->memory(device).used_bytes; }

  template <typename T>
  absl::StatusOr<BufferPtr> Upload(const std::vector<T>& values, int device = 0) {
    ASSIGN_OR_RETURN(BufferPtr buffer,
                     backend_->Allocate(device, static_cast<int64_t>(values.size() * sizeof(T))));
    RETURN_IF_ERROR(Write(buffer, values));
    return buffer;
  }
  template <typename T>
  absl::Status Write(const BufferPtr& buffer, const std::vector<T>& values) {
    return backend_->WriteFromHost(buffer, 0, values.data(),
                                   static_cast<int64_t>(values.size() * sizeof(T)));
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> Read(const BufferPtr& buffer, int64_t n) {
    std::vector<T> values(n);
    ASSIGN_OR_RETURN(
        std::unique_ptr<PendingRead> read,
        backend_->ReadToHost(buffer, 0, n * static_cast<int64_t>(sizeof(T)), values.data()));
    RETURN_IF_ERROR(read->Wait());
    return values;
  }
  absl::StatusOr<BufferPtr> Flag(bool value, int device = 0) {
    return Upload(std::vector<bool8>{value}, device);
  }

  // Records the seed loop: flag = all(a < limit); while flag (at most `cap` times) { a = a + 1;
  // flag = all(a < limit) }. The temporaries are allocated while recording: graph slots.
  absl::StatusOr<std::unique_ptr<RecordedGraph>> RecordCountLoop(const BufferPtr& a, int64_t n,
                                                                 double limit, int64_t cap) {
    ASSIGN_OR_RETURN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
    ASSIGN_OR_RETURN(BufferPtr less, backend_->Allocate(0, n));
    ASSIGN_OR_RETURN(BufferPtr flag, backend_->Allocate(0, 1));
    auto condition = [&]() -> absl::Status {
      RETURN_IF_ERROR(backend_->Elementwise(ElementwiseOpId::kLess, DType::kFloat32, less, n,
                                            {ArrayArg(a), ScalarArg(limit)}));
      return backend_->Reduce(ReduceKind::kAll, DType::kBool, less, AllOf(n), flag, 1, nullptr);
    };
    RETURN_IF_ERROR(condition());
    RETURN_IF_ERROR(recording->BeginWhile(flag, cap));
    RETURN_IF_ERROR(backend_->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a, n,
                                          {ArrayArg(a), ScalarArg(1)}));
    RETURN_IF_ERROR(condition());
    RETURN_IF_ERROR(recording->EndWhile(flag));
    return recording->Finish();
  }

  std::unique_ptr<HostBackend> backend_;
  GraphRecorder* recorder_ = nullptr;
};

// The seed loop on the host: the reference, and the iterations it ran.
struct HostLoop {
  std::vector<float> a;
  int64_t iterations = 0;
  bool hit_cap = false;
};
HostLoop RunCountLoopOnHost(std::vector<float> a, float limit, int64_t cap) {
  auto all_less = [&] {
    for (float v : a) {
      if (!(v < limit)) return false;
    }
    return true;
  };
  HostLoop out;
  bool flag = all_less();
  while (flag) {
    if (out.iterations == cap) {
      out.hit_cap = true;
      break;
    }
    for (float& v : a) v += 1;
    ++out.iterations;
    flag = all_less();
  }
  out.a = std::move(a);
  return out;
}

std::vector<float> Mod7(int64_t n, float offset) {
  std::vector<float> a(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 7) + offset;
  return a;
}

TEST_F(HostGraphRecorderTest, SeedLoopReplaysMatchHost) {
  constexpr int64_t kN = 10000;
  const std::vector<float> initial = Mod7(kN, 0);
  const HostLoop expected = RunCountLoopOnHost(initial, 1000, 1 << 20);
  ASSERT_EQ(expected.iterations, 994);
  const int64_t used_before = used();
  {
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(initial));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph,
                            RecordCountLoop(a, kN, 1000, 1 << 20));
    EXPECT_EQ(graph->devices(), std::vector<int>{0});
    // Recording ran nothing: the input is as uploaded.
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> before, Read<float>(a, kN));
    EXPECT_EQ(before, initial);
    // The slots allocated while recording (less, flag) stay charged with the graph.
    EXPECT_EQ(used(), used_before + MemoryLedger::Charge(kN * 4) + MemoryLedger::Charge(kN) +
                          MemoryLedger::Charge(1));
    for (int replay = 0; replay < 2; ++replay) {
      SCOPED_TRACE(replay);
      DA_ASSERT_OK(Write(a, initial));
      DA_ASSERT_OK(graph->Launch({a}, {a}));
      DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
      EXPECT_EQ(stats.iterations, expected.iterations);
      EXPECT_FALSE(stats.hit_iteration_cap);
      EXPECT_FALSE(stats.cancelled);
      DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(a, kN));
      EXPECT_EQ(result, expected.a);
    }
  }
  // The graph's slots went back with it (once the stream let go of the last replay).
  DA_ASSERT_OK(backend().Synchronize());
  EXPECT_EQ(used(), used_before);
}

TEST_F(HostGraphRecorderTest, ZeroIterationsWhenFlagStartsFalse) {
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

TEST_F(HostGraphRecorderTest, IterationCapStopsLoop) {
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

TEST_F(HostGraphRecorderTest, IfElsePicksBranch) {
  constexpr int64_t kN = 256;
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, Flag(false));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr out, Upload(std::vector<float>(kN, -1.0f)));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  // if (flag) out = 1 else out = 2; if (flag) out += 10 (no else).
  DA_ASSERT_OK(recording->BeginIf(flag));
  DA_ASSERT_OK(backend().FillConstant(DType::kFloat32, Whole(out, kN), Scalar::Float(1)));
  DA_ASSERT_OK(recording->Else());
  DA_ASSERT_OK(backend().FillConstant(DType::kFloat32, Whole(out, kN), Scalar::Float(2)));
  DA_ASSERT_OK(recording->EndIf());
  DA_ASSERT_OK(recording->BeginIf(flag));
  DA_ASSERT_OK(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, out, kN,
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

TEST_F(HostGraphRecorderTest, NestedLoops) {
  // o = 0; total = 0; while (o < 3) { b = 0; while (b < 4) { b += 1; total += 1 } o += 1 }
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr o, Upload(std::vector<float>{0}));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr total, Upload(std::vector<float>{0}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr outer_flag, backend().Allocate(0, 1));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr inner_flag, backend().Allocate(0, 1));
  auto less = [&](const BufferPtr& flag, const BufferPtr& x, double limit) {
    return backend().Elementwise(ElementwiseOpId::kLess, DType::kFloat32, flag, 1,
                                 {ArrayArg(x), ScalarArg(limit)});
  };
  auto increment = [&](const BufferPtr& x) {
    return backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, x, 1,
                                 {ArrayArg(x), ScalarArg(1)});
  };
  DA_ASSERT_OK(less(outer_flag, o, 3));
  DA_ASSERT_OK(recording->BeginWhile(outer_flag, 100));
  {
    // Allocated inside a loop body: made at once, once, and dropped here by the caller; the
    // graph keeps it.
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr b, backend().Allocate(0, sizeof(float)));
    DA_ASSERT_OK(backend().FillConstant(DType::kFloat32, Whole(b, 1), Scalar::Float(0)));
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

TEST_F(HostGraphRecorderTest, WhileReadsEntryAndExitFlagsSeparately) {
  // The entry flag is true, the body writes `false` into another buffer, which EndWhile names:
  // one iteration. The entry flag, true throughout, must not be read after the body.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr entry, Flag(true));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr count, Upload(std::vector<float>{0}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr exit, backend().Allocate(0, 1));
  DA_ASSERT_OK(recording->BeginWhile(entry, 10));
  DA_ASSERT_OK(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, count, 1,
                                     {ArrayArg(count), ScalarArg(1)}));
  DA_ASSERT_OK(backend().FillConstant(DType::kBool, Whole(exit, 1), Scalar::Bool(false)));
  DA_ASSERT_OK(recording->EndWhile(exit));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  DA_ASSERT_OK(graph->Launch({entry, count}, {count}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
  EXPECT_EQ(stats.iterations, 1);
  EXPECT_FALSE(stats.hit_iteration_cap);
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> value, Read<float>(count, 1));
  EXPECT_EQ(value[0], 1.0f);
}

TEST_F(HostGraphRecorderTest, GemmInsideLoop) {
  // c = a @ b, then a = c, twice: a 2x2 matrix squared twice is its fourth power.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(std::vector<float>{1, 1, 0, 1}));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr go, Flag(true));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr c, backend().Allocate(0, 4 * sizeof(float)));
  DA_ASSERT_OK(recording->BeginWhile(go, 2));
  DA_ASSERT_OK(backend().Gemm(DType::kFloat32, a, a, c, 2, 2, 2, false));
  DA_ASSERT_OK(backend().Cast(DType::kFloat32, DType::kFloat32, c, a, 4));
  DA_ASSERT_OK(recording->EndWhile(go));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  DA_ASSERT_OK(graph->Launch({a, go}, {a}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
  EXPECT_EQ(stats.iterations, 2);
  EXPECT_TRUE(stats.hit_iteration_cap);
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(a, 4));
  EXPECT_EQ(result, (std::vector<float>{1, 4, 0, 1}));
}

TEST_F(HostGraphRecorderTest, CancelStopsRunningLoop) {
  constexpr int64_t kN = 1024;
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, Flag(true));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(std::vector<float>(kN, 0.0f)));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  // The flag never changes: only the cap (out of reach) or the cancel word ends the loop.
  DA_ASSERT_OK(recording->BeginWhile(flag, 1'000'000'000));
  DA_ASSERT_OK(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a, kN,
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

TEST_F(HostGraphRecorderTest, RefusesOtherDevicesAndHostTransfers) {
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr on0, Upload(std::vector<float>{1, 2}));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr on1, Upload(std::vector<float>{3, 4}, 1));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  ExpectRefused(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, on1, 2,
                                      {ArrayArg(on1), ScalarArg(1)}),
                "Elementwise");
  // Work for device 0 that reads a buffer of device 1.
  ExpectRefused(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, on0, 2,
                                      {ArrayArg(on1), ScalarArg(1)}),
                "Elementwise");
  ExpectRefused(backend().FillConstant(DType::kFloat32, Whole(on1, 2), Scalar::Float(0)),
                "FillConstant");
  ExpectRefused(backend().Copy(DType::kFloat32, {BoxCopy{Whole(on1, 2), Whole(on0, 2)}}), "Copy");
  ExpectRefused(backend().Allocate(1, 8).status(), "Allocate");
  float host[2];
  ExpectRefused(backend().ReadToHost(on0, 0, sizeof(host), host).status(), "ReadToHost");
  ExpectRefused(backend().WriteFromHost(on0, 0, host, sizeof(host)), "WriteFromHost");
  ExpectRefused(backend().Synchronize(), "Synchronize");
  ExpectRefused(recorder_->Begin(0).status(), "Begin");

  // Another thread uses the backend as usual meanwhile, on the recorded device too.
  std::thread other([&] {
    DA_ASSERT_OK(Write(on0, std::vector<float>{5, 6}));
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> values, Read<float>(on0, 2));
    EXPECT_EQ(values, (std::vector<float>{5, 6}));
    DA_ASSERT_OK(backend().Synchronize());
  });
  other.join();

  // What was refused left the recording intact: it still records and finishes.
  DA_ASSERT_OK(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, on0, 2,
                                     {ArrayArg(on0), ScalarArg(1)}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  // After Finish the thread records no more.
  DA_ASSERT_OK(graph->Launch({on0}, {on0}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
  EXPECT_EQ(stats.iterations, 0);
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> values, Read<float>(on0, 2));
  EXPECT_EQ(values, (std::vector<float>{6, 7}));
  DA_ASSERT_OK_AND_ASSIGN(values, Read<float>(on1, 2));
  EXPECT_EQ(values, (std::vector<float>{3, 4}));
}

TEST_F(HostGraphRecorderTest, MismatchedNestingIsRefused) {
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, Flag(true));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag1, Flag(true, 1));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  ExpectRefused(recording->EndWhile(flag), "EndWhile");
  ExpectRefused(recording->EndIf(), "EndIf");
  ExpectRefused(recording->Else(), "Else");
  ExpectRefused(recording->BeginWhile(flag1, 3), "BeginWhile");
  EXPECT_EQ(recording->BeginWhile(flag, 0).code(), absl::StatusCode::kInvalidArgument);
  DA_ASSERT_OK(recording->BeginWhile(flag, 3));
  ExpectRefused(recording->EndIf(), "EndIf");
  ExpectRefused(recording->Else(), "Else");
  DA_ASSERT_OK(recording->BeginIf(flag));
  ExpectRefused(recording->EndWhile(flag), "EndWhile");
  DA_ASSERT_OK(recording->Else());
  ExpectRefused(recording->Else(), "Else");
  ExpectRefused(recording->Finish().status(), "Finish");
  DA_ASSERT_OK(recording->EndIf());
  DA_ASSERT_OK(recording->EndWhile(flag));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  ExpectRefused(recording->BeginIf(flag), "BeginIf");
  ExpectRefused(recording->Finish().status(), "Finish");
}

TEST_F(HostGraphRecorderTest, AbandonedRecordingFreesEverything) {
  const std::vector<float> initial = Mod7(1000, 0);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(initial));
  DA_ASSERT_OK(backend().Synchronize());
  const int64_t used_before = used();
  {
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, backend().Allocate(0, 1));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr scratch, backend().Allocate(0, 1 << 20));
    DA_ASSERT_OK(backend().FillConstant(DType::kBool, Whole(flag, 1), Scalar::Bool(true)));
    DA_ASSERT_OK(recording->BeginWhile(flag, 10));
    DA_ASSERT_OK(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a, 1000,
                                       {ArrayArg(a), ScalarArg(1)}));
    EXPECT_GT(used(), used_before);
    // Dropped with a loop still open, without Finish.
  }
  EXPECT_EQ(used(), used_before);
  // Nothing of it ran, and the thread is back to running its work at once.
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> values, Read<float>(a, 1000));
  EXPECT_EQ(values, initial);
  DA_ASSERT_OK(backend().Synchronize());
  // And it may record again.
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, RecordCountLoop(a, 1000, 1000, 5));
  DA_ASSERT_OK(graph->Launch({a}, {a}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
  EXPECT_EQ(stats.iterations, 5);
}

TEST_F(HostGraphRecorderTest, BuffersDroppedWhileRecordingStayWithTheGraph) {
  // A buffer allocated before recording and released by the caller afterwards: the recorded
  // work still writes it on every replay, so the graph keeps it (and its bytes stay charged).
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr out, Upload(std::vector<float>(64, 0.0f)));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr temp, backend().Allocate(0, 64 * sizeof(float)));
  DA_ASSERT_OK(backend().Synchronize());
  const int64_t used_with_temp = used();
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  DA_ASSERT_OK(backend().FillConstant(DType::kFloat32, Whole(temp, 64), Scalar::Float(5)));
  DA_ASSERT_OK(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, out, 64,
                                     {ArrayArg(temp), ScalarArg(1)}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  recording.reset();
  temp.reset();
  EXPECT_EQ(used(), used_with_temp);
  DA_ASSERT_OK(graph->Launch({}, {out}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
  EXPECT_EQ(stats.iterations, 0);
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> values, Read<float>(out, 64));
  EXPECT_EQ(values, std::vector<float>(64, 6.0f));
  graph.reset();
  DA_ASSERT_OK(backend().Synchronize());
  EXPECT_EQ(used(), used_with_temp - MemoryLedger::Charge(64 * sizeof(float)));
}

}  // namespace
}  // namespace distarray
