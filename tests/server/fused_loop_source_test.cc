// Fused loop kernels (server/cuda/fusion/): the generated source for a loop's chain, compiled by
// NVRTC with the embedded headers for sm_90. Needs no GPU, so CI compiles every op of the ufunc
// table for every dtype it takes exactly as a fused loop would. (Running them, against the
// unfused kernels, is the GPU integration suite's job: tests/integration/graph_test.cc.) Skips
// where NVRTC cannot be loaded, unless DISTARRAY_REQUIRE_BACKENDS names "cuda".
#include <gtest/gtest.h>

#ifdef DISTARRAY_HAVE_CUDA

#include <limits>
#include <string>
#include <type_traits>

#include "server/cuda/fusion/fused_loop_source.h"
#include "server/cuda/fusion/nvrtc_api.h"
#include "server/cuda/fusion/rtc_compiler.h"
#include "tests/support/required_backends.h"

namespace distarray {
namespace {

void RequireNvrtc() {
  if (absl::StatusOr<const cuda::NvrtcApi*> nvrtc = cuda::LoadNvrtc(); !nvrtc.ok()) {
    if (testing::BackendRequired("cuda")) FAIL() << nvrtc.status();
    GTEST_SKIP() << nvrtc.status();
  }
}

FusedLoop::Arg ValueArg(bool is_input, int index, DType read) {
  FusedLoop::Arg arg;
  arg.value = FusedLoop::Value{is_input, index};
  arg.read = read;
  return arg;
}

FusedLoop::Arg ScalarArg(Scalar scalar, DType read) {
  FusedLoop::Arg arg;
  arg.scalar = scalar;
  arg.read = read;
  return arg;
}

// The seed's loop: a = a + 1; c = all(a < 1000).
FusedLoop SeedLoop() {
  FusedLoop loop;
  loop.inputs = {{nullptr, DType::kFloat32}};
  loop.ops = {
      {ElementwiseOpId::kAdd,
       DType::kFloat32,
       DType::kFloat32,
       {ValueArg(true, 0, DType::kFloat32), ScalarArg(Scalar::Float(1), DType::kFloat32)}},
      {ElementwiseOpId::kLess,
       DType::kFloat32,
       DType::kBool,
       {ValueArg(false, 0, DType::kFloat32), ScalarArg(Scalar::Float(1000), DType::kFloat32)}}};
  loop.stores = {{FusedLoop::Value{false, 0}, nullptr}};
  loop.predicate = FusedLoop::Value{false, 1};
  loop.elements = 100000;
  return loop;
}

TEST(FusedLoopSourceTest, WritesScalarsExactlyAndStoresTheCarriedValue) {
  const std::string source = cuda::FusedLoopSource(SeedLoop());
  EXPECT_NE(source.find("u::Add{}(x0, __int_as_float(0x3f800000))"), std::string::npos) << source;
  EXPECT_NE(source.find("u::Less{}(v0, __int_as_float(0x447a0000))"), std::string::npos) << source;
  // Four floats a pack (16-byte accesses), then the elements past the last whole pack.
  EXPECT_NE(source.find("constexpr int kW = 4;"), std::string::npos) << source;
  EXPECT_NE(source.find("q0.v[l] = v0;"), std::string::npos) << source;
  EXPECT_NE(source.find("out0[i] = v0;"), std::string::npos) << source;
  EXPECT_NE(source.find("local = local && v1;"), std::string::npos) << source;
  EXPECT_NE(source.find("FinishIteration(args, local, true)"), std::string::npos) << source;
}

TEST(FusedLoopSourceTest, CastsOperandsOfAnotherDtypeAndWritesTheMostNegativeInteger) {
  FusedLoop loop = SeedLoop();
  loop.inputs.push_back({nullptr, DType::kInt32});
  // v2 = int64 max(x1 as int64, INT64_MIN)
  loop.ops.push_back(
      {ElementwiseOpId::kMaximum,
       DType::kInt64,
       DType::kInt64,
       {ValueArg(true, 1, DType::kInt64),
        ScalarArg(Scalar::Int(std::numeric_limits<int64_t>::min()), DType::kInt64)}});
  const std::string source = cuda::FusedLoopSource(loop);
  EXPECT_NE(source.find("u::Cast<int64_t>(x1)"), std::string::npos) << source;
  EXPECT_NE(source.find("static_cast<int64_t>(0x8000000000000000ull)"), std::string::npos)
      << source;
  // A float and an int32 input and a float store: one element size, still packs of four.
  EXPECT_NE(source.find("constexpr int kW = 4;"), std::string::npos) << source;
  loop.inputs.push_back({nullptr, DType::kFloat64});
  EXPECT_NE(cuda::FusedLoopSource(loop).find("constexpr int kW = 1;"), std::string::npos);
}

TEST(FusedLoopSourceTest, TheSeedLoopCompiles) {
  RequireNvrtc();
  absl::StatusOr<std::string> cubin =
      cuda::CompileToCubin(cuda::FusedLoopSource(SeedLoop()), "sm_90");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_GT(cubin->size(), 0u);
}

// The persistent form: the same chain inside a loop of the kernel's own, each iteration ended by
// the grid barrier's vote; the launch's position and start count read once, before it.
TEST(FusedLoopSourceTest, ThePersistentSeedLoopIteratesInsideOneLaunchAndCompiles) {
  const std::string source =
      cuda::FusedLoopSource(SeedLoop(), /*aligned=*/true, /*persistent=*/true);
  EXPECT_EQ(source.find("Running(args)"), std::string::npos) << source;
  EXPECT_EQ(source.find("FinishIteration"), std::string::npos) << source;
  const size_t started = source.find("const int64_t started =");
  const size_t loop = source.find("for (int k = 0;; ++k) {");
  const size_t chain = source.find("q0.v[l] = v0;");
  const size_t next =
      source.find("PersistentNextIteration(args, local, true, position, started, k)");
  ASSERT_NE(started, std::string::npos) << source;
  ASSERT_NE(loop, std::string::npos) << source;
  ASSERT_NE(chain, std::string::npos) << source;
  ASSERT_NE(next, std::string::npos) << source;
  EXPECT_LT(started, loop);
  EXPECT_LT(loop, chain);
  EXPECT_LT(chain, next);
  RequireNvrtc();
  absl::StatusOr<std::string> cubin = cuda::CompileToCubin(source, "sm_90");
  ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << source;
  EXPECT_GT(cubin->size(), 0u);
  FusedLoop any = SeedLoop();
  any.all = false;
  EXPECT_NE(cuda::FusedLoopSource(any, true, true)
                .find("PersistentNextIteration(args, local, false, position, started, k)"),
            std::string::npos);
}

// One loop per dtype holding every op of the table that takes it, each reading the input (and
// scalars), so NVRTC instantiates every functor exactly as a fused loop of that op would.
template <typename T>
FusedLoop EveryOpOn() {
  const DType dtype = DTypeFor<T>();
  FusedLoop loop;
  loop.inputs = {{nullptr, dtype}};
  const FusedLoop::Arg x = ValueArg(true, 0, dtype);
  const FusedLoop::Arg two = ScalarArg(Scalar::Int(2), dtype);
#define DA_EVERY_OP(suffix, functor, name, arity, rule, complex)              \
  if constexpr (ufunc::Accepts<ufunc::functor, T, arity>()) {                 \
    using R = typename ufunc::ResultOf<ufunc::functor, T, arity>::type;       \
    FusedLoop::Op op{ElementwiseOpId::k##functor, dtype, DTypeFor<R>(), {x}}; \
    if (arity >= 2) op.args.push_back(two);                                   \
    if (arity == 3) op.args.push_back(x);                                     \
    if (std::is_same_v<ufunc::functor, ufunc::Where>)                         \
      op.args[0] = ValueArg(true, 0, DType::kBool);                           \
    loop.ops.push_back(op);                                                   \
  }
  DISTARRAY_ELEMENTWISE_OPS(DA_EVERY_OP)
#undef DA_EVERY_OP
  // astype to every dtype, then the predicate.
  for (DType to : {DType::kBool, DType::kInt8, DType::kUInt64, DType::kFloat32, DType::kFloat64}) {
    loop.ops.push_back({std::nullopt, dtype, to, {x}});
  }
  loop.ops.push_back({ElementwiseOpId::kNotEqual, dtype, DType::kBool, {x, two}});
  loop.predicate = FusedLoop::Value{false, static_cast<int>(loop.ops.size()) - 1};
  loop.stores = {{FusedLoop::Value{false, 0}, nullptr}};
  loop.all = false;
  return loop;
}

template <typename T>
class FusedLoopCompileTest : public ::testing::Test {};
using AllDTypes = ::testing::Types<bool, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t,
                                   uint32_t, uint64_t, float, double>;
TYPED_TEST_SUITE(FusedLoopCompileTest, AllDTypes);

TYPED_TEST(FusedLoopCompileTest, EveryOpOfTheTableCompiles) {
  RequireNvrtc();
  const FusedLoop loop = EveryOpOn<TypeParam>();
  ASSERT_GT(loop.ops.size(), 5u);
  const std::string source = cuda::FusedLoopSource(loop);
  absl::StatusOr<std::string> cubin = cuda::CompileToCubin(source, "sm_90");
  ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << source;
}

// 16-bit floats: loaded from their bits, each op's float32 result rounded once to the dtype,
// stored as bits; every op of the table that float32 takes, on float16 and bfloat16 storage.
TEST(FusedLoopSourceTest, SixteenBitFloatsRoundEachResultAndCompile) {
  for (const DType half : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(DTypeName(half));
    FusedLoop loop = EveryOpOn<float>();
    loop.inputs[0].dtype = half;
    for (FusedLoop::Op& op : loop.ops) {
      for (FusedLoop::Arg& arg : op.args) {
        if (arg.read == DType::kFloat32) arg.read = half;
      }
      if (op.op && op.result == DType::kFloat32) op.result = half;  // StoredOut
    }
    const std::string source = cuda::FusedLoopSource(loop);
    const std::string name = half == DType::kFloat16 ? "Float16" : "BFloat16";
    EXPECT_NE(source.find("const unsigned short* const in0"), std::string::npos) << source;
    EXPECT_NE(source.find("const float x0 = distarray::cuda::fused::" + name + "Bits(p0[u].v[l])"),
              std::string::npos)
        << source;
    EXPECT_NE(source.find("distarray::cuda::fused::Round" + name + "(static_cast<float>(u::Add{}("),
              std::string::npos)
        << source;
    EXPECT_NE(source.find("q0.v[l] = distarray::cuda::fused::To" + name + "Bits(v0)"),
              std::string::npos)
        << source;
    EXPECT_NE(source.find("constexpr int kW = 8;"), std::string::npos) << source;  // 16 bytes
    RequireNvrtc();
    absl::StatusOr<std::string> cubin = cuda::CompileToCubin(source, "sm_90");
    ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << source;
  }
}

// A straight-line chain (RecordFusedChain) of a solver's recurrence: c = a / hypot(a, b);
// r = where(r0 == 0, 1.0, hypot(a, b)) over float64 0-d values; every value stored, no condition.
TEST(FusedChainSourceTest, StoresEveryValueAndCompiles) {
  FusedLoop chain;
  chain.inputs = {{nullptr, DType::kFloat64}, {nullptr, DType::kFloat64}};
  chain.ops = {
      {ElementwiseOpId::kHypot,
       DType::kFloat64,
       DType::kFloat64,
       {ValueArg(true, 0, DType::kFloat64), ValueArg(true, 1, DType::kFloat64)}},
      {ElementwiseOpId::kEqual,
       DType::kFloat64,
       DType::kBool,
       {ValueArg(false, 0, DType::kFloat64), ScalarArg(Scalar::Float(0), DType::kFloat64)}},
      {ElementwiseOpId::kWhere,
       DType::kFloat64,
       DType::kFloat64,
       {ValueArg(false, 1, DType::kBool), ScalarArg(Scalar::Float(1), DType::kFloat64),
        ValueArg(false, 0, DType::kFloat64)}},
      {ElementwiseOpId::kTrueDivide,
       DType::kFloat64,
       DType::kFloat64,
       {ValueArg(true, 0, DType::kFloat64), ValueArg(false, 2, DType::kFloat64)}}};
  chain.stores = {{FusedLoop::Value{false, 3}, nullptr},
                  {FusedLoop::Value{false, 2}, nullptr},
                  {FusedLoop::Value{false, 1}, nullptr}};
  chain.elements = 1;
  const std::string source = cuda::FusedChainSource(chain);
  EXPECT_NE(source.find(cuda::kFusedChainKernelName), std::string::npos) << source;
  EXPECT_NE(source.find("u::Hypot{}(x0, x1)"), std::string::npos) << source;
  EXPECT_NE(source.find("out0[i] = v3;"), std::string::npos) << source;
  EXPECT_NE(source.find("out2[i] = v1;"), std::string::npos) << source;
  EXPECT_EQ(source.find("local"), std::string::npos) << source;  // no condition
  RequireNvrtc();
  absl::StatusOr<std::string> cubin = cuda::CompileToCubin(source, "sm_90");
  ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << source;
}

// A chain over vectors fed by 0-d values: x + alpha * p with alpha broadcast (read at element 0)
// and alpha * 0.5 stored once, by element 0.
TEST(FusedChainSourceTest, ReadsBroadcastInputsAtElementZeroAndStoresThemOnce) {
  FusedLoop chain;
  chain.inputs = {{nullptr, DType::kFloat64, /*broadcast=*/true},
                  {nullptr, DType::kFloat64, /*broadcast=*/false},
                  {nullptr, DType::kFloat64, /*broadcast=*/false}};
  chain.ops = {
      {ElementwiseOpId::kMultiply,
       DType::kFloat64,
       DType::kFloat64,
       {ValueArg(true, 0, DType::kFloat64), ValueArg(true, 2, DType::kFloat64)}},
      {ElementwiseOpId::kAdd,
       DType::kFloat64,
       DType::kFloat64,
       {ValueArg(true, 1, DType::kFloat64), ValueArg(false, 0, DType::kFloat64)}},
      {ElementwiseOpId::kMultiply,
       DType::kFloat64,
       DType::kFloat64,
       {ValueArg(true, 0, DType::kFloat64), ScalarArg(Scalar::Float(0.5), DType::kFloat64)}}};
  chain.stores = {{FusedLoop::Value{false, 1}, nullptr, /*broadcast=*/false},
                  {FusedLoop::Value{false, 2}, nullptr, /*broadcast=*/true}};
  chain.elements = 1000;
  const std::string source = cuda::FusedChainSource(chain);
  EXPECT_NE(source.find("x0 = in0[0];"), std::string::npos) << source;
  EXPECT_NE(source.find("x1 = in1[i];"), std::string::npos) << source;
  EXPECT_NE(source.find("out0[i] = v1;"), std::string::npos) << source;
  EXPECT_NE(source.find("if (i == 0) out1[0] = v2;"), std::string::npos) << source;
  RequireNvrtc();
  absl::StatusOr<std::string> cubin = cuda::CompileToCubin(source, "sm_90");
  ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << source;
}

// A chain that ends in a sum (a dot product d . q): the product at each element, added up per
// thread, then across the grid by FinishChainSum.
TEST(FusedChainSourceTest, AChainEndingInASumAddsUpItsValueAndCompiles) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat64}) {
    FusedLoop chain;
    chain.inputs = {{nullptr, dtype}, {nullptr, dtype}};
    chain.ops = {{ElementwiseOpId::kMultiply,
                  dtype,
                  dtype,
                  {ValueArg(true, 0, dtype), ValueArg(true, 1, dtype)}}};
    chain.stores = {{FusedLoop::Value{false, 0}, nullptr}};
    chain.sum = FusedLoop::Value{false, 0};
    chain.elements = 1 << 20;
    const std::string source = cuda::FusedChainSource(chain);
    const std::string type = dtype == DType::kFloat32 ? "float" : "double";
    EXPECT_NE(source.find("  " + type + " sum = 0;"), std::string::npos) << source;
    EXPECT_NE(source.find("sum += v0;"), std::string::npos) << source;
    EXPECT_NE(source.find("FinishChainSum<" + type + ">(args, sum);"), std::string::npos) << source;
    RequireNvrtc();
    absl::StatusOr<std::string> cubin = cuda::CompileToCubin(source, "sm_90");
    ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << source;
  }
}

}  // namespace
}  // namespace distarray

#endif  // DISTARRAY_HAVE_CUDA
