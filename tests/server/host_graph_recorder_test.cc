// The host backend's graph recorder in-process, its own cases: the recorder's ledger, one
// device's refusals, and the nesting checks. The work to record goes to the recording object;
// inputs are set up and results read on the backend, eagerly. The cases every recorder must pass,
// on the host and on CUDA, are in recorder_conformance_test.cc.
#include "server/host/host_graph_recorder.h"

#include <gtest/gtest.h>

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
#include "tests/support/count_loop_reference.h"
#include "tests/support/in_process_backend.h"

namespace distarray {
namespace {

using testing::AllOf;
using testing::ArrayArg;
using testing::HostLoop;
using testing::Mod7;
using testing::RunCountLoopOnHost;
using testing::ScalarArg;
using testing::Whole;

// A FAILED_PRECONDITION whose message names `call`: a misuse of the recording (its nesting, or a
// call after Finish).
void ExpectRefused(const absl::Status& status, const std::string& call) {
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find(call), absl::string_view::npos) << status;
}

// An INTERNAL whose message names `call`: work the recording cannot hold, which the recorder's
// Unsupported (asked before recording) keeps from it.
void ExpectNotHeld(const absl::Status& status, const std::string& call) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
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

  absl::StatusOr<std::unique_ptr<RecordedGraph>> RecordCountLoop(const BufferPtr& a, int64_t n,
                                                                 double limit, int64_t cap) {
    return testing::RecordCountLoop(*recorder_, a, n, limit, cap);
  }

  std::unique_ptr<HostBackend> backend_;
  GraphRecorder* recorder_ = nullptr;
};

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

TEST_F(HostGraphRecorderTest, WhileReadsEntryAndExitFlagsSeparately) {
  // The entry flag is true, the body writes `false` into another buffer, which EndWhile names:
  // one iteration. The entry flag, true throughout, must not be read after the body.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr entry, Flag(true));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr count, Upload(std::vector<float>{0}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr exit, recording->Allocate(0, 1));
  DA_ASSERT_OK(recording->BeginWhile(entry, 10));
  DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, count, 1,
                                      {ArrayArg(count), ScalarArg(1)}));
  DA_ASSERT_OK(recording->FillConstant(DType::kBool, Whole(exit, 1), Scalar::Bool(false)));
  DA_ASSERT_OK(recording->EndWhile(exit));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  DA_ASSERT_OK(graph->Launch({entry, count}, {count}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
  EXPECT_EQ(stats.iterations, 1);
  EXPECT_FALSE(stats.hit_iteration_cap);
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> value, Read<float>(count, 1));
  EXPECT_EQ(value[0], 1.0f);
}

TEST_F(HostGraphRecorderTest, RefusesOtherDevicesWork) {
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr on0, Upload(std::vector<float>{1, 2}));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr on1, Upload(std::vector<float>{3, 4}, 1));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  ExpectNotHeld(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, on1, 2,
                                       {ArrayArg(on1), ScalarArg(1)}),
                "Elementwise");
  // Work for device 0 that reads a buffer of device 1.
  ExpectNotHeld(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, on0, 2,
                                       {ArrayArg(on1), ScalarArg(1)}),
                "Elementwise");
  ExpectNotHeld(recording->FillConstant(DType::kFloat32, Whole(on1, 2), Scalar::Float(0)),
                "FillConstant");
  ExpectNotHeld(recording->Copy(DType::kFloat32, {BoxCopy{Whole(on1, 2), Whole(on0, 2)}}), "Copy");
  ExpectNotHeld(recording->Allocate(1, 8).status(), "Allocate");
  // A condition on another device's buffer.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag1, Flag(true, 1));
  ExpectNotHeld(recording->BeginWhile(flag1, 3), "BeginWhile");
  ExpectNotHeld(recording->BeginIf(flag1), "BeginIf");

  // Another thread uses the backend as usual meanwhile, on the recorded device too.
  std::thread other([&] {
    DA_ASSERT_OK(Write(on0, std::vector<float>{5, 6}));
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> values, Read<float>(on0, 2));
    EXPECT_EQ(values, (std::vector<float>{5, 6}));
    DA_ASSERT_OK(backend().Synchronize());
  });
  other.join();

  // What was refused left the recording intact: it still records and finishes.
  DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, on0, 2,
                                      {ArrayArg(on0), ScalarArg(1)}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
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
  ExpectNotHeld(recording->BeginWhile(flag1, 3), "BeginWhile");
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
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, recording->Allocate(0, 1));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr scratch, recording->Allocate(0, 1 << 20));
    DA_ASSERT_OK(recording->FillConstant(DType::kBool, Whole(flag, 1), Scalar::Bool(true)));
    DA_ASSERT_OK(recording->BeginWhile(flag, 10));
    DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a, 1000,
                                        {ArrayArg(a), ScalarArg(1)}));
    EXPECT_GT(used(), used_before);
    // Dropped with a loop still open, without Finish.
  }
  EXPECT_EQ(used(), used_before);
  // Nothing of it ran.
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
  DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(temp, 64), Scalar::Float(5)));
  DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, out, 64,
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
