// A call its client was told failed leaves nothing behind: creates with tight deadlines and a
// large answer (a 65,536-chunk index map takes about 1 MB to serialize and send) either answer OK
// with their array registered, or DEADLINE_EXCEEDED with nothing registered, whichever side of
// the deadline the daemon finished on.
#include <grpcpp/grpcpp.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "gtest/gtest.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/daemon.h"
#include "tests/support/raw_stub.h"
#include "tests/support/sanitized_daemon.h"

namespace distarray::testing {
namespace {

constexpr int kChunks = 65536;

// 65,536 one-element chunks of a 256 x 256 array: an answer of about 1.5 MB.
v1::CreateArrayRequest ManyChunks(const std::string& name) {
  v1::CreateArrayRequest request;
  request.mutable_spec()->mutable_shape()->add_dims(256);
  request.mutable_spec()->mutable_shape()->add_dims(256);
  request.mutable_spec()->set_dtype(v1::DTYPE_FLOAT32);
  request.mutable_spec()->set_name(name);
  for (int c = 0; c < kChunks; ++c) {
    v1::Chunk* chunk = request.mutable_spec()->mutable_index_map()->add_chunks();
    chunk->set_device(c % 4);
    for (int axis_start : {c / 256, c % 256}) {
      v1::Slice* slice = chunk->add_slices();
      slice->set_start(axis_start);
      slice->set_stop(axis_start + 1);
    }
  }
  return request;
}

TEST(DeadlineResults, CreatesThatAnswerDeadlineExceededLeaveNoArray) {
  if (DaemonSanitized()) {
    // The daemon keeps a result only when its answer can still reach the client in time, judged by
    // a margin for serializing and sending it (2 ms + 15 MB/s). Under ASan on two loaded cores the
    // answer path runs several times slower than that margin assumes, so the race this test times
    // is lost by the margin, not by the code it checks; the plain build's run (and the GPU runs)
    // check it.
    GTEST_SKIP() << "times the answer path against the daemon's margin, which ASan slows past it";
  }
  Daemon::Options options;
  options.host_devices = 4;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, Daemon::Start(options));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  const RawStub raw(daemon->address(), client);
  const auto create = [&](const std::string& name, std::chrono::microseconds timeout) {
    grpc::ClientContext context;
    raw.AttachSession(context);
    if (timeout.count() > 0) context.set_deadline(std::chrono::system_clock::now() + timeout);
    v1::CreateArrayResponse response;
    return raw.stub().CreateArray(&context, ManyChunks(name), &response);
  };
  const auto remove = [&](const std::string& name) {
    grpc::ClientContext context;
    raw.AttachSession(context);
    v1::DeleteArrayRequest request;
    request.set_handle(name);
    v1::DeleteArrayResponse response;
    return raw.stub().DeleteArray(&context, request, &response);
  };
  // How long one such create takes here, deadline aside: the fastest of three.
  auto took = std::chrono::microseconds::max();
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(create("warm-up", {}).ok());
    took = std::min(took, std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::steady_clock::now() - start));
    ASSERT_TRUE(remove("warm-up").ok());
  }

  // Deadlines closely around that, from 0.8 to 1.6 times it: the call ends before registering,
  // or while the answer is built or sent, or in time. The middle case is the one that left arrays.
  constexpr int kAttempts = 60;
  std::set<std::string> failed;
  int succeeded = 0;
  for (int i = 0; i < kAttempts; ++i) {
    const std::string name = absl::StrCat("late-", i);
    const auto timeout =
        std::chrono::microseconds(took.count() * 4 / 5 + took.count() * 4 * i / 5 / kAttempts);
    const grpc::Status status = create(name, timeout);
    if (status.ok()) {
      ++succeeded;
      // Registered, as answered. Deleted at once: each holds about 70 MB of host memory.
      EXPECT_TRUE(remove(name).ok()) << name;
    } else {
      ASSERT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
      failed.insert(name);
    }
  }
  ASSERT_FALSE(failed.empty()) << "no create ran past its deadline; took " << took.count() << " us";
  // A handler may still be finishing (the client stops waiting at its deadline): give it time,
  // then none of the failed creates may have left its array.
  std::set<std::string> left;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_OK_AND_ASSIGN(std::vector<v1::ArrayInfo> arrays, client.List());
    left.clear();
    for (const v1::ArrayInfo& info : arrays) {
      if (failed.contains(info.name())) left.insert(info.name());
    }
  } while (!left.empty() && std::chrono::steady_clock::now() < until);
  EXPECT_TRUE(left.empty()) << left.size() << " of " << failed.size()
                            << " creates answered DEADLINE_EXCEEDED and left their array, e.g. "
                            << *left.begin() << " (" << succeeded << " answered OK)";
  const int status = daemon->Terminate(10000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon->log();
}

}  // namespace
}  // namespace distarray::testing
