#include "server/cuda/fusion/fused_loop_source.h"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace distarray::cuda {
namespace {

// The functor of each op, by ElementwiseOpId (the table in ufuncs.h).
constexpr const char* kFunctors[] = {
#define DA_FUNCTOR_NAME(suffix, functor, name, arity, rule) #functor,
    DISTARRAY_ELEMENTWISE_OPS(DA_FUNCTOR_NAME)
#undef DA_FUNCTOR_NAME
};
static_assert(sizeof(kFunctors) / sizeof(kFunctors[0]) ==
              static_cast<size_t>(ElementwiseOpId::kCount));

// The element type's name in the kernel (the fixed-width names of rtc_std/cstdint).
const char* TypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "int8_t";
    case DType::kInt16:
      return "int16_t";
    case DType::kInt32:
      return "int32_t";
    case DType::kInt64:
      return "int64_t";
    case DType::kUInt8:
      return "uint8_t";
    case DType::kUInt16:
      return "uint16_t";
    case DType::kUInt32:
      return "uint32_t";
    case DType::kUInt64:
      return "uint64_t";
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    default:
      DispatchDTypeFailed(dtype);
  }
}

// `scalar` converted to `dtype` as the unfused kernels convert it (Scalar::As), written exactly.
std::string Literal(const Scalar& scalar, DType dtype) {
  return DispatchDType(dtype, [&](auto tag) -> std::string {
    using T = decltype(tag);
    const T value = scalar.As<T>();
    if constexpr (std::is_same_v<T, bool>) {
      return value ? "true" : "false";
    } else if constexpr (std::is_same_v<T, float>) {
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return absl::StrFormat("__int_as_float(0x%08x)", bits);
    } else if constexpr (std::is_same_v<T, double>) {
      uint64_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return absl::StrFormat("__longlong_as_double(static_cast<long long>(0x%016xull))", bits);
    } else {
      // Through the unsigned bit pattern: the most negative values have no literal of their own.
      return absl::StrFormat("static_cast<%s>(0x%xull)", TypeName(dtype),
                             static_cast<uint64_t>(value));
    }
  });
}

// Inputs are loaded kFusedElementsPerThread at a time into arrays indexed by `u`.
std::string ValueName(const FusedLoop::Value& v) {
  return v.is_input ? absl::StrCat("x", v.index, "[u]") : absl::StrCat("v", v.index);
}

}  // namespace

std::string FusedLoopSource(const FusedLoop& loop) {
  std::string s =
      "#include \"server/kernels/ufuncs.h\"\n"
      "#include \"server/cuda/fusion/fused_loop_device.cuh\"\n\n";
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(",
                  "distarray::cuda::kFusedBlockThreads) ", kFusedLoopKernelName,
                  "(const distarray::cuda::FusedLoopArgs args) {\n",
                  "  namespace u = distarray::ufunc;\n",
                  "  if (!distarray::cuda::fused::Running(args)) return;\n");
  for (size_t k = 0; k < loop.inputs.size(); ++k) {
    const char* type = TypeName(loop.inputs[k].dtype);
    absl::StrAppend(&s, "  const ", type, "* const in", k, " = static_cast<const ", type,
                    "*>(args.buffers[", k, "]);\n");
  }
  for (size_t k = 0; k < loop.stores.size(); ++k) {
    const char* type = TypeName(loop.DTypeOf(loop.stores[k].value));
    absl::StrAppend(&s, "  ", type, "* const out", k, " = static_cast<", type, "*>(args.buffers[",
                    loop.inputs.size() + k, "]);\n");
  }
  // Each thread loads kU elements of every input before computing any: independent loads in
  // flight (a store to a slot may alias a later load, so loads cannot move past stores).
  absl::StrAppend(&s, "  bool local = ", loop.all ? "true" : "false", ";\n",
                  "  constexpr int kU = distarray::cuda::kFusedElementsPerThread;\n",
                  "  const int64_t stride = int64_t(gridDim.x) * blockDim.x;\n",
                  "  for (int64_t base = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; ",
                  "base < args.elements; base += kU * stride) {\n");
  for (size_t k = 0; k < loop.inputs.size(); ++k) {
    absl::StrAppend(&s, "    ", TypeName(loop.inputs[k].dtype), " x", k, "[kU];\n");
  }
  absl::StrAppend(&s, "#pragma unroll\n    for (int u = 0; u < kU; ++u) {\n",
                  "      const int64_t i = base + u * stride;\n",
                  "      if (i < args.elements) {\n");
  for (size_t k = 0; k < loop.inputs.size(); ++k) {
    absl::StrAppend(&s, "        x", k, "[u] = in", k, "[i];\n");
  }
  absl::StrAppend(&s, "      }\n    }\n", "#pragma unroll\n    for (int u = 0; u < kU; ++u) {\n",
                  "      const int64_t i = base + u * stride;\n",
                  "      if (i >= args.elements) break;\n");
  for (size_t k = 0; k < loop.ops.size(); ++k) {
    const FusedLoop::Op& op = loop.ops[k];
    std::vector<std::string> args;
    for (const FusedLoop::Arg& arg : op.args) {
      if (!arg.value.has_value()) {
        args.push_back(Literal(arg.scalar, arg.read));
      } else if (loop.DTypeOf(*arg.value) != arg.read) {
        args.push_back(
            absl::StrCat("u::Cast<", TypeName(arg.read), ">(", ValueName(*arg.value), ")"));
      } else {
        args.push_back(ValueName(*arg.value));
      }
    }
    const char* result = TypeName(op.result);
    if (!op.op.has_value()) {
      absl::StrAppend(&s, "      const ", result, " v", k, " = u::Cast<", result, ">(", args[0],
                      ");\n");
    } else {
      absl::StrAppend(&s, "      const ", result, " v", k, " = static_cast<", result,
                      ">(u::", kFunctors[static_cast<int>(*op.op)], "{}(",
                      absl::StrJoin(args, ", "), "));\n");
    }
  }
  for (size_t k = 0; k < loop.stores.size(); ++k) {
    absl::StrAppend(&s, "      out", k, "[i] = ", ValueName(loop.stores[k].value), ";\n");
  }
  absl::StrAppend(&s, "      local = local ", loop.all ? "&&" : "||", " ",
                  ValueName(loop.predicate), ";\n    }\n  }\n",
                  "  distarray::cuda::fused::FinishIteration(args, local, ",
                  loop.all ? "true" : "false", ");\n}\n");
  return s;
}

}  // namespace distarray::cuda
