#include "server/cuda/fusion/fused_loop_source.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace distarray::cuda {
namespace {

// The functor of each op, by ElementwiseOpId (the table in ufuncs.h).
constexpr const char* kFunctors[] = {
#define DA_FUNCTOR_NAME(suffix, functor, name, arity, rule, complex) #functor,
    DISTARRAY_ELEMENTWISE_OPS(DA_FUNCTOR_NAME)
#undef DA_FUNCTOR_NAME
};
static_assert(sizeof(kFunctors) / sizeof(kFunctors[0]) ==
              static_cast<size_t>(ElementwiseOpId::kCount));

// The type a value of `dtype` has in the kernel's registers (the fixed-width names of
// rtc_std/cstdint): a 16-bit float is a float holding a value of its dtype.
const char* TypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16:
      return "float";
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

// The type its elements have in memory: a 16-bit float's bits.
const char* MemoryTypeName(DType dtype) {
  return IsHalf(dtype) ? "unsigned short" : TypeName(dtype);
}

// `value` through fused_loop_device.cuh's function `prefix` + "Float16" or + "BFloat16" +
// `suffix` for a 16-bit `dtype`; as it is for any other dtype.
std::string ThroughHalf(DType dtype, const char* prefix, const char* suffix,
                        const std::string& value) {
  if (!IsHalf(dtype)) return value;
  return absl::StrCat("distarray::cuda::fused::", prefix,
                      dtype == DType::kFloat16 ? "Float16" : "BFloat16", suffix, "(", value, ")");
}
// A float rounded to `dtype`.
std::string Rounded(DType dtype, const std::string& value) {
  return ThroughHalf(dtype, "Round", "", value);
}
// An element of `dtype` read from memory (`bits`) into a register, and the other way.
std::string Load(DType dtype, const std::string& bits) {
  return ThroughHalf(dtype, "", "Bits", bits);
}
std::string StoreBits(DType dtype, const std::string& value) {
  return ThroughHalf(dtype, "To", "Bits", value);
}

// `scalar` converted to `dtype` as the unfused kernels convert it (Scalar::As), written exactly.
// A 16-bit dtype's scalar arrives rounded to it (the planner rounds weak scalars), so it is
// written as the float it is.
std::string Literal(const Scalar& scalar, DType dtype) {
  if (IsHalf(dtype)) dtype = DType::kFloat32;
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

std::string ValueName(const FusedLoop::Value& v) {
  return absl::StrCat(v.is_input ? "x" : "v", v.index);
}

}  // namespace

int FusedLoopPackWidth(const FusedLoop& loop, bool aligned) {
  if (!aligned) return 1;
  int64_t size = 0;
  auto same = [&](DType dtype) {
    const int64_t s = DTypeSize(dtype);
    if (size == 0) size = s;
    return s == size;
  };
  for (const FusedLoop::Input& input : loop.inputs) {
    if (!same(input.dtype)) return 1;
  }
  for (const FusedLoop::Store& store : loop.stores) {
    if (!same(loop.DTypeOf(store.value))) return 1;
  }
  return size == 0 || size > 8 ? 1 : static_cast<int>(16 / size);
}

namespace {

// One element of the chain: its inputs bound from `input(k)`, its ops, each store through
// `store(k, value)`, and the predicate folded into `local`.
void AppendElement(const FusedLoop& loop, const std::string& indent,
                   const std::function<std::string(size_t)>& input,
                   const std::function<std::string(size_t, const std::string&)>& store,
                   std::string& s, bool predicate = true) {
  for (size_t k = 0; k < loop.inputs.size(); ++k) {
    const DType dtype = loop.inputs[k].dtype;
    absl::StrAppend(&s, indent, "const ", TypeName(dtype), " x", k, " = ", Load(dtype, input(k)),
                    ";\n");
  }
  for (size_t k = 0; k < loop.ops.size(); ++k) {
    const FusedLoop::Op& op = loop.ops[k];
    std::vector<std::string> args;
    for (const FusedLoop::Arg& arg : op.args) {
      if (!arg.value.has_value()) {
        args.push_back(Literal(arg.scalar, arg.read));
      } else if (loop.DTypeOf(*arg.value) != arg.read) {
        // To a 16-bit dtype: converted to float, then rounded once (the planner fuses only
        // sources that float holds exactly).
        args.push_back(Rounded(arg.read, absl::StrCat("u::Cast<", TypeName(arg.read), ">(",
                                                      ValueName(*arg.value), ")")));
      } else {
        args.push_back(ValueName(*arg.value));
      }
    }
    const char* result = TypeName(op.result);
    if (!op.op.has_value()) {
      absl::StrAppend(&s, indent, "const ", result, " v", k, " = ",
                      Rounded(op.result, absl::StrCat("u::Cast<", result, ">(", args[0], ")")),
                      ";\n");
    } else {
      absl::StrAppend(&s, indent, "const ", result, " v", k, " = ",
                      Rounded(op.result, absl::StrCat("static_cast<", result,
                                                      ">(u::", kFunctors[static_cast<int>(*op.op)],
                                                      "{}(", absl::StrJoin(args, ", "), "))")),
                      ";\n");
    }
  }
  for (size_t k = 0; k < loop.stores.size(); ++k) {
    const FusedLoop::Value& value = loop.stores[k].value;
    absl::StrAppend(&s, indent, store(k, StoreBits(loop.DTypeOf(value), ValueName(value))), ";\n");
  }
  if (!predicate) return;
  absl::StrAppend(&s, indent, "local = local ", loop.all ? "&&" : "||", " ",
                  ValueName(loop.predicate), ";\n");
}

}  // namespace

std::string FusedChainSource(const FusedLoop& chain) {
  std::string s =
      "#include \"server/kernels/ufuncs.h\"\n"
      "#include \"server/cuda/fusion/fused_loop_device.cuh\"\n\n";
  absl::StrAppend(&s, "extern \"C\" __global__ void ", kFusedChainKernelName,
                  "(const distarray::cuda::FusedChainArgs args) {\n",
                  "  namespace u = distarray::ufunc;\n");
  for (size_t k = 0; k < chain.inputs.size(); ++k) {
    const char* type = MemoryTypeName(chain.inputs[k].dtype);
    absl::StrAppend(&s, "  const ", type, "* const in", k, " = static_cast<const ", type,
                    "*>(args.buffers[", k, "]);\n");
  }
  for (size_t k = 0; k < chain.stores.size(); ++k) {
    const char* type = MemoryTypeName(chain.DTypeOf(chain.stores[k].value));
    absl::StrAppend(&s, "  ", type, "* const out", k, " = static_cast<", type, "*>(args.buffers[",
                    chain.inputs.size() + k, "]);\n");
  }
  const char* sum_type = chain.sum ? TypeName(chain.DTypeOf(*chain.sum)) : nullptr;
  if (sum_type != nullptr) absl::StrAppend(&s, "  ", sum_type, " sum = 0;\n");
  absl::StrAppend(&s,
                  "  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; "
                  "i < args.elements; i += int64_t(gridDim.x) * blockDim.x) {\n");
  // A broadcast input is read at element 0 by every element; a broadcast store is written by
  // element 0 alone (every element computes the same 0-d values, so any one may store them).
  AppendElement(
      chain, "    ",
      [&chain](size_t k) {
        return absl::StrCat("in", k, chain.inputs[k].broadcast ? "[0]" : "[i]");
      },
      [&chain](size_t k, const std::string& value) {
        return chain.stores[k].broadcast ? absl::StrCat("if (i == 0) out", k, "[0] = ", value)
                                         : absl::StrCat("out", k, "[i] = ", value);
      },
      s, /*predicate=*/false);
  if (sum_type != nullptr) {
    absl::StrAppend(&s, "    sum += ", ValueName(*chain.sum), ";\n  }\n",
                    "  distarray::cuda::fused::FinishChainSum<", sum_type, ">(args, sum);\n}\n");
  } else {
    absl::StrAppend(&s, "  }\n}\n");
  }
  return s;
}

std::string FusedLoopSource(const FusedLoop& loop, bool aligned, bool persistent) {
  std::string s =
      "#include \"server/kernels/ufuncs.h\"\n"
      "#include \"server/cuda/fusion/fused_loop_device.cuh\"\n\n";
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(",
                  "distarray::cuda::kFusedBlockThreads) ", kFusedLoopKernelName,
                  "(const distarray::cuda::FusedLoopArgs args) {\n",
                  "  namespace u = distarray::ufunc;\n");
  if (persistent) {
    // Read before the first barrier: block 0 writes them back only after the last one.
    absl::StrAppend(&s,
                    "  const unsigned long long position = *static_cast<volatile unsigned long "
                    "long*>(&args.persistent->position);\n",
                    "  const int64_t started = *static_cast<volatile int64_t*>(args.count);\n");
  } else {
    absl::StrAppend(&s, "  if (!distarray::cuda::fused::Running(args)) return;\n");
  }
  for (size_t k = 0; k < loop.inputs.size(); ++k) {
    const char* type = MemoryTypeName(loop.inputs[k].dtype);
    absl::StrAppend(&s, "  const ", type, "* const in", k, " = static_cast<const ", type,
                    "*>(args.buffers[", k, "]);\n");
  }
  for (size_t k = 0; k < loop.stores.size(); ++k) {
    const char* type = MemoryTypeName(loop.DTypeOf(loop.stores[k].value));
    absl::StrAppend(&s, "  ", type, "* const out", k, " = static_cast<", type, "*>(args.buffers[",
                    loop.inputs.size() + k, "]);\n");
  }
  // Packs of kW elements (16 bytes where PackWidth allows); each thread loads kU packs of every
  // input before computing any: independent loads in flight (a store to a slot may alias a
  // later load, so loads cannot move past stores). Then the elements past the last whole pack.
  const int width = FusedLoopPackWidth(loop, aligned);
  absl::StrAppend(&s, "  constexpr int kU = distarray::cuda::kFusedPacksPerThread;\n",
                  "  constexpr int kW = ", width, ";\n",
                  "  const int64_t stride = int64_t(gridDim.x) * blockDim.x;\n",
                  "  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;\n",
                  "  const int64_t packs = args.elements / kW;\n");
  // A persistent kernel runs its iterations in a loop of its own; each thread keeps its elements.
  if (persistent) absl::StrAppend(&s, "  for (int k = 0;; ++k) {\n");
  absl::StrAppend(&s, "  bool local = ", loop.all ? "true" : "false", ";\n",
                  "  for (int64_t base = first; base < packs; base += kU * stride) {\n");
  auto pack = [&](DType dtype) {
    return absl::StrCat("distarray::cuda::fused::Pack<", MemoryTypeName(dtype), ", kW>");
  };
  for (size_t k = 0; k < loop.inputs.size(); ++k) {
    absl::StrAppend(&s, "    ", pack(loop.inputs[k].dtype), " p", k, "[kU];\n");
  }
  absl::StrAppend(&s, "#pragma unroll\n    for (int u = 0; u < kU; ++u) {\n",
                  "      const int64_t j = base + u * stride;\n", "      if (j < packs) {\n");
  for (size_t k = 0; k < loop.inputs.size(); ++k) {
    absl::StrAppend(&s, "        p", k, "[u] = reinterpret_cast<const ", pack(loop.inputs[k].dtype),
                    "*>(in", k, ")[j];\n");
  }
  absl::StrAppend(&s, "      }\n    }\n", "#pragma unroll\n    for (int u = 0; u < kU; ++u) {\n",
                  "      const int64_t j = base + u * stride;\n", "      if (j >= packs) break;\n");
  for (size_t k = 0; k < loop.stores.size(); ++k) {
    absl::StrAppend(&s, "      ", pack(loop.DTypeOf(loop.stores[k].value)), " q", k, ";\n");
  }
  absl::StrAppend(&s, "#pragma unroll\n      for (int l = 0; l < kW; ++l) {\n");
  AppendElement(
      loop, "        ", [](size_t k) { return absl::StrCat("p", k, "[u].v[l]"); },
      [](size_t k, const std::string& value) { return absl::StrCat("q", k, ".v[l] = ", value); },
      s);
  absl::StrAppend(&s, "      }\n");
  for (size_t k = 0; k < loop.stores.size(); ++k) {
    absl::StrAppend(&s, "      reinterpret_cast<", pack(loop.DTypeOf(loop.stores[k].value)),
                    "*>(out", k, ")[j] = q", k, ";\n");
  }
  absl::StrAppend(&s, "    }\n  }\n",
                  "  for (int64_t i = packs * kW + first; i < args.elements; i += stride) {\n");
  AppendElement(
      loop, "    ", [](size_t k) { return absl::StrCat("in", k, "[i]"); },
      [](size_t k, const std::string& value) { return absl::StrCat("out", k, "[i] = ", value); },
      s);
  const char* is_all = loop.all ? "true" : "false";
  if (persistent) {
    absl::StrAppend(&s, "  }\n",
                    "  if (!distarray::cuda::fused::PersistentNextIteration(args, local, ", is_all,
                    ", position, started, k)) return;\n  }\n}\n");
  } else {
    absl::StrAppend(&s, "  }\n", "  distarray::cuda::fused::FinishIteration(args, local, ", is_all,
                    ");\n}\n");
  }
  return s;
}

}  // namespace distarray::cuda
