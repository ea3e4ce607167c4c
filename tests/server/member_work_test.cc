// A cluster member's checks on the device work the leader sends (server/cluster/member_work.h):
// unknown handles, malformed enums and ranks, and boxes, views, runs and geometries that reach
// past their buffers are INTERNAL, never a write out of bounds; well-formed work runs. Then
// random messages (valid ones mutated byte by byte) run against the same buffers: under the
// sanitizers (scripts/sanitize.sh) any read or write outside a buffer is a failure.
#include "server/cluster/member_work.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "server/cluster/data_plane.h"
#include "server/host/host_backend.h"

namespace distarray::cluster {
namespace {

// Whether any dtype field of `m` names bool. A host kernel reads bool operands as C++ bool, and a
// byte other than 0 or 1 there is undefined behaviour (UBSan stops on it) though no memory
// outside the buffers is touched. Only a leader's plan puts bool data in bool buffers; these
// messages keep float64 buffers, so the mutations that would read them as bool are skipped.
bool NamesBool(const google::protobuf::Message& m) {
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    if (f->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
      const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
      for (int i = 0; i < n; ++i) {
        if (NamesBool(f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f))) {
          return true;
        }
      }
    } else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT32 &&
               !f->is_repeated() && r->GetInt32(m, f) == static_cast<int32_t>(DType::kBool) &&
               (f->name() == "dtype" || f->name() == "compute" || f->name() == "storage" ||
                f->name() == "from" || f->name() == "to" || f->name() == "in")) {
      return true;
    }
  }
  return false;
}

class MemberWorkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = HostBackend::Create({.device_count = 2, .memory_limit_bytes = 64 << 20});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    plane_ = std::make_unique<DataPlane>(DataPlane::Options{.rank = 1, .size = 2});
    work_ = std::make_unique<MemberWork>(*backend_, *plane_);
    for (int i = 0; i < 3; ++i) handles_[i] = Allocate(0, 64 * 8);  // 64 float64 each
  }

  uint64_t Allocate(int device, int64_t bytes) {
    wire::DeviceWork work;
    work.mutable_allocate()->set_device(device);
    work.mutable_allocate()->set_bytes(bytes);
    absl::StatusOr<uint64_t> handle = work_->Execute(work);
    EXPECT_TRUE(handle.ok()) << handle.status();
    return handle.value_or(0);
  }

  // A copy of `count` float64 from element `from` of buffer 0 to element `to` of buffer 1, both
  // seen as 1-D arrays of `extent`.
  wire::DeviceWork Copy(int64_t from, int64_t to, int64_t count, int64_t extent = 64) {
    wire::DeviceWork work;
    wire::Copy* copy = work.mutable_copy();
    copy->set_dtype(static_cast<int32_t>(DType::kFloat64));
    wire::BoxCopy* c = copy->add_copies();
    for (auto [box, handle, start] : {std::tuple{c->mutable_src(), handles_[0], from},
                                      std::tuple{c->mutable_dst(), handles_[1], to}}) {
      box->set_buffer(handle);
      box->add_shape(extent);
      wire::Range* r = box->mutable_box()->add_ranges();
      r->set_start(start);
      r->set_step(1);
      r->set_count(count);
    }
    return work;
  }

  wire::DeviceWork Add(int64_t n, int64_t stride) {
    wire::DeviceWork work;
    wire::Elementwise* e = work.mutable_elementwise();
    e->set_op(static_cast<int32_t>(ElementwiseOpId::kAdd));
    e->set_compute(static_cast<int32_t>(DType::kFloat64));
    e->set_storage(static_cast<int32_t>(DType::kFloat64));
    e->set_out(handles_[2]);
    e->set_n(n);
    for (int k = 0; k < 2; ++k) {
      wire::ElementwiseArg* a = e->add_args();
      a->set_buffer(handles_[k]);
      a->set_contiguous(stride == 1);
      a->mutable_view()->add_count(n);
      a->mutable_view()->add_stride(stride);
    }
    return work;
  }

  std::unique_ptr<HostBackend> backend_;
  std::unique_ptr<DataPlane> plane_;
  std::unique_ptr<MemberWork> work_;
  uint64_t handles_[3] = {};
};

TEST_F(MemberWorkTest, WellFormedWorkRunsAndWritesAndReadsBack) {
  std::string bytes(64 * 8, '\0');
  for (int i = 0; i < 64; ++i) {
    const double v = 1.5 * i;
    std::memcpy(bytes.data() + 8 * i, &v, 8);
  }
  ASSERT_TRUE(work_->Write(handles_[0], 0, bytes).ok());
  ASSERT_TRUE(work_->Write(handles_[1], 0, bytes).ok());
  ASSERT_TRUE(work_->Execute(Copy(10, 20, 5)).ok());
  ASSERT_TRUE(work_->Execute(Add(64, 1)).ok());
  absl::StatusOr<std::string> sum = work_->Read(handles_[2], 0, 64 * 8);
  ASSERT_TRUE(sum.ok()) << sum.status();
  double at20 = 0;
  std::memcpy(&at20, sum->data() + 20 * 8, 8);
  EXPECT_EQ(at20, 1.5 * 10 + 1.5 * 20);  // the copied element plus the original
  EXPECT_EQ(work_->live_buffers(), 3);
  work_->Free({handles_[0]});
  EXPECT_EQ(work_->live_buffers(), 2);
}

TEST_F(MemberWorkTest, WorkPastItsBuffersIsRefused) {
  const std::vector<std::pair<const char*, wire::DeviceWork>> cases = {
      {"box past the shape", Copy(60, 0, 5)},
      {"shape past the buffer", Copy(0, 0, 5, /*extent=*/65)},
      {"negative start", Copy(-1, 0, 5)},
      {"contiguous operands past the buffer", Add(65, 1)},
      {"strided operands past the buffer", Add(40, 2)},
  };
  for (const auto& [what, work] : cases) {
    absl::StatusOr<uint64_t> done = work_->Execute(work);
    EXPECT_EQ(done.status().code(), absl::StatusCode::kInternal) << what << ": " << done.status();
  }
  wire::DeviceWork unknown = Copy(0, 0, 1);
  unknown.mutable_copy()->mutable_copies(0)->mutable_src()->set_buffer(999);
  EXPECT_EQ(work_->Execute(unknown).status().code(), absl::StatusCode::kInternal);
  wire::DeviceWork bad_dtype = Copy(0, 0, 1);
  bad_dtype.mutable_copy()->set_dtype(99);
  EXPECT_EQ(work_->Execute(bad_dtype).status().code(), absl::StatusCode::kInternal);
  wire::DeviceWork reduce;
  wire::Reduce* r = reduce.mutable_reduce();
  r->set_kind(static_cast<int32_t>(ReduceKind::kSum));
  r->set_in(static_cast<int32_t>(DType::kFloat64));
  r->set_storage(static_cast<int32_t>(DType::kFloat64));
  r->set_src(handles_[0]);
  r->set_dst(handles_[1]);
  r->mutable_geometry()->mutable_kept()->add_count(1);
  r->mutable_geometry()->mutable_kept()->add_stride(0);
  r->mutable_geometry()->mutable_reduced()->add_count(65);  // one past the source
  r->mutable_geometry()->mutable_reduced()->add_stride(1);
  r->mutable_geometry()->set_reduced_contiguous(true);
  EXPECT_EQ(work_->Execute(reduce).status().code(), absl::StatusCode::kInternal);
  r->mutable_geometry()->mutable_reduced()->set_count(0, 64);
  EXPECT_TRUE(work_->Execute(reduce).ok());
  EXPECT_EQ(work_->Write(handles_[0], 64 * 8 - 4, std::string(8, 'x')).code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(work_->Read(handles_[0], -8, 8).status().code(), absl::StatusCode::kInternal);
  wire::DeviceWork allocate;
  allocate.mutable_allocate()->set_device(2);
  allocate.mutable_allocate()->set_bytes(8);
  EXPECT_EQ(work_->Execute(allocate).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(work_->Execute(wire::DeviceWork()).status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(backend_->Synchronize().ok());
}

TEST_F(MemberWorkTest, RandomMessagesNeverReachPastTheirBuffers) {
  const std::vector<std::string> valid = {Copy(10, 20, 5).SerializeAsString(),
                                          Add(64, 1).SerializeAsString(),
                                          Add(32, 2).SerializeAsString()};
  int parsed = 0, ran = 0;
  for (uint64_t seed : {2026, 1, 77}) {
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 300000; ++trial) {
      std::string bytes = valid[trial % valid.size()];
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
      wire::DeviceWork work;
      if (!work.ParseFromString(bytes)) continue;
      ++parsed;
      // Sends and receives would wait on a peer: the data plane is not connected here.
      if (work.has_send_box() || work.has_receive_box() || work.has_allocate()) continue;
      if (NamesBool(work)) continue;
      if (work_->Execute(work).ok()) ++ran;
    }
  }
  EXPECT_TRUE(backend_->Synchronize().ok());
  EXPECT_GT(parsed, 1000);
  EXPECT_GT(ran, 10);  // some mutations stay in bounds and run
}

}  // namespace
}  // namespace distarray::cluster
