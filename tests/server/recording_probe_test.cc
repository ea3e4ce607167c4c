// The probe the program runner walks a program through before recording it: what it reports of a
// program is what the recorder is asked (GraphRecorder::Unsupported), so a wrong answer would
// either give a recording work it cannot hold or run a recordable program eagerly.
#include "server/graph/recording_probe.h"

#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "common/index_map.h"
#include "server/graph/interpreter.h"
#include "server/ops/layout.h"
#include "server/ops/op_executors.h"

namespace distarray {
namespace {

v1::Program ParseProgram(const std::string& text) {
  v1::Program program;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &program)) << text;
  return program;
}

// 1-d float32 of 8 elements in `map`, as the runner binds an input slot.
ArrayPtr Input(RecordingProbe& probe, IndexMap map) {
  Array array = MetadataOnly(ArrayMeta{{8}, DType::kFloat32, Mode::kReplica, std::move(map)});
  auto chunks = AllocateChunks(probe, array.dtype, array.index_map());
  EXPECT_TRUE(chunks.ok()) << chunks.status();
  array.chunks = *std::move(chunks);
  return std::make_shared<const Array>(std::move(array));
}

OpContext Context(int devices) {
  OpContext context;
  context.normalize_map = [devices](const v1::IndexMap& map, const Shape& shape,
                                    absl::string_view field) {
    return NormalizeIndexMap(map, shape, devices, field);
  };
  return context;
}

// Walks `program` (input "a" bound to an array in `map`) through a probe over `devices`.
RecordingNeeds Probe(const v1::Program& program, IndexMap map, std::vector<int> devices) {
  RecordingProbe probe(devices);
  Interpreter interpreter(RunMode::kRecord, Context(4), nullptr, &probe);
  interpreter.RecordOn(devices);
  interpreter.Bind("a", Input(probe, std::move(map)));
  const absl::Status walked = interpreter.Run(program, "program");
  EXPECT_TRUE(walked.ok()) << walked;
  EXPECT_FALSE(interpreter.not_recordable().has_value());
  return probe.needs();
}

const IndexMap kOnDevice0{ChunkSpec{0, FullBox({8})}};

TEST(RecordingProbeTest, AReshardToAnotherDeviceCopiesBetweenDevices) {
  const v1::Program program = ParseProgram(R"pb(
    inputs: "a"
    statements {
      target: "b"
      reshard {
        source: "a"
        index_map {
          chunks {
            device: 1
            slices { start: 0 stop: 8 }
          }
        }
      }
    }
    outputs: "b"
  )pb");
  const RecordingNeeds needs = Probe(program, kOnDevice0, {0, 1});
  EXPECT_TRUE(needs.copies_between_devices);
  EXPECT_EQ(needs.devices, (std::vector<int>{0, 1}));
}

TEST(RecordingProbeTest, AReshardWithinOneDeviceDoesNot) {
  const v1::Program program = ParseProgram(R"pb(
    inputs: "a"
    statements {
      target: "b"
      reshard {
        source: "a"
        index_map {
          chunks {
            device: 0
            slices { start: 0 stop: 3 }
          }
          chunks {
            device: 0
            slices { start: 3 stop: 8 }
          }
        }
      }
    }
    outputs: "b"
  )pb");
  const RecordingNeeds needs = Probe(program, kOnDevice0, {0});
  EXPECT_FALSE(needs.copies_between_devices);
  EXPECT_EQ(needs.condition_flags_per_device, 0);
}

TEST(RecordingProbeTest, ALoopConditionCountsItsFlagsPerDevice) {
  // while all(a < 100): a = a + 1, on one device: the condition is one flag.
  const v1::Program program = ParseProgram(R"pb(
    inputs: "a"
    statements {
      target: "less"
      elementwise {
        op: ELEMENTWISE_OP_LESS
        operands { variable: "a" }
        operands { scalar { float_value: 100 } }
      }
    }
    statements {
      target: "go"
      reduce {
        op: REDUCE_OP_ALL
        operand { variable: "less" }
        combine: true
      }
    }
    statements {
      while_loop {
        condition: "go"
        max_iterations: 1000
        body {
          target: "a"
          elementwise {
            op: ELEMENTWISE_OP_ADD
            operands { variable: "a" }
            operands { scalar { float_value: 1 } }
          }
        }
        body {
          target: "less"
          elementwise {
            op: ELEMENTWISE_OP_LESS
            operands { variable: "a" }
            operands { scalar { float_value: 100 } }
          }
        }
        body {
          target: "go"
          reduce {
            op: REDUCE_OP_ALL
            operand { variable: "less" }
            combine: true
          }
        }
      }
    }
    outputs: "a"
  )pb");
  const RecordingNeeds needs = Probe(program, kOnDevice0, {0});
  EXPECT_EQ(needs.condition_flags_per_device, 1);
  EXPECT_FALSE(needs.copies_between_devices);
}

TEST(RecordingProbeTest, MakesNoGraphAndHoldsNoMemory) {
  RecordingProbe probe({0});
  auto buffer = probe.Allocate(0, int64_t{1} << 40);  // a terabyte costs nothing here
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  EXPECT_EQ((*buffer)->device(), 0);
  EXPECT_EQ((*buffer)->bytes(), int64_t{1} << 40);
  EXPECT_TRUE(absl::IsUnimplemented(probe.Finish().status()));
}

}  // namespace
}  // namespace distarray
