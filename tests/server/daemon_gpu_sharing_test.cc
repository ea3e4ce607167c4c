// The daemon's start-up decision on shared GPUs (server/daemon/gpu_sharing.h), from described
// observations: no GPU needed.
#include "server/daemon/gpu_sharing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace distarray {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kGpu0[] = "GPU-5f4e2c1a-0b3d-9e8f-7a6b-5c4d3e2f1a0b";
constexpr char kGpu1[] = "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9";
constexpr char kMig[] = "MIG-8a7b6c5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d";

TEST(GivenGpus, WholeGpusEachOnceStart) {
  GivenGpus gpus;
  gpus.nvidia_visible_devices = absl::StrCat(kGpu0, ",", kGpu1);
  gpus.device_uuids = {kGpu0, kGpu1};
  EXPECT_TRUE(CheckGivenGpus(gpus).ok());
  // The device plugin's other spellings: all, indices, unset (DRA and CDI give no variable).
  for (const char* listed : {"all", "0,1", "", "void"}) {
    gpus.nvidia_visible_devices = listed;
    EXPECT_TRUE(CheckGivenGpus(gpus).ok()) << listed;
  }
  EXPECT_TRUE(CheckGivenGpus(GivenGpus{}).ok()) << "no GPU at all is the backend's to judge";
}

TEST(GivenGpus, MigSliceIsRefusedWithWhatWasSeen) {
  GivenGpus gpus;
  gpus.nvidia_visible_devices = kMig;
  absl::Status status = CheckGivenGpus(gpus);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("refusing to start on a MIG slice"), HasSubstr(kMig),
                    HasSubstr("whole GPUs"), HasSubstr("--backend=host")));
  // However it is seen: in CUDA_VISIBLE_DEVICES, among whole GPUs, or as an opened device.
  gpus = GivenGpus{};
  gpus.cuda_visible_devices = absl::StrCat(" ", kMig, " ");
  EXPECT_EQ(CheckGivenGpus(gpus).code(), absl::StatusCode::kFailedPrecondition);
  gpus = GivenGpus{};
  gpus.nvidia_visible_devices = absl::StrCat(kGpu0, ",", kMig);
  EXPECT_EQ(CheckGivenGpus(gpus).code(), absl::StatusCode::kFailedPrecondition);
  gpus = GivenGpus{};
  gpus.device_uuids = {kMig};
  EXPECT_EQ(CheckGivenGpus(gpus).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(GivenGpus, MigCapabilityDevicesAloneAreOnlyLogged) {
  GivenGpus gpus;
  gpus.mig_capability_devices = {"nvidia-cap1", "nvidia-cap2"};
  gpus.device_uuids = {kGpu0};
  EXPECT_TRUE(CheckGivenGpus(gpus).ok());
  EXPECT_THAT(DescribeGivenGpus(gpus), HasSubstr("/dev/nvidia-caps: nvidia-cap1,nvidia-cap2"));
}

TEST(GivenGpus, OneGpuGivenTwiceIsTimeSlicing) {
  GivenGpus gpus;
  gpus.nvidia_visible_devices = absl::StrCat(kGpu0, ",", kGpu1, ",", kGpu0);
  absl::Status status = CheckGivenGpus(gpus);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  // Names the repeated GPU alone as repeated, and what the plugin listed.
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(absl::StrCat("time-sliced GPUs: ", kGpu0, " given more than once")),
                    HasSubstr(gpus.nvidia_visible_devices)));
}

TEST(GivenGpus, DescriptionSaysWhatWasGivenAndOpened) {
  GivenGpus gpus;
  gpus.nvidia_visible_devices = kGpu0;
  gpus.device_uuids = {kGpu0};
  EXPECT_EQ(DescribeGivenGpus(gpus),
            absl::StrCat("GPUs given: NVIDIA_VISIBLE_DEVICES=", kGpu0,
                         " CUDA_VISIBLE_DEVICES=unset; opened 1 device(s): ", kGpu0));
  EXPECT_THAT(DescribeGivenGpus(GivenGpus{}), HasSubstr("opened 0 device(s): none"));
}

}  // namespace
}  // namespace distarray
