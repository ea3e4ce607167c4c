// The CUDA backend's graph recorder in-process, its own cases: recordings over several GPUs (their
// agreement through peer memory or NCCL, copies between them, a replay started on some devices
// only), and capture next to eager work on other threads. The work to record goes to the
// recording object; inputs are set up and results read on the backend, eagerly. The cases every
// recorder must pass, on the host and on CUDA, are in recorder_conformance_test.cc. Where no GPU
// is usable the tests skip, unless DISTARRAY_REQUIRE_BACKENDS names "cuda" (the rule of
// tests/support/backend_fixture.h): then they fail, so a GPU run cannot pass with them skipped.
#include <gtest/gtest.h>

#ifdef DISTARRAY_HAVE_CUDA

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "common/box.h"
#include "common/status_macros.h"
#include "server/backend/graph_recorder.h"
#include "server/cuda/cuda_backend.h"
#include "server/cuda/graph/agreement_mode.h"
#include "server/cuda/graph/recorded_graph.h"
#include "tests/support/count_loop_reference.h"
#include "tests/support/in_process_backend.h"

namespace distarray {
namespace {

using testing::AllOf;
using testing::ArrayArg;
using testing::CancelledAfter;
using testing::HostLoop;
using testing::Mod7;
using testing::RunCountLoopOnHost;
using testing::ScalarArg;
using testing::Whole;

absl::Status Alive() { return absl::OkStatus(); }

class GraphRecorderTest : public ::testing::Test {
 protected:
  // One backend for the suite: creating one sets up NCCL over every GPU.
  static void SetUpTestSuite() {
    auto created = CudaBackend::Create(CudaBackend::Options{});
    if (created.ok()) {
      backend_ = created->release();
    } else {
      create_status_ = new absl::Status(created.status());
    }
  }
  static void TearDownTestSuite() {
    delete nccl_backend_;
    nccl_backend_ = nullptr;
    delete nccl_status_;
    nccl_status_ = nullptr;
    delete backend_;
    backend_ = nullptr;
    delete create_status_;
    create_status_ = nullptr;
  }

  void SetUp() override {
    if (backend_ == nullptr) {
      ASSERT_EQ(create_status_->code(), absl::StatusCode::kUnavailable) << *create_status_;
      if (testing::BackendRequired("cuda")) {
        GTEST_FAIL() << "backend cuda unavailable, and required (DISTARRAY_REQUIRE_BACKENDS): "
                     << create_status_->message();
      }
      GTEST_SKIP() << "backend cuda unavailable: " << create_status_->message();
    }
    recorder_ = backend_->graph_recorder();
    ASSERT_NE(recorder_, nullptr);
  }

  Backend& backend() { return *backend_; }

  // A recorder over devices 0 and 1, and the backend whose buffers it records (the one to set up
  // inputs and read results on).
  struct TwoDeviceRecorder {
    std::string agreement;
    Backend* eager;
    GraphRecorder* recorder;
  };
  // The recorders over devices 0 and 1, by how their devices agree: the backend's own (peer
  // memory, where the GPUs have peer access) and one agreeing through NCCL all-reduces, as GPUs
  // without peer access do. The NCCL one is a second backend's, made with that agreement (a
  // recorder is the backend's, over its devices and buffers).
  std::vector<TwoDeviceRecorder> TwoDeviceRecorders() {
    std::vector<TwoDeviceRecorder> recorders;
    if (recorder_->CanRecord(std::vector<int>{0, 1})) {
      recorders.push_back({"peer", backend_, recorder_});
    }
    if (nccl_backend_ == nullptr && nccl_status_ == nullptr) {
      CudaBackend::Options options;
      options.graph_agreement = GraphAgreement::kNccl;
      auto created = CudaBackend::Create(options);
      if (created.ok()) {
        nccl_backend_ = created->release();
      } else {
        nccl_status_ = new absl::Status(created.status());
      }
    }
    if (nccl_backend_ != nullptr) {
      recorders.push_back({"nccl", nccl_backend_, nccl_backend_->graph_recorder()});
    } else {
      ADD_FAILURE() << "a backend agreeing through NCCL: " << *nccl_status_;
    }
    return recorders;
  }

  template <typename T>
  static absl::StatusOr<BufferPtr> UploadOn(Backend& on, const std::vector<T>& values,
                                            int device = 0) {
    return testing::UploadTo(on, values, device);
  }
  template <typename T>
  static absl::Status WriteOn(Backend& on, const BufferPtr& buffer, const std::vector<T>& values) {
    return on.WriteFromHost(buffer, 0, values.data(),
                            static_cast<int64_t>(values.size() * sizeof(T)));
  }
  template <typename T>
  static absl::StatusOr<std::vector<T>> ReadOn(Backend& on, const BufferPtr& buffer, int64_t n) {
    return testing::ReadFrom<T>(on, buffer, n);
  }
  template <typename T>
  absl::StatusOr<BufferPtr> Upload(const std::vector<T>& values, int device = 0) {
    return UploadOn(*backend_, values, device);
  }
  template <typename T>
  absl::Status Write(const BufferPtr& buffer, const std::vector<T>& values) {
    return WriteOn(*backend_, buffer, values);
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> Read(const BufferPtr& buffer, int64_t n) {
    return ReadOn<T>(*backend_, buffer, n);
  }
  absl::StatusOr<BufferPtr> Flag(bool value) { return Upload(std::vector<bool8>{value}); }

  absl::StatusOr<std::unique_ptr<RecordedGraph>> RecordCountLoop(const BufferPtr& a, int64_t n,
                                                                 double limit, int64_t cap) {
    return testing::RecordCountLoop(*recorder_, a, n, limit, cap);
  }

  // bool as the device stores it, without std::vector<bool>'s bit packing.
  using bool8 = unsigned char;

  static CudaBackend* backend_;
  static CudaBackend* nccl_backend_;  // made on first use by TwoDeviceRecorders
  static absl::Status* nccl_status_;  // why it could not be made
  static absl::Status* create_status_;
  GraphRecorder* recorder_ = nullptr;
};

CudaBackend* GraphRecorderTest::backend_ = nullptr;
CudaBackend* GraphRecorderTest::nccl_backend_ = nullptr;
absl::Status* GraphRecorderTest::nccl_status_ = nullptr;
absl::Status* GraphRecorderTest::create_status_ = nullptr;

TEST_F(GraphRecorderTest, WhileLoopReplaysMatchHost) {
  constexpr int64_t kN = 100000;
  const std::vector<float> initial = Mod7(kN, 0);
  const HostLoop expected = RunCountLoopOnHost(initial, 1000, 1 << 20);
  ASSERT_EQ(expected.iterations, 994);
  const int64_t used_before = backend().memory(0).used_bytes;
  {
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a, Upload(initial));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph,
                            RecordCountLoop(a, kN, 1000, 1 << 20));
    EXPECT_EQ(graph->devices(), std::vector<int>{0});
    // Recording ran nothing: the input is as uploaded.
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> before, Read<float>(a, kN));
    EXPECT_EQ(before, initial);
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
  // The graph's slots (allocated while recording) went back with it.
  DA_ASSERT_OK(backend().Synchronize());
  EXPECT_EQ(backend().memory(0).used_bytes, used_before);
}

TEST_F(GraphRecorderTest, RefusesWhatItCannotRecord) {
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr x, Upload(std::vector<float>(16, 1.0f)));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  auto expect_refused = [](const absl::Status& status, const std::string& call) {
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_NE(status.message().find(call), std::string::npos) << status;
  };
  // (Host transfers and Synchronize are not refused at run time: a recording has no such calls,
  // recorder_conformance_test.cc checks so at compile time. A second recording may be open at
  // once: the same file's TwoRecordingsOpenAtOnceReplayTheirOwnWork.)
  expect_refused(recording->EndWhile(x), "EndWhile");
  expect_refused(recording->Else(), "Else");
  expect_refused(recording->EndIf(), "EndIf");
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, recording->Allocate(0, 1));
  DA_ASSERT_OK(recording->FillConstant(DType::kBool, Whole(flag, 1), Scalar::Bool(false)));
  DA_ASSERT_OK(recording->BeginWhile(flag, 3));
  expect_refused(recording->Finish().status(), "Finish");
  expect_refused(recording->EndIf(), "EndIf");
  DA_ASSERT_OK(recording->EndWhile(flag));
  // Refused calls recorded nothing and left the recording usable.
  DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(x, 16), Scalar::Float(5)));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  expect_refused(recording->BeginIf(flag), "finished");
  recording.reset();
  DA_ASSERT_OK(graph->Launch({}, {x}));
  DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
  EXPECT_EQ(stats.iterations, 0);
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(x, 16));
  EXPECT_EQ(result, std::vector<float>(16, 5.0f));
}

TEST_F(GraphRecorderTest, RefusesOtherDevicesWork) {
  if (backend().device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr x, Upload(std::vector<float>(16, 1.0f), 0));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr y, Upload(std::vector<float>(16, 2.0f), 1));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  // Work the recording cannot hold is INTERNAL, naming the call: the program runner asks the
  // recorder (Unsupported) before recording, so such work reaching a recording is a bug.
  auto expect_not_held = [](const absl::Status& status, const std::string& call) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
    EXPECT_NE(status.message().find(call), std::string::npos) << status;
  };
  expect_not_held(recording->Allocate(1, 64).status(), "Allocate");
  expect_not_held(recording->FillConstant(DType::kFloat32, Whole(y, 16), Scalar::Float(3)),
                  "FillConstant");
  // Work for device 0 that reads a buffer of device 1.
  expect_not_held(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, x, 16,
                                         {ArrayArg(y), ScalarArg(1)}),
                  "Elementwise");
  BoxCopy copy{Whole(x, 16), Whole(y, 16)};
  expect_not_held(recording->Copy(DType::kFloat32, {copy}), "Copy");
  // A same-device copy is recorded.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr z, recording->Allocate(0, 16 * sizeof(float)));
  DA_ASSERT_OK(recording->Copy(DType::kFloat32, {BoxCopy{Whole(x, 16), Whole(z, 16)}}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  recording.reset();
  DA_ASSERT_OK(graph->Launch({x}, {}));
  DA_ASSERT_OK(graph->Wait(Alive).status());
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(y, 16));
  EXPECT_EQ(result, std::vector<float>(16, 2.0f));
  DA_ASSERT_OK_AND_ASSIGN(result, Read<float>(z, 16));
  EXPECT_EQ(result, std::vector<float>(16, 1.0f));
}

// One graph per device: each device counts its own half, and the devices agree on the loop's
// condition (the AND of their partials) on every iteration, so both halves run exactly as many
// iterations as the whole array needs, the device whose half reaches the limit first included.
// A second replay (the agreement's epochs restart) gives the same answer.
TEST_F(GraphRecorderTest, TwoDevicesAgreeOnTheirLoop) {
  if (backend().device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  for (const auto& [agreement, eager, recorder] : TwoDeviceRecorders()) {
    SCOPED_TRACE(agreement);
    constexpr int64_t kN = 3000;
    std::vector<float> low(kN), high(kN);
    for (int64_t i = 0; i < kN; ++i) {
      low[i] = static_cast<float>(i % 7);
      high[i] = static_cast<float>(10 + i % 11);  // device 1's partial turns false first
    }
    const float limit = 200;
    std::vector<float> whole = low;
    whole.insert(whole.end(), high.begin(), high.end());
    const HostLoop expected = RunCountLoopOnHost(whole, limit, 1000);
    ASSERT_GT(expected.iterations, 100);

    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a0, UploadOn(*eager, low, 0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a1, UploadOn(*eager, high, 1));
    std::vector<BufferPtr> a = {a0, a1}, less(2), flag(2);
    const std::vector<int> devices = {0, 1};
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder->Begin(devices));
    auto condition = [&]() -> absl::Status {
      for (int d = 0; d < 2; ++d) {
        RETURN_IF_ERROR(recording->Elementwise(ElementwiseOpId::kLess, DType::kFloat32, less[d], kN,
                                               {ArrayArg(a[d]), ScalarArg(limit)}));
        RETURN_IF_ERROR(recording->Reduce(ReduceKind::kAll, DType::kBool, less[d], AllOf(kN),
                                          flag[d], 1, nullptr));
      }
      return absl::OkStatus();
    };
    for (int d = 0; d < 2; ++d) {
      DA_ASSERT_OK_AND_ASSIGN(less[d], recording->Allocate(d, kN));
      DA_ASSERT_OK_AND_ASSIGN(flag[d], recording->Allocate(d, 1));
    }
    ConditionFlags flags;
    flags.buffers = flag;
    DA_ASSERT_OK(condition());
    DA_ASSERT_OK(recording->BeginWhile(flags, 1000));
    for (int d = 0; d < 2; ++d) {
      DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a[d], kN,
                                          {ArrayArg(a[d]), ScalarArg(1)}));
    }
    DA_ASSERT_OK(condition());
    DA_ASSERT_OK(recording->EndWhile(flags));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
    recording.reset();
    EXPECT_EQ(graph->devices(), devices);

    for (int replay = 0; replay < 2; ++replay) {
      SCOPED_TRACE(replay);
      DA_ASSERT_OK(WriteOn(*eager, a0, low));
      DA_ASSERT_OK(WriteOn(*eager, a1, high));
      DA_ASSERT_OK(graph->Launch({a0, a1}, {a0, a1}));
      DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
      EXPECT_EQ(stats.iterations, expected.iterations);
      EXPECT_FALSE(stats.hit_iteration_cap);
      DA_ASSERT_OK_AND_ASSIGN(std::vector<float> got0, ReadOn<float>(*eager, a0, kN));
      DA_ASSERT_OK_AND_ASSIGN(std::vector<float> got1, ReadOn<float>(*eager, a1, kN));
      got0.insert(got0.end(), got1.begin(), got1.end());
      EXPECT_EQ(got0, expected.a);
    }
  }
}

// A condition held by one device only: the other abstains and takes its decision (an IF over
// both devices, then a loop whose flag lives on device 1 only), and a cancel stops both devices'
// loops; the next replay starts clean.
TEST_F(GraphRecorderTest, TwoDevicesFollowOneDevicesFlagAndStopTogether) {
  if (backend().device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  for (const auto& [agreement, eager, recorder] : TwoDeviceRecorders()) {
    SCOPED_TRACE(agreement);
    constexpr int64_t kN = 512;
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a0, UploadOn(*eager, std::vector<float>(kN, 0.0f), 0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a1, UploadOn(*eager, std::vector<float>(kN, 0.0f), 1));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr go, UploadOn(*eager, std::vector<bool8>{1}, 1));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording,
                            recorder->Begin(std::vector<int>{0, 1}));
    // if go: a0 = 5, a1 = 5 else: a0 = 7, a1 = 7
    DA_ASSERT_OK(recording->BeginIf(go));
    for (const BufferPtr& a : {a0, a1}) {
      DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(a, kN), Scalar::Float(5)));
    }
    DA_ASSERT_OK(recording->Else());
    for (const BufferPtr& a : {a0, a1}) {
      DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(a, kN), Scalar::Float(7)));
    }
    DA_ASSERT_OK(recording->EndIf());
    // while go (never changes): a0 += 1, a1 += 1; only the cap (out of reach) or a cancel ends it.
    DA_ASSERT_OK(recording->BeginWhile(go, std::numeric_limits<int64_t>::max()));
    for (const BufferPtr& a : {a0, a1}) {
      DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a, kN,
                                          {ArrayArg(a), ScalarArg(1)}));
    }
    DA_ASSERT_OK(recording->EndWhile(go));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
    recording.reset();

    DA_ASSERT_OK(graph->Launch({go}, {a0, a1}));
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<GraphRunStats> stats =
        graph->Wait(CancelledAfter(std::chrono::milliseconds(20)));
    EXPECT_EQ(stats.status().code(), absl::StatusCode::kCancelled) << stats.status();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    DA_ASSERT_OK(eager->Synchronize());
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> r0, ReadOn<float>(*eager, a0, kN));
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> r1, ReadOn<float>(*eager, a1, kN));
    EXPECT_GT(r0[0], 5.0f);  // the then branch ran, then some iterations
    EXPECT_EQ(r0, std::vector<float>(kN, r0[0]));
    EXPECT_EQ(r1, std::vector<float>(kN, r1[0]));

    // Next replay: the flag false, so the else branch and no iteration, on both devices.
    DA_ASSERT_OK(WriteOn(*eager, go, std::vector<bool8>{0}));
    DA_ASSERT_OK(graph->Launch({go}, {a0, a1}));
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats next, graph->Wait(Alive));
    EXPECT_EQ(next.iterations, 0);
    EXPECT_FALSE(next.cancelled);
    DA_ASSERT_OK_AND_ASSIGN(r0, ReadOn<float>(*eager, a0, kN));
    DA_ASSERT_OK_AND_ASSIGN(r1, ReadOn<float>(*eager, a1, kN));
    EXPECT_EQ(r0, std::vector<float>(kN, 7.0f));
    EXPECT_EQ(r1, std::vector<float>(kN, 7.0f));
  }
}

// Copies between the devices of a recording (peer reads between barriers): a value bounced
// between two GPUs every iteration, x0 = x0 + 1 on device 0, y1 = x0 copied to device 1, y1 =
// y1 * 2, x0 = y1 copied back; any copy reading before its source is written, or a source
// overwritten while it is read, shows in the result.
TEST_F(GraphRecorderTest, CopiesBetweenDevicesInsideALoop) {
  if (backend().device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  if (!recorder_->CanRecord(std::vector<int>{0, 1})) GTEST_SKIP() << "no peer access";
  for (const auto& [agreement, eager, recorder] : TwoDeviceRecorders()) {
    SCOPED_TRACE(agreement);
    constexpr int64_t kN = 1 << 20;
    constexpr int kIterations = 12;
    std::vector<float> start(kN);
    for (int64_t i = 0; i < kN; ++i) start[i] = static_cast<float>(i % 5);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr x0, UploadOn(*eager, start, 0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr y1, UploadOn(*eager, std::vector<float>(kN, 0.0f), 1));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr go, UploadOn(*eager, std::vector<bool8>{1}, 0));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording,
                            recorder->Begin(std::vector<int>{0, 1}));
    DA_ASSERT_OK(recording->BeginWhile(go, kIterations));
    DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, x0, kN,
                                        {ArrayArg(x0), ScalarArg(1)}));
    DA_ASSERT_OK(recording->Copy(DType::kFloat32, {BoxCopy{Whole(x0, kN), Whole(y1, kN)}}));
    DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kMultiply, DType::kFloat32, y1, kN,
                                        {ArrayArg(y1), ScalarArg(2)}));
    DA_ASSERT_OK(recording->Copy(DType::kFloat32, {BoxCopy{Whole(y1, kN), Whole(x0, kN)}}));
    DA_ASSERT_OK(recording->EndWhile(go));
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
    recording.reset();

    std::vector<float> expected = start;
    for (int k = 0; k < kIterations; ++k) {
      for (float& x : expected) x = (x + 1) * 2;
    }
    for (int replay = 0; replay < 2; ++replay) {
      SCOPED_TRACE(replay);
      DA_ASSERT_OK(WriteOn(*eager, x0, start));
      DA_ASSERT_OK(graph->Launch({go}, {x0, y1}));
      DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
      EXPECT_EQ(stats.iterations, kIterations);
      EXPECT_TRUE(stats.hit_iteration_cap);
      DA_ASSERT_OK_AND_ASSIGN(std::vector<float> got_x, ReadOn<float>(*eager, x0, kN));
      DA_ASSERT_OK_AND_ASSIGN(std::vector<float> got_y, ReadOn<float>(*eager, y1, kN));
      EXPECT_EQ(got_x, expected);
      EXPECT_EQ(got_y, expected);
    }
  }
}

// A replay that starts on some devices only (device 1's launch fails after device 0's graph
// started) must not leave device 0 waiting for it: the launch fails within bounded time, through
// peer memory because the waiting device reads the cancel word, through NCCL because the
// communicators are revoked. Afterwards the peer graph replays normally; the NCCL one refuses
// (UNAVAILABLE), and a new recording gets new communicators and the right answer. An NCCL
// without ncclCommRevoke (2.28.3) cannot end an all-reduce that waits for a device that never
// came: device 0's stream would stay blocked for the rest of the process (docs/graphs.md), so the
// NCCL case runs only where the library can revoke.
TEST_F(GraphRecorderTest, ReplayStartedOnOneDeviceOnlyDrains) {
  if (backend().device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  for (const auto& [agreement, eager, recorder] : TwoDeviceRecorders()) {
    if (agreement == "nccl" && !cuda::NcclClique::CanRevoke()) continue;
    SCOPED_TRACE(agreement);
    constexpr int64_t kN = 256;
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a0, UploadOn(*eager, std::vector<float>(kN, 0.0f), 0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr a1, UploadOn(*eager, std::vector<float>(kN, 0.0f), 1));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr go, UploadOn(*eager, std::vector<bool8>{1}, 1));
    auto record = [&]() -> absl::StatusOr<std::unique_ptr<RecordedGraph>> {
      ASSIGN_OR_RETURN(std::unique_ptr<GraphRecording> recording,
                       recorder->Begin(std::vector<int>{0, 1}));
      // while go (never changes, cap out of reach): a0 += 1, a1 += 1
      RETURN_IF_ERROR(recording->BeginWhile(go, int64_t{1} << 40));
      for (const BufferPtr& a : {a0, a1}) {
        RETURN_IF_ERROR(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a, kN,
                                               {ArrayArg(a), ScalarArg(1)}));
      }
      RETURN_IF_ERROR(recording->EndWhile(go));
      return recording->Finish();
    };
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, record());
    static_cast<CudaRecordedGraph*>(graph.get())->FailNextLaunchOnForTesting(1);
    const auto start = std::chrono::steady_clock::now();
    const absl::Status launched = graph->Launch({go}, {a0, a1});
    EXPECT_FALSE(launched.ok());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

    // A finite run next: the flag false, no iteration.
    DA_ASSERT_OK(WriteOn(*eager, go, std::vector<bool8>{0}));
    const absl::Status again = graph->Launch({go}, {a0, a1});
    if (agreement == "nccl") {
      EXPECT_EQ(again.code(), absl::StatusCode::kUnavailable) << again;
      DA_ASSERT_OK_AND_ASSIGN(graph, record());
      DA_ASSERT_OK(graph->Launch({go}, {a0, a1}));
    } else {
      DA_ASSERT_OK(again);
    }
    DA_ASSERT_OK_AND_ASSIGN(GraphRunStats stats, graph->Wait(Alive));
    EXPECT_EQ(stats.iterations, 0);
    DA_ASSERT_OK(eager->Synchronize());
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> r0, ReadOn<float>(*eager, a0, kN));
    DA_ASSERT_OK_AND_ASSIGN(std::vector<float> r1, ReadOn<float>(*eager, a1, kN));
    EXPECT_EQ(r0, std::vector<float>(kN, r0[0]));  // whatever ran, ran on whole arrays
    EXPECT_EQ(r1, std::vector<float>(kN, 0.0f));   // device 1's graph never started
  }
}

// Devices agreeing through NCCL do not fuse loops: a fused body agrees inside its kernel, through
// peer memory. RecordFusedWhile says so (UNIMPLEMENTED, nothing recorded), and the loop is
// recorded op by op instead.
TEST_F(GraphRecorderTest, NcclAgreementRecordsLoopsUnfused) {
  if (backend().device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  const std::vector<TwoDeviceRecorder> recorders = TwoDeviceRecorders();
  ASSERT_FALSE(recorders.empty());
  ASSERT_EQ(recorders.back().agreement, "nccl");
  GraphRecorder* nccl = recorders.back().recorder;
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording,
                          nccl->Begin(std::vector<int>{0, 1}));
  const absl::Status fused = recording->RecordFusedWhile({FusedLoop{}, FusedLoop{}});
  EXPECT_EQ(fused.code(), absl::StatusCode::kUnimplemented) << fused;
  EXPECT_TRUE(absl::StrContains(fused.message(), "through NCCL")) << fused;
}

TEST_F(GraphRecorderTest, OtherThreadsRunEagerly) {
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr x, Upload(std::vector<float>(16, 1.0f)));
  // Finished graphs with a slot of their own, replayed and destroyed while a recording is open,
  // one by the other thread, one by this thread: their cudaFree and graph destruction (and the
  // other thread's Synchronize) happen during the capture.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr w, Upload(std::vector<float>(16, 0.0f)));
  std::unique_ptr<RecordedGraph> earlier, mine;
  for (std::unique_ptr<RecordedGraph>* graph : {&earlier, &mine}) {
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr slot, recording->Allocate(0, 16 * sizeof(float)));
    DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(slot, 16), Scalar::Float(4)));
    DA_ASSERT_OK(recording->Copy(DType::kFloat32, {BoxCopy{Whole(slot, 16), Whole(w, 16)}}));
    DA_ASSERT_OK_AND_ASSIGN(*graph, recording->Finish());
  }
  DA_ASSERT_OK(mine->Launch({}, {w}));
  // Released by this thread while it records, untouched by the recording: freed as usual, on the
  // device's stream, outside the capture.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr dropped, Upload(std::vector<float>(1 << 16, 1.0f)));

  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
  DA_ASSERT_OK(recording->FillConstant(DType::kFloat32, Whole(x, 16), Scalar::Float(3)));
  dropped.reset();
  DA_ASSERT_OK(mine->Wait(Alive).status());
  mine.reset();
  absl::StatusOr<std::vector<float>> seen;
  absl::StatusOr<std::vector<float>> replayed;
  std::thread other([&] {
    // Sent to the backend, not to the recording: the same calls run at once.
    auto run = [&]() -> absl::StatusOr<std::vector<float>> {
      ASSIGN_OR_RETURN(BufferPtr y, backend().Allocate(0, 16 * sizeof(float)));
      RETURN_IF_ERROR(backend().FillConstant(DType::kFloat32, Whole(y, 16), Scalar::Float(7)));
      RETURN_IF_ERROR(backend().Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, y, 16,
                                            {ArrayArg(y), ArrayArg(x)}));
      return Read<float>(y, 16);
    };
    seen = run();
    auto replay = [&]() -> absl::StatusOr<std::vector<float>> {
      RETURN_IF_ERROR(earlier->Launch({}, {w}));
      RETURN_IF_ERROR(earlier->Wait(Alive).status());
      earlier.reset();
      RETURN_IF_ERROR(backend().Synchronize());
      return Read<float>(w, 16);
    };
    replayed = replay();
  });
  other.join();
  DA_ASSERT_OK(seen.status());
  // x was still 1 when the other thread read it: the recorded fill has not run.
  EXPECT_EQ(*seen, std::vector<float>(16, 8.0f));
  DA_ASSERT_OK(replayed.status());
  EXPECT_EQ(*replayed, std::vector<float>(16, 4.0f));
  // The capture survived all that.
  DA_ASSERT_OK(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, x, 16,
                                      {ArrayArg(x), ScalarArg(1)}));
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordedGraph> graph, recording->Finish());
  recording.reset();
  DA_ASSERT_OK(graph->Launch({}, {x}));
  DA_ASSERT_OK(graph->Wait(Alive).status());
  DA_ASSERT_OK_AND_ASSIGN(std::vector<float> result, Read<float>(x, 16));
  EXPECT_EQ(result, std::vector<float>(16, 4.0f));
}

TEST_F(GraphRecorderTest, AbandonedRecordingFreesItsMemory) {
  DA_ASSERT_OK(backend().Synchronize());
  const int64_t used_before = backend().memory(0).used_bytes;
  {
    DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> recording, recorder_->Begin(0));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr big, recording->Allocate(0, int64_t{1} << 20));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr flag, recording->Allocate(0, 1));
    DA_ASSERT_OK(recording->FillConstant(DType::kBool, Whole(flag, 1), Scalar::Bool(true)));
    DA_ASSERT_OK(recording->BeginWhile(flag, 10));
    DA_ASSERT_OK(
        recording->FillConstant(DType::kUInt8, Whole(big, int64_t{1} << 20), Scalar::UInt(1)));
    EXPECT_GT(backend().memory(0).used_bytes, used_before + (int64_t{1} << 20) - 1);
    // Dropped with the loop still open: the captures end and everything goes back.
  }
  EXPECT_EQ(backend().memory(0).used_bytes, used_before);
  DA_ASSERT_OK(backend().Synchronize());
  // The device may be recorded again.
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphRecording> again, recorder_->Begin(0));
  DA_ASSERT_OK(again->Finish().status());
}

}  // namespace
}  // namespace distarray

#endif  // DISTARRAY_HAVE_CUDA
