// Every ElementwiseOp against the host model of tests/support/compute_reference.h (NumPy 2's
// promotion and each ufunc's rule, computed exactly for integers and in long double for floats),
// on fresh random inputs in random layouts (overlapping, strided, with gaps); broadcasting across
// layouts, out= and result_index_map, operands in op modes, and the errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

constexpr long double kNaN = std::numeric_limits<long double>::quiet_NaN();
constexpr long double kInf = std::numeric_limits<long double>::infinity();

// An operand of a call: an array (with its logical values) or a scalar.
struct In {
  const Array* array = nullptr;
  HostArray logical;
  v1::Scalar scalar;
};

In ArrayIn(const Array& array, HostArray logical) {
  In in;
  in.array = &array;
  in.logical = std::move(logical);
  return in;
}
In ScalarIn(const v1::Scalar& s) {
  In in;
  in.scalar = s;
  return in;
}
template <typename T>
In ScalarIn(T value) {
  return ScalarIn(MakeScalar(value));
}

std::string Describe(v1::ElementwiseOp op, const std::vector<In>& ins) {
  std::vector<std::string> parts;
  for (const In& in : ins) {
    parts.push_back(in.array != nullptr ? Describe(in.logical) : in.scalar.ShortDebugString());
  }
  return absl::StrCat(v1::ElementwiseOp_Name(op), "(", absl::StrJoin(parts, ", "), ")");
}

v1::ElementwiseRequest Request(v1::ElementwiseOp op, const std::vector<In>& ins) {
  v1::ElementwiseRequest request;
  request.mutable_spec()->set_op(op);
  for (const In& in : ins) {
    v1::Operand* o = request.mutable_spec()->add_operands();
    if (in.array != nullptr) {
      o->set_handle(in.array->handle());
    } else {
      *o->mutable_scalar() = in.scalar;
    }
  }
  return request;
}

// `got` is `operand`'s layout expanded along the broadcast axes of `result_shape`: chunk for
// chunk on the same device, whole along new and stretched axes, the operand's slices elsewhere.
::testing::AssertionResult IsExpandedLayout(const v1::IndexMap& got, const v1::IndexMap& operand,
                                            const Shape& operand_shape, const Shape& result_shape) {
  auto fail = [&]() {
    return ::testing::AssertionFailure()
           << "result layout " << got.ShortDebugString() << " is not " << operand.ShortDebugString()
           << " of shape " << ShapeStr(operand_shape) << " expanded to " << ShapeStr(result_shape)
           << ": ";
  };
  if (got.chunks_size() != operand.chunks_size()) return fail() << "chunk count";
  const size_t lead = result_shape.size() - operand_shape.size();
  for (int c = 0; c < got.chunks_size(); ++c) {
    const v1::Chunk& g = got.chunks(c);
    const v1::Chunk& o = operand.chunks(c);
    if (g.device() != o.device()) return fail() << "chunk " << c << " device";
    if (g.slices_size() != static_cast<int>(result_shape.size())) return fail() << "rank";
    for (size_t d = 0; d < result_shape.size(); ++d) {
      const v1::Slice& s = g.slices(d);
      const int64_t start = s.has_start() ? s.start() : 0;
      const int64_t stop = s.has_stop() ? s.stop() : result_shape[d];
      const int64_t step = s.has_step() ? s.step() : 1;
      const bool whole = d < lead || (operand_shape[d - lead] == 1 && result_shape[d] != 1);
      if (whole) {
        if (start != 0 || stop != result_shape[d] || step != 1) {
          return fail() << "chunk " << c << " axis " << d << " should be whole";
        }
        continue;
      }
      const v1::Slice& os = o.slices(d - lead);
      if (start != (os.has_start() ? os.start() : 0) ||
          stop != (os.has_stop() ? os.stop() : operand_shape[d - lead]) ||
          step != (os.has_step() ? os.step() : 1)) {
        return fail() << "chunk " << c << " axis " << d << " differs from the operand's";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

enum class Layout {
  kFromOperands,  // the first array operand of the result's shape, or the first one expanded
  kUnchecked,     // the caller checks it (out=, result_index_map)
};

// Sends `request` (over `ins`) and checks the answer against the model: the status code, then
// the result's dtype, shape, REPLICA
// mode, layout and values (elements its layout leaves uncovered read as 0).
::testing::AssertionResult Check(const Client& client, const v1::ElementwiseRequest& request,
                                 const std::vector<In>& ins, Layout layout = Layout::kFromOperands,
                                 std::optional<Array>* result_out = nullptr) {
  const v1::ElementwiseOp op = request.spec().op();
  const std::string what = Describe(op, ins);
  std::vector<RefOperand> operands;
  for (const In& in : ins) {
    operands.push_back(in.array != nullptr ? RefOperand{&in.logical, {}}
                                           : RefOperand{nullptr, in.scalar});
  }
  const UfuncReference ref = ReferenceUfunc(op, operands, request.spec().dtype());
  absl::StatusOr<Array> result = client.Elementwise(request);
  if (ref.code != absl::StatusCode::kOk) {
    std::vector<std::string> needles;
    ::testing::AssertionResult s = StatusIs(result.status(), ref.code, needles);
    if (!s) return s << " for " << what;
    return s;
  }
  if (!result.ok()) return ::testing::AssertionFailure() << what << ": " << result.status();
  const v1::ArrayInfo& info = result->info();
  if (info.dtype() != ref.result.dtype) {
    return ::testing::AssertionFailure() << what << ": result dtype " << DTypeStr(info.dtype())
                                         << ", want " << DTypeStr(ref.result.dtype);
  }
  if (result->shape() != ref.result.shape) {
    return ::testing::AssertionFailure() << what << ": result shape " << ShapeStr(result->shape())
                                         << ", want " << ShapeStr(ref.result.shape);
  }
  if (info.mode() != v1::MODE_REPLICA) {
    return ::testing::AssertionFailure() << what << ": mode " << v1::Mode_Name(info.mode());
  }
  if (layout == Layout::kFromOperands) {
    const In* first = nullptr;
    const In* same_shape = nullptr;
    for (const In& in : ins) {
      if (in.array == nullptr) continue;
      if (first == nullptr) first = &in;
      if (same_shape == nullptr && in.logical.shape == ref.result.shape) same_shape = &in;
    }
    if (same_shape != nullptr) {
      if (!SameIndexMap(info.index_map(), same_shape->array->info().index_map())) {
        return ::testing::AssertionFailure()
               << what << ": result layout " << info.index_map().ShortDebugString()
               << " is not that of the first operand of the result's shape, "
               << same_shape->array->info().index_map().ShortDebugString();
      }
    } else if (first != nullptr) {
      ::testing::AssertionResult s =
          IsExpandedLayout(info.index_map(), first->array->info().index_map(), first->logical.shape,
                           ref.result.shape);
      if (!s) return s << " (" << what << ")";
    }
  }
  absl::StatusOr<HostArray> got = DownloadHost(*result);
  if (!got.ok()) return ::testing::AssertionFailure() << what << ": download " << got.status();
  HostArray want = ref.result;
  const std::vector<bool> covered = Covered(info.index_map(), want.shape);
  for (size_t i = 0; i < want.values.size(); ++i) {
    if (!covered[i]) want.values[i] = 0;
  }
  ::testing::AssertionResult s = ValuesMatch(*got, want, UfuncTolerance(op, want.dtype));
  if (result_out != nullptr) result_out->emplace(*std::move(result));
  if (!s) return s << "\n  in " << what;
  return s;
}

::testing::AssertionResult Check(const Client& client, v1::ElementwiseOp op,
                                 const std::vector<In>& ins) {
  return Check(client, Request(op, ins), ins);
}

const std::vector<std::vector<v1::DType>>& BinaryDTypeSets() {
  static const auto* sets = [] {
    auto* out = new std::vector<std::vector<v1::DType>>();
    for (v1::DType d : ImplementedDTypes()) out->push_back({d, d});
    const std::vector<std::vector<v1::DType>> mixed = {
        {v1::DTYPE_INT32, v1::DTYPE_FLOAT32}, {v1::DTYPE_INT8, v1::DTYPE_UINT8},
        {v1::DTYPE_INT64, v1::DTYPE_UINT64},  {v1::DTYPE_UINT8, v1::DTYPE_INT16},
        {v1::DTYPE_BOOL, v1::DTYPE_INT32},    {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64},
        {v1::DTYPE_INT16, v1::DTYPE_UINT32},  {v1::DTYPE_UINT16, v1::DTYPE_FLOAT32},
        {v1::DTYPE_UINT64, v1::DTYPE_INT8},
    };
    out->insert(out->end(), mixed.begin(), mixed.end());
    return out;
  }();
  return *sets;
}

class UfuncTest : public BackendTest {
 protected:
  std::vector<int> AllDevices() const { return {dev(0), dev(1), dev(2), dev(3)}; }

  // Runs each op on fresh random operands of each dtype set (one array per dtype, each in its own
  // random layout) and, where `scalars` and the dtypes are equal, with a scalar on either side.
  void Sweep(const std::vector<v1::ElementwiseOp>& ops,
             const std::vector<std::vector<v1::DType>>& dtype_sets, uint64_t seed, bool scalars) {
    std::mt19937_64 rng(seed);
    const Shape shape = {11, 7};
    for (v1::ElementwiseOp op : ops) {
      const UfuncInfo& u = UfuncFor(op);
      for (const std::vector<v1::DType>& dtypes : dtype_sets) {
        ASSERT_EQ(static_cast<int>(dtypes.size()), u.arity);
        std::vector<Array> arrays;
        std::vector<In> ins;
        arrays.reserve(dtypes.size());
        for (size_t k = 0; k < dtypes.size(); ++k) {
          const HostArray values = RandomHost(dtypes[k], shape, rng, u.domains[k]);
          const TestMap map = RandomMap(shape, devices(), rng);
          ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, shape)));
          arrays.push_back(std::move(a));
          ins.push_back(ArrayIn(arrays.back(), Logical(values, map)));
        }
        EXPECT_TRUE(Check(client(), op, ins));
        const bool same =
            std::all_of(dtypes.begin(), dtypes.end(), [&](v1::DType d) { return d == dtypes[0]; });
        if (scalars && u.arity == 2 && same) {
          const v1::Scalar right =
              ScalarFor(dtypes[1], RandomElement(dtypes[1], u.domains[1], rng));
          const v1::Scalar left = ScalarFor(dtypes[0], RandomElement(dtypes[0], u.domains[0], rng));
          EXPECT_TRUE(Check(client(), op, {ins[0], ScalarIn(right)}));
          EXPECT_TRUE(Check(client(), op, {ScalarIn(left), ins[1]}));
        }
      }
    }
  }

  // Uploads `values` (dtype T) of `shape` in `map`.
  template <typename T>
  absl::StatusOr<Array> Put(const std::vector<T>& values, const Shape& shape,
                            const v1::IndexMap& map) {
    auto data = Contiguous(values);
    return client().Upload<T>(std::span<const T>(data.get(), values.size()), shape, ArrayOpts(map));
  }
};

// Every op of the proto has a model here (ASTYPE is checked by AsTypeEveryPairOfDTypes).
TEST_P(UfuncTest, EveryOpOfTheProtoIsModelled) {
  const google::protobuf::EnumDescriptor* ops = v1::ElementwiseOp_descriptor();
  for (int i = 0; i < ops->value_count(); ++i) {
    const auto op = static_cast<v1::ElementwiseOp>(ops->value(i)->number());
    if (op == v1::ELEMENTWISE_OP_UNSPECIFIED || op == v1::ELEMENTWISE_OP_ASTYPE) continue;
    EXPECT_TRUE(std::any_of(Ufuncs().begin(), Ufuncs().end(),
                            [&](const UfuncInfo& u) { return u.op == op; }))
        << ops->value(i)->name() << " has no model: add it to compute_reference.h and a sweep";
  }
}

TEST_P(UfuncTest, ArithmeticOnEveryDTypeAndMixedPairs) {
  Sweep({v1::ELEMENTWISE_OP_ADD, v1::ELEMENTWISE_OP_SUBTRACT, v1::ELEMENTWISE_OP_MULTIPLY,
         v1::ELEMENTWISE_OP_DIVIDE, v1::ELEMENTWISE_OP_POWER, v1::ELEMENTWISE_OP_FLOOR_DIVIDE,
         v1::ELEMENTWISE_OP_REMAINDER},
        BinaryDTypeSets(), 101, /*scalars=*/true);
}

TEST_P(UfuncTest, ExtremaAndBinaryFloatFunctions) {
  Sweep({v1::ELEMENTWISE_OP_MAXIMUM, v1::ELEMENTWISE_OP_MINIMUM, v1::ELEMENTWISE_OP_FMAX,
         v1::ELEMENTWISE_OP_FMIN, v1::ELEMENTWISE_OP_ARCTAN2, v1::ELEMENTWISE_OP_HYPOT},
        BinaryDTypeSets(), 102, /*scalars=*/true);
}

TEST_P(UfuncTest, ComparisonsAndLogicalOpsReturnBool) {
  Sweep({v1::ELEMENTWISE_OP_LESS, v1::ELEMENTWISE_OP_LESS_EQUAL, v1::ELEMENTWISE_OP_GREATER,
         v1::ELEMENTWISE_OP_GREATER_EQUAL, v1::ELEMENTWISE_OP_EQUAL, v1::ELEMENTWISE_OP_NOT_EQUAL,
         v1::ELEMENTWISE_OP_LOGICAL_AND, v1::ELEMENTWISE_OP_LOGICAL_OR,
         v1::ELEMENTWISE_OP_LOGICAL_XOR},
        BinaryDTypeSets(), 103, /*scalars=*/true);
}

TEST_P(UfuncTest, BitwiseOpsAndShifts) {
  Sweep({v1::ELEMENTWISE_OP_BITWISE_AND, v1::ELEMENTWISE_OP_BITWISE_OR,
         v1::ELEMENTWISE_OP_BITWISE_XOR, v1::ELEMENTWISE_OP_LEFT_SHIFT,
         v1::ELEMENTWISE_OP_RIGHT_SHIFT},
        BinaryDTypeSets(), 104, /*scalars=*/true);
}

std::vector<std::vector<v1::DType>> UnaryDTypeSets() {
  std::vector<std::vector<v1::DType>> out;
  for (v1::DType d : ImplementedDTypes()) out.push_back({d});
  return out;
}

TEST_P(UfuncTest, UnaryArithmeticRoundingAndPredicates) {
  Sweep({v1::ELEMENTWISE_OP_NEGATIVE, v1::ELEMENTWISE_OP_POSITIVE, v1::ELEMENTWISE_OP_ABS,
         v1::ELEMENTWISE_OP_SIGN, v1::ELEMENTWISE_OP_SQUARE, v1::ELEMENTWISE_OP_FLOOR,
         v1::ELEMENTWISE_OP_CEIL, v1::ELEMENTWISE_OP_TRUNC, v1::ELEMENTWISE_OP_RINT,
         v1::ELEMENTWISE_OP_LOGICAL_NOT, v1::ELEMENTWISE_OP_INVERT, v1::ELEMENTWISE_OP_ISNAN,
         v1::ELEMENTWISE_OP_ISINF, v1::ELEMENTWISE_OP_ISFINITE},
        UnaryDTypeSets(), 105, /*scalars=*/false);
}

TEST_P(UfuncTest, UnaryFloatFunctions) {
  Sweep({v1::ELEMENTWISE_OP_SQRT, v1::ELEMENTWISE_OP_EXP, v1::ELEMENTWISE_OP_EXPM1,
         v1::ELEMENTWISE_OP_LOG, v1::ELEMENTWISE_OP_LOG1P, v1::ELEMENTWISE_OP_LOG2,
         v1::ELEMENTWISE_OP_LOG10, v1::ELEMENTWISE_OP_SIN, v1::ELEMENTWISE_OP_COS,
         v1::ELEMENTWISE_OP_TAN, v1::ELEMENTWISE_OP_ARCSIN, v1::ELEMENTWISE_OP_ARCCOS,
         v1::ELEMENTWISE_OP_ARCTAN, v1::ELEMENTWISE_OP_SINH, v1::ELEMENTWISE_OP_COSH,
         v1::ELEMENTWISE_OP_TANH},
        UnaryDTypeSets(), 106, /*scalars=*/false);
}

TEST_P(UfuncTest, WhereAndClipOnEveryDType) {
  std::vector<std::vector<v1::DType>> sets;
  const std::vector<v1::DType>& all = ImplementedDTypes();
  for (size_t i = 0; i < all.size(); ++i) {
    // Conditions of every dtype; x and y of the same or of mixed dtypes.
    sets.push_back({all[i], all[(i + 3) % all.size()], all[(i + 3) % all.size()]});
    sets.push_back({all[i], all[(i + 5) % all.size()], all[(i + 9) % all.size()]});
  }
  Sweep({v1::ELEMENTWISE_OP_WHERE, v1::ELEMENTWISE_OP_CLIP}, sets, 107, /*scalars=*/false);
}

TEST_P(UfuncTest, PromotionOfEveryPairFollowsNumPy) {
  // The model's table at the points the API promises.
  EXPECT_EQ(ResultType(v1::DTYPE_INT32, v1::DTYPE_FLOAT32), v1::DTYPE_FLOAT64);
  EXPECT_EQ(ResultType(v1::DTYPE_INT8, v1::DTYPE_UINT8), v1::DTYPE_INT16);
  EXPECT_EQ(ResultType(v1::DTYPE_INT64, v1::DTYPE_UINT64), v1::DTYPE_FLOAT64);
  EXPECT_EQ(ResultType(v1::DTYPE_UINT8, v1::DTYPE_INT16), v1::DTYPE_INT16);
  EXPECT_EQ(ResultType(v1::DTYPE_INT16, v1::DTYPE_FLOAT32), v1::DTYPE_FLOAT32);
  EXPECT_EQ(ResultType(v1::DTYPE_UINT32, v1::DTYPE_INT8), v1::DTYPE_INT64);
  EXPECT_EQ(ResultType(v1::DTYPE_BOOL, v1::DTYPE_UINT16), v1::DTYPE_UINT16);

  std::mt19937_64 rng(108);
  const Shape shape = {6, 5};
  std::vector<Array> arrays;
  std::vector<HostArray> logical;
  arrays.reserve(ImplementedDTypes().size());
  for (v1::DType d : ImplementedDTypes()) {
    const HostArray values = RandomHost(d, shape, rng);
    const TestMap map = RandomMap(shape, devices(), rng);
    ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, shape)));
    arrays.push_back(std::move(a));
    logical.push_back(Logical(values, map));
  }
  for (size_t i = 0; i < arrays.size(); ++i) {
    for (size_t j = 0; j < arrays.size(); ++j) {
      EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_ADD,
                        {ArrayIn(arrays[i], logical[i]), ArrayIn(arrays[j], logical[j])}));
    }
  }
  // The named examples, end to end.
  const std::vector<std::tuple<v1::DType, v1::DType, v1::DType>> examples = {
      {v1::DTYPE_INT32, v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64},
      {v1::DTYPE_INT8, v1::DTYPE_UINT8, v1::DTYPE_INT16},
      {v1::DTYPE_INT64, v1::DTYPE_UINT64, v1::DTYPE_FLOAT64},
      {v1::DTYPE_UINT8, v1::DTYPE_INT16, v1::DTYPE_INT16},
  };
  auto index = [](v1::DType d) {
    return std::find(ImplementedDTypes().begin(), ImplementedDTypes().end(), d) -
           ImplementedDTypes().begin();
  };
  for (const auto& [a, b, want] : examples) {
    ASSERT_OK_AND_ASSIGN(Array sum,
                         Ufunc(v1::ELEMENTWISE_OP_ADD, {arrays[index(a)], arrays[index(b)]}));
    EXPECT_EQ(sum.info().dtype(), want) << DTypeStr(a) << " + " << DTypeStr(b);
  }
}

TEST_P(UfuncTest, ScalarsAreWeak) {
  struct Case {
    v1::DType array;
    v1::Scalar scalar;
    bool scalar_first;
    v1::ElementwiseOp op;
    absl::StatusCode code;
    v1::DType result;  // when OK
  };
  auto i = [](int64_t v) { return MakeScalar(v); };
  auto u = [](uint64_t v) { return MakeScalar(v); };
  auto f = [](double v) { return MakeScalar(v); };
  auto b = [](bool v) { return MakeScalar(v); };
  const auto kOk = absl::StatusCode::kOk;
  const auto kBad = absl::StatusCode::kInvalidArgument;
  const auto add = v1::ELEMENTWISE_OP_ADD;
  const std::vector<Case> cases = {
      {v1::DTYPE_INT8, i(100), false, add, kOk, v1::DTYPE_INT8},
      {v1::DTYPE_INT8, i(300), false, add, kBad, {}},
      {v1::DTYPE_INT8, i(-129), false, add, kBad, {}},
      {v1::DTYPE_INT8, i(300), true, v1::ELEMENTWISE_OP_SUBTRACT, kBad, {}},
      {v1::DTYPE_UINT8, i(-1), false, add, kBad, {}},
      {v1::DTYPE_UINT8, i(255), true, v1::ELEMENTWISE_OP_SUBTRACT, kOk, v1::DTYPE_UINT8},
      {v1::DTYPE_UINT8, i(-1), false, v1::ELEMENTWISE_OP_MAXIMUM, kBad, {}},
      {v1::DTYPE_UINT8, i(7), true, v1::ELEMENTWISE_OP_FLOOR_DIVIDE, kOk, v1::DTYPE_UINT8},
      {v1::DTYPE_UINT16, i(70000), false, add, kBad, {}},
      {v1::DTYPE_UINT64, u(UINT64_MAX), false, add, kOk, v1::DTYPE_UINT64},
      {v1::DTYPE_INT64, u(uint64_t{1} << 63), false, add, kBad, {}},
      {v1::DTYPE_INT64, i(INT64_MIN), false, add, kOk, v1::DTYPE_INT64},
      {v1::DTYPE_INT32, f(2.5), false, add, kOk, v1::DTYPE_FLOAT64},
      {v1::DTYPE_INT16, f(0.5), false, v1::ELEMENTWISE_OP_MULTIPLY, kOk, v1::DTYPE_FLOAT64},
      {v1::DTYPE_INT32, f(2.5), true, v1::ELEMENTWISE_OP_DIVIDE, kOk, v1::DTYPE_FLOAT64},
      {v1::DTYPE_FLOAT32, f(0.1), false, add, kOk, v1::DTYPE_FLOAT32},
      {v1::DTYPE_FLOAT32, i(3), false, add, kOk, v1::DTYPE_FLOAT32},
      {v1::DTYPE_FLOAT32, i(int64_t{1} << 40), false, add, kOk, v1::DTYPE_FLOAT32},
      {v1::DTYPE_FLOAT64, b(true), false, add, kOk, v1::DTYPE_FLOAT64},
      {v1::DTYPE_BOOL, i(5), false, add, kOk, v1::DTYPE_INT64},
      {v1::DTYPE_BOOL, f(2.5), false, add, kOk, v1::DTYPE_FLOAT64},
      {v1::DTYPE_BOOL, b(true), false, add, kOk, v1::DTYPE_BOOL},
      {v1::DTYPE_INT16, b(true), false, add, kOk, v1::DTYPE_INT16},
      {v1::DTYPE_UINT32, b(true), true, v1::ELEMENTWISE_OP_SUBTRACT, kOk, v1::DTYPE_UINT32},
  };
  std::mt19937_64 rng(109);
  const Shape shape = {5, 6};
  for (const Case& c : cases) {
    const HostArray values = RandomHost(c.array, shape, rng);
    const TestMap map = RandomMap(shape, devices(), rng);
    ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, shape)));
    const In array = ArrayIn(a, Logical(values, map));
    const std::vector<In> ins = c.scalar_first ? std::vector<In>{ScalarIn(c.scalar), array}
                                               : std::vector<In>{array, ScalarIn(c.scalar)};
    const std::string what = Describe(c.op, ins);
    // The model agrees with the table, and the daemon with the model.
    std::vector<RefOperand> operands;
    for (const In& in : ins) {
      operands.push_back(in.array != nullptr ? RefOperand{&in.logical, {}}
                                             : RefOperand{nullptr, in.scalar});
    }
    const UfuncReference ref = ReferenceUfunc(c.op, operands);
    ASSERT_EQ(ref.code, c.code) << what;
    if (c.code == kOk) {
      ASSERT_EQ(ref.result.dtype, c.result) << what;
    }
    EXPECT_TRUE(Check(client(), c.op, ins));
  }
}

TEST_P(UfuncTest, TrueDivideAndFloatFunctionsOfIntegers) {
  const v1::IndexMap map = Split(1, 0, 6, {dev(0), dev(1), dev(2)});
  // true_divide of integers computes in float64, of bools too.
  ASSERT_OK_AND_ASSIGN(Array a, Put<int32_t>({1, 0, -3, 7, 2147483647, -8}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array b, Put<int32_t>({0, 0, 2, -2, 2, 3}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array q, a / b);
  EXPECT_EQ(q.info().dtype(), v1::DTYPE_FLOAT64);
  ASSERT_OK_AND_ASSIGN(std::vector<double> qv, q.Download<double>());
  EXPECT_EQ(qv[0], std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(qv[1]));
  EXPECT_EQ(qv[2], -1.5);
  EXPECT_EQ(qv[3], -3.5);
  EXPECT_EQ(qv[4], 1073741823.5);
  EXPECT_EQ(qv[5], -8.0 / 3.0);
  ASSERT_OK_AND_ASSIGN(Array t, Put<bool>({true, false, true, true, false, true}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array tq, Ufunc(v1::ELEMENTWISE_OP_DIVIDE, {t, t}));
  EXPECT_EQ(tq.info().dtype(), v1::DTYPE_FLOAT64);

  // sqrt and friends: wide integers in float64, 16-bit ones in float32, 8-bit ones and bool in
  // float16 (computed in float32 and rounded, as NumPy's float16 loops are).
  std::mt19937_64 rng(110);
  const std::vector<std::pair<v1::DType, v1::DType>> loops = {
      {v1::DTYPE_INT32, v1::DTYPE_FLOAT64},  {v1::DTYPE_INT64, v1::DTYPE_FLOAT64},
      {v1::DTYPE_UINT32, v1::DTYPE_FLOAT64}, {v1::DTYPE_UINT64, v1::DTYPE_FLOAT64},
      {v1::DTYPE_INT16, v1::DTYPE_FLOAT32},  {v1::DTYPE_UINT16, v1::DTYPE_FLOAT32},
      {v1::DTYPE_INT8, v1::DTYPE_FLOAT16},   {v1::DTYPE_UINT8, v1::DTYPE_FLOAT16},
      {v1::DTYPE_BOOL, v1::DTYPE_FLOAT16},
  };
  const Shape shape = {4, 5};
  for (const auto& [dtype, loop] : loops) {
    const HostArray values = RandomHost(dtype, shape, rng, {.int_lo = 0});
    const TestMap tmap = RandomMap(shape, devices(), rng);
    ASSERT_OK_AND_ASSIGN(Array x, UploadHost(client(), values, ToProto(tmap, shape)));
    for (v1::ElementwiseOp op : {v1::ELEMENTWISE_OP_SQRT, v1::ELEMENTWISE_OP_EXP,
                                 v1::ELEMENTWISE_OP_SIN, v1::ELEMENTWISE_OP_LOG1P}) {
      absl::StatusOr<Array> r = Ufunc(op, {x});
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->info().dtype(), loop) << UfuncFor(op).name << " of " << DTypeStr(dtype);
      EXPECT_TRUE(Check(client(), op, {ArrayIn(x, Logical(values, tmap))}));
    }
  }
}

TEST_P(UfuncTest, IntegerEdgeCases) {
  const v1::IndexMap map = Split(1, 0, 12, {dev(0), dev(1), dev(2), dev(3)});
  const int32_t kMin = INT32_MIN, kMax = INT32_MAX;
  // Python's floor division and modulo: the remainder takes the divisor's sign; / 0 gives 0;
  // MIN // -1 wraps to MIN.
  ASSERT_OK_AND_ASSIGN(Array a,
                       Put<int32_t>({7, -7, 7, -7, 0, kMin, kMin, 5, -5, 3, kMax, -1}, {12}, map));
  ASSERT_OK_AND_ASSIGN(Array b, Put<int32_t>({2, 2, -2, -2, 3, -1, 1, 0, 0, 7, -1, 5}, {12}, map));
  ASSERT_OK_AND_ASSIGN(Array fd, Ufunc(v1::ELEMENTWISE_OP_FLOOR_DIVIDE, {a, b}));
  ASSERT_OK_AND_ASSIGN(Array rem, Ufunc(v1::ELEMENTWISE_OP_REMAINDER, {a, b}));
  EXPECT_EQ(fd.info().dtype(), v1::DTYPE_INT32);
  EXPECT_EQ(fd.Download<int32_t>().value(),
            (std::vector<int32_t>{3, -4, -4, 3, 0, kMin, kMin, 0, 0, 0, -kMax, -1}));
  EXPECT_EQ(rem.Download<int32_t>().value(),
            (std::vector<int32_t>{1, 1, -1, -1, 0, 0, 0, 0, 0, 3, 0, 4}));
  // Unsigned: plain division; / 0 gives 0.
  ASSERT_OK_AND_ASSIGN(Array ua, Put<uint8_t>({7, 255, 0, 9, 200, 1, 2, 3, 4, 5, 6, 7}, {12}, map));
  ASSERT_OK_AND_ASSIGN(Array ub, Put<uint8_t>({2, 16, 5, 0, 7, 1, 0, 3, 8, 2, 0, 1}, {12}, map));
  ASSERT_OK_AND_ASSIGN(Array ufd, Ufunc(v1::ELEMENTWISE_OP_FLOOR_DIVIDE, {ua, ub}));
  ASSERT_OK_AND_ASSIGN(Array urem, Ufunc(v1::ELEMENTWISE_OP_REMAINDER, {ua, ub}));
  EXPECT_EQ(ufd.Download<uint8_t>().value(),
            (std::vector<uint8_t>{3, 15, 0, 0, 28, 1, 0, 1, 0, 2, 0, 7}));
  EXPECT_EQ(urem.Download<uint8_t>().value(),
            (std::vector<uint8_t>{1, 15, 0, 0, 4, 0, 0, 0, 4, 1, 0, 0}));

  // Integer powers wrap; a negative exponent gives 0 except for bases 1 and -1.
  ASSERT_OK_AND_ASSIGN(Array base,
                       Put<int64_t>({2, 1, -1, -1, 0, 3, -2, 2, 0, 7, -3, 10}, {12}, map));
  ASSERT_OK_AND_ASSIGN(Array expo,
                       Put<int64_t>({-1, -5, -3, -4, -2, 0, 3, 64, 0, 1, 40, 19}, {12}, map));
  ASSERT_OK_AND_ASSIGN(Array pw, Ufunc(v1::ELEMENTWISE_OP_POWER, {base, expo}));
  // (-3)^40 mod 2^64 and 10^19 mod 2^64, as int64.
  const int64_t p40 = static_cast<int64_t>(UINT64_C(12157665459056928801));
  const int64_t p19 = static_cast<int64_t>(UINT64_C(10000000000000000000));
  EXPECT_EQ(pw.Download<int64_t>().value(),
            (std::vector<int64_t>{0, 1, -1, 1, 0, 1, -8, 0, 1, 7, p40, p19}));
  ASSERT_OK_AND_ASSIGN(Array pw8, Ufunc(v1::ELEMENTWISE_OP_POWER, {base, int64_t{2}}));
  EXPECT_EQ(pw8.info().dtype(), v1::DTYPE_INT64);

  // Shifts by the width or more, or by a negative count, give 0 (-1 for a negative value shifted
  // right).
  const v1::IndexMap map8 = Split(1, 0, 8, {dev(1), dev(2)});
  ASSERT_OK_AND_ASSIGN(Array s, Put<int8_t>({1, -128, -5, 5, 1, -1, 64, -128}, {8}, map8));
  ASSERT_OK_AND_ASSIGN(Array n, Put<int8_t>({7, 1, 8, 8, -1, 0, 6, 7}, {8}, map8));
  ASSERT_OK_AND_ASSIGN(Array ls, Ufunc(v1::ELEMENTWISE_OP_LEFT_SHIFT, {s, n}));
  ASSERT_OK_AND_ASSIGN(Array rs, Ufunc(v1::ELEMENTWISE_OP_RIGHT_SHIFT, {s, n}));
  EXPECT_EQ(ls.info().dtype(), v1::DTYPE_INT8);
  EXPECT_EQ(ls.Download<int8_t>().value(), (std::vector<int8_t>{-128, 0, 0, 0, 0, -1, 0, 0}));
  EXPECT_EQ(rs.Download<int8_t>().value(), (std::vector<int8_t>{0, -64, -1, 0, 0, -1, 1, -1}));
  ASSERT_OK_AND_ASSIGN(Array big, Put<uint64_t>({1, 1, UINT64_MAX, 8, 1, 3, 5, 7}, {8}, map8));
  ASSERT_OK_AND_ASSIGN(Array cnt, Put<uint64_t>({63, 64, 63, 200, 0, 1, 2, 65}, {8}, map8));
  ASSERT_OK_AND_ASSIGN(Array bls, Ufunc(v1::ELEMENTWISE_OP_LEFT_SHIFT, {big, cnt}));
  ASSERT_OK_AND_ASSIGN(Array brs, Ufunc(v1::ELEMENTWISE_OP_RIGHT_SHIFT, {big, cnt}));
  EXPECT_EQ(bls.Download<uint64_t>().value(),
            (std::vector<uint64_t>{UINT64_C(1) << 63, 0, UINT64_C(1) << 63, 0, 1, 6, 20, 0}));
  EXPECT_EQ(brs.Download<uint64_t>().value(), (std::vector<uint64_t>{0, 0, 1, 0, 1, 1, 1, 0}));

  // Wrapping unary ops.
  ASSERT_OK_AND_ASSIGN(
      Array m, Put<int16_t>({INT16_MIN, -1, 0, INT16_MAX}, {4}, Split(1, 0, 4, {dev(3), dev(0)})));
  ASSERT_OK_AND_ASSIGN(Array abs, Ufunc(v1::ELEMENTWISE_OP_ABS, {m}));
  ASSERT_OK_AND_ASSIGN(Array neg, Ufunc(v1::ELEMENTWISE_OP_NEGATIVE, {m}));
  ASSERT_OK_AND_ASSIGN(Array sq, Ufunc(v1::ELEMENTWISE_OP_SQUARE, {m}));
  ASSERT_OK_AND_ASSIGN(Array inv, Ufunc(v1::ELEMENTWISE_OP_INVERT, {m}));
  ASSERT_OK_AND_ASSIGN(Array sign, Ufunc(v1::ELEMENTWISE_OP_SIGN, {m}));
  EXPECT_EQ(abs.Download<int16_t>().value(), (std::vector<int16_t>{INT16_MIN, 1, 0, INT16_MAX}));
  EXPECT_EQ(neg.Download<int16_t>().value(), (std::vector<int16_t>{INT16_MIN, 1, 0, -INT16_MAX}));
  EXPECT_EQ(sq.Download<int16_t>().value(), (std::vector<int16_t>{0, 1, 0, 1}));
  EXPECT_EQ(inv.Download<int16_t>().value(), (std::vector<int16_t>{INT16_MAX, 0, -1, INT16_MIN}));
  EXPECT_EQ(sign.Download<int16_t>().value(), (std::vector<int16_t>{-1, -1, 0, 1}));
  ASSERT_OK_AND_ASSIGN(Array un, Put<uint8_t>({0, 1, 255, 128}, {4}, OnDevice(1, dev(2))));
  ASSERT_OK_AND_ASSIGN(Array uneg, Ufunc(v1::ELEMENTWISE_OP_NEGATIVE, {un}));
  EXPECT_EQ(uneg.Download<uint8_t>().value(), (std::vector<uint8_t>{0, 255, 1, 128}));

  // floor, ceil and trunc leave integers as they are, in their own dtype (no float round trip:
  // these int64 values are not float64 values).
  const int64_t odd = (int64_t{1} << 53) + 1;
  ASSERT_OK_AND_ASSIGN(Array wide, Put<int64_t>({INT64_MAX, odd, -odd, INT64_MIN}, {4},
                                                Split(1, 0, 4, {dev(0), dev(1)})));
  for (v1::ElementwiseOp op :
       {v1::ELEMENTWISE_OP_FLOOR, v1::ELEMENTWISE_OP_CEIL, v1::ELEMENTWISE_OP_TRUNC}) {
    ASSERT_OK_AND_ASSIGN(Array r, Ufunc(op, {wide}));
    EXPECT_EQ(r.info().dtype(), v1::DTYPE_INT64) << v1::ElementwiseOp_Name(op);
    EXPECT_EQ(r.Download<int64_t>().value(),
              (std::vector<int64_t>{INT64_MAX, odd, -odd, INT64_MIN}))
        << v1::ElementwiseOp_Name(op);
  }
  ASSERT_OK_AND_ASSIGN(Array u8, Put<uint8_t>({0, 7, 255, 3}, {4}, OnDevice(1, dev(1))));
  ASSERT_OK_AND_ASSIGN(Array fl8, Ufunc(v1::ELEMENTWISE_OP_FLOOR, {u8}));
  EXPECT_EQ(fl8.info().dtype(), v1::DTYPE_UINT8);
  EXPECT_EQ(fl8.Download<uint8_t>().value(), (std::vector<uint8_t>{0, 7, 255, 3}));
}

TEST_P(UfuncTest, FloatEdgeCases) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const v1::IndexMap map = Split(1, 0, 8, {dev(0), dev(1), dev(2), dev(3)});
  // maximum/minimum propagate NaN; fmax/fmin take the number.
  ASSERT_OK_AND_ASSIGN(Array a, Put<double>({nan, 1, nan, 2, -0.5, inf, -inf, 3}, {8}, map));
  ASSERT_OK_AND_ASSIGN(Array b, Put<double>({1, nan, nan, 3, -0.25, 1, 0, -inf}, {8}, map));
  auto values = [](const absl::StatusOr<Array>& r) {
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->Download<double>().value() : std::vector<double>{};
  };
  auto same = [](const std::vector<double>& got, const std::vector<double>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != want[i]) return false;
    }
    return true;
  };
  EXPECT_TRUE(same(values(Ufunc(v1::ELEMENTWISE_OP_MAXIMUM, {a, b})),
                   {nan, nan, nan, 3, -0.25, inf, 0, 3}));
  EXPECT_TRUE(same(values(Ufunc(v1::ELEMENTWISE_OP_MINIMUM, {a, b})),
                   {nan, nan, nan, 2, -0.5, 1, -inf, -inf}));
  EXPECT_TRUE(
      same(values(Ufunc(v1::ELEMENTWISE_OP_FMAX, {a, b})), {1, 1, nan, 3, -0.25, inf, 0, 3}));
  EXPECT_TRUE(
      same(values(Ufunc(v1::ELEMENTWISE_OP_FMIN, {a, b})), {1, 1, nan, 2, -0.5, 1, -inf, -inf}));
  // Python's floor division and modulo of floats.
  ASSERT_OK_AND_ASSIGN(Array x, Put<double>({-7.5, 7.5, 7.5, -7.5, 6, 1, -1, 0}, {8}, map));
  ASSERT_OK_AND_ASSIGN(Array y, Put<double>({2, -2, 2, -2, -3, 0, 0, 0}, {8}, map));
  EXPECT_TRUE(same(values(Ufunc(v1::ELEMENTWISE_OP_FLOOR_DIVIDE, {x, y})),
                   {-4, -4, 3, 3, -2, inf, -inf, nan}));
  const std::vector<double> mod = values(Ufunc(v1::ELEMENTWISE_OP_REMAINDER, {x, y}));
  EXPECT_TRUE(same(mod, {0.5, -0.5, 1.5, -1.5, 0, nan, nan, nan}));
  if (mod.size() == 8) {
    EXPECT_TRUE(std::signbit(mod[4])) << "6 % -3 is -0.0";
  }
  // The float32 loop does the same.
  ASSERT_OK_AND_ASSIGN(Array xf, Put<float>({-7.5f, 7.5f, 7.5f, -7.5f}, {4}, OnDevice(1, dev(1))));
  ASSERT_OK_AND_ASSIGN(Array ff, Ufunc(v1::ELEMENTWISE_OP_FLOOR_DIVIDE, {xf, 2.0}));
  ASSERT_OK_AND_ASSIGN(Array mf, Ufunc(v1::ELEMENTWISE_OP_REMAINDER, {xf, -2.0}));
  EXPECT_EQ(ff.info().dtype(), v1::DTYPE_FLOAT32);
  EXPECT_EQ(ff.Download<float>().value(), (std::vector<float>{-4, 3, 3, -4}));
  EXPECT_EQ(mf.Download<float>().value(), (std::vector<float>{-1.5f, -0.5f, -0.5f, -1.5f}));
  // Division by zero.
  EXPECT_TRUE(same(values(Ufunc(v1::ELEMENTWISE_OP_DIVIDE, {y, x})),
                   {2 / -7.5, -2 / 7.5, 2 / 7.5, -2 / -7.5, -0.5, 0, 0, nan}));
  EXPECT_TRUE(same(values(Ufunc(v1::ELEMENTWISE_OP_DIVIDE, {x, y})),
                   {-3.75, -3.75, 3.75, 3.75, -2, inf, -inf, nan}));
  // Predicates.
  ASSERT_OK_AND_ASSIGN(Array p,
                       Put<double>({nan, inf, -inf, 0, -1.5, 1e308, -0.0, 5e-324}, {8}, map));
  ASSERT_OK_AND_ASSIGN(Array isnan, Ufunc(v1::ELEMENTWISE_OP_ISNAN, {p}));
  ASSERT_OK_AND_ASSIGN(Array isinf, Ufunc(v1::ELEMENTWISE_OP_ISINF, {p}));
  ASSERT_OK_AND_ASSIGN(Array isfinite, Ufunc(v1::ELEMENTWISE_OP_ISFINITE, {p}));
  EXPECT_EQ(isnan.info().dtype(), v1::DTYPE_BOOL);
  EXPECT_EQ(isnan.Download<bool>().value(), (std::vector<bool>{1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(isinf.Download<bool>().value(), (std::vector<bool>{0, 1, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(isfinite.Download<bool>().value(), (std::vector<bool>{0, 0, 0, 1, 1, 1, 1, 1}));
  // Truthiness: NaN is true, -0.0 is false.
  ASSERT_OK_AND_ASSIGN(Array lnot, Ufunc(v1::ELEMENTWISE_OP_LOGICAL_NOT, {p}));
  EXPECT_EQ(lnot.Download<bool>().value(), (std::vector<bool>{0, 0, 0, 1, 0, 0, 1, 0}));
  ASSERT_OK_AND_ASSIGN(Array land, Ufunc(v1::ELEMENTWISE_OP_LOGICAL_AND, {p, 1.0}));
  EXPECT_EQ(land.Download<bool>().value(), (std::vector<bool>{1, 1, 1, 0, 1, 1, 0, 1}));
  // sign keeps NaN.
  EXPECT_TRUE(same(values(Ufunc(v1::ELEMENTWISE_OP_SIGN, {p})), {nan, 1, -1, 0, -1, 1, 0, 1}));
  // rint rounds half to even.
  ASSERT_OK_AND_ASSIGN(Array h,
                       Put<double>({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -3.2}, {8}, map));
  const std::vector<double> rint = values(Ufunc(v1::ELEMENTWISE_OP_RINT, {h}));
  EXPECT_TRUE(same(rint, {0, 2, 2, -0.0, -2, -2, 4, -3}));
  if (rint.size() == 8) {
    EXPECT_TRUE(std::signbit(rint[3])) << "rint(-0.5) is -0.0";
  }
  ASSERT_OK_AND_ASSIGN(Array hf, Put<float>({0.5f, 1.5f, 2.5f, -2.5f}, {4}, OnDevice(1, dev(3))));
  ASSERT_OK_AND_ASSIGN(Array rf, Ufunc(v1::ELEMENTWISE_OP_RINT, {hf}));
  EXPECT_EQ(rf.info().dtype(), v1::DTYPE_FLOAT32);
  EXPECT_EQ(rf.Download<float>().value(), (std::vector<float>{0, 2, 2, -2}));
  // Float powers.
  EXPECT_TRUE(same(values(Ufunc(v1::ELEMENTWISE_OP_POWER, {y, 2.0})), {4, 4, 4, 4, 9, 0, 0, 0}));
  EXPECT_TRUE(same(values(Ufunc(v1::ELEMENTWISE_OP_POWER, {-8.0, x})),
                   {nan, nan, nan, nan, 262144, -8, -0.125, 1}));
}

TEST_P(UfuncTest, BoolComputesInInt8WhereNumPyDoes) {
  const v1::IndexMap map = Split(1, 0, 4, {dev(0), dev(1)});
  ASSERT_OK_AND_ASSIGN(Array p, Put<bool>({true, false, true, false}, {4}, map));
  ASSERT_OK_AND_ASSIGN(Array q, Put<bool>({true, true, false, false}, {4}, map));
  struct Case {
    v1::ElementwiseOp op;
    std::vector<int8_t> want;
  };
  const std::vector<Case> binary = {
      {v1::ELEMENTWISE_OP_POWER, {1, 0, 1, 1}},
      {v1::ELEMENTWISE_OP_FLOOR_DIVIDE, {1, 0, 0, 0}},
      {v1::ELEMENTWISE_OP_REMAINDER, {0, 0, 0, 0}},
      {v1::ELEMENTWISE_OP_LEFT_SHIFT, {2, 0, 1, 0}},
      {v1::ELEMENTWISE_OP_RIGHT_SHIFT, {0, 0, 1, 0}},
  };
  for (const Case& c : binary) {
    ASSERT_OK_AND_ASSIGN(Array r, Ufunc(c.op, {p, q}));
    EXPECT_EQ(r.info().dtype(), v1::DTYPE_INT8) << v1::ElementwiseOp_Name(c.op);
    EXPECT_EQ(r.Download<int8_t>().value(), c.want) << v1::ElementwiseOp_Name(c.op);
  }
  ASSERT_OK_AND_ASSIGN(Array sq, Ufunc(v1::ELEMENTWISE_OP_SQUARE, {p}));
  EXPECT_EQ(sq.info().dtype(), v1::DTYPE_INT8);
  EXPECT_EQ(sq.Download<int8_t>().value(), (std::vector<int8_t>{1, 0, 1, 0}));
  // add is or, multiply is and, and bitwise ops, invert, abs, maximum stay bool.
  const std::vector<std::pair<v1::ElementwiseOp, std::vector<bool>>> stay = {
      {v1::ELEMENTWISE_OP_ADD, {1, 1, 1, 0}},         {v1::ELEMENTWISE_OP_MULTIPLY, {1, 0, 0, 0}},
      {v1::ELEMENTWISE_OP_BITWISE_XOR, {0, 1, 1, 0}}, {v1::ELEMENTWISE_OP_MAXIMUM, {1, 1, 1, 0}},
      {v1::ELEMENTWISE_OP_MINIMUM, {1, 0, 0, 0}},
  };
  for (const auto& [op, want] : stay) {
    ASSERT_OK_AND_ASSIGN(Array r, Ufunc(op, {p, q}));
    EXPECT_EQ(r.info().dtype(), v1::DTYPE_BOOL) << v1::ElementwiseOp_Name(op);
    EXPECT_EQ(r.Download<bool>().value(), want) << v1::ElementwiseOp_Name(op);
  }
  ASSERT_OK_AND_ASSIGN(Array inv, Ufunc(v1::ELEMENTWISE_OP_INVERT, {p}));
  EXPECT_EQ(inv.info().dtype(), v1::DTYPE_BOOL);
  EXPECT_EQ(inv.Download<bool>().value(), (std::vector<bool>{0, 1, 0, 1}));
  // subtract, negative, sign and positive are not defined on bool.
  for (v1::ElementwiseOp op :
       {v1::ELEMENTWISE_OP_NEGATIVE, v1::ELEMENTWISE_OP_SIGN, v1::ELEMENTWISE_OP_POSITIVE}) {
    EXPECT_TRUE(StatusIs(Ufunc(op, {p}).status(), absl::StatusCode::kInvalidArgument))
        << v1::ElementwiseOp_Name(op);
  }
  EXPECT_TRUE(StatusIs(Ufunc(v1::ELEMENTWISE_OP_SUBTRACT, {p, q}).status(),
                       absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(StatusIs(Ufunc(v1::ELEMENTWISE_OP_SUBTRACT, {p, true}).status(),
                       absl::StatusCode::kInvalidArgument));
  // Bitwise ops, invert and shifts are not defined on floats.
  ASSERT_OK_AND_ASSIGN(Array f, Put<float>({1, 2, 3, 4}, {4}, map));
  for (v1::ElementwiseOp op : {v1::ELEMENTWISE_OP_BITWISE_AND, v1::ELEMENTWISE_OP_BITWISE_OR,
                               v1::ELEMENTWISE_OP_BITWISE_XOR, v1::ELEMENTWISE_OP_LEFT_SHIFT,
                               v1::ELEMENTWISE_OP_RIGHT_SHIFT}) {
    EXPECT_TRUE(StatusIs(Ufunc(op, {f, f}).status(), absl::StatusCode::kInvalidArgument))
        << v1::ElementwiseOp_Name(op);
  }
  EXPECT_TRUE(
      StatusIs(Ufunc(v1::ELEMENTWISE_OP_INVERT, {f}).status(), absl::StatusCode::kInvalidArgument));
  // An int array shifted by a float scalar computes in float64: invalid too.
  ASSERT_OK_AND_ASSIGN(Array i, Put<int32_t>({1, 2, 3, 4}, {4}, map));
  EXPECT_TRUE(StatusIs(Ufunc(v1::ELEMENTWISE_OP_LEFT_SHIFT, {i, 1.0}).status(),
                       absl::StatusCode::kInvalidArgument));
}

TEST_P(UfuncTest, WhereAndClipSemantics) {
  const v1::IndexMap map = Split(1, 0, 6, {dev(2), dev(0), dev(1)});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Conditions of any dtype, as truth values (NaN true, -0.0 false).
  ASSERT_OK_AND_ASSIGN(Array cf, Put<double>({nan, -0.0, 2, 0, -1, 1e-300}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array ci, Put<int32_t>({0, 5, -1, 0, 0, 7}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array x8, Put<int8_t>({1, 2, 3, 4, 5, 6}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array yf, Put<float>({-1, -2, -3, -4, -5, -6}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array w, Ufunc(v1::ELEMENTWISE_OP_WHERE, {cf, x8, yf}));
  EXPECT_EQ(w.info().dtype(), v1::DTYPE_FLOAT32);  // int8 with float32
  EXPECT_EQ(w.Download<float>().value(), (std::vector<float>{1, -2, 3, -4, 5, 6}));
  ASSERT_OK_AND_ASSIGN(Array wi, Ufunc(v1::ELEMENTWISE_OP_WHERE, {ci, x8, int64_t{-100}}));
  EXPECT_EQ(wi.info().dtype(), v1::DTYPE_INT8);  // the scalar is weak
  EXPECT_EQ(wi.Download<int8_t>().value(), (std::vector<int8_t>{-100, 2, 3, -100, -100, 6}));
  ASSERT_OK_AND_ASSIGN(Array wf, Ufunc(v1::ELEMENTWISE_OP_WHERE, {ci, x8, 0.5}));
  EXPECT_EQ(wf.info().dtype(), v1::DTYPE_FLOAT64);
  ASSERT_OK_AND_ASSIGN(Array ws, Ufunc(v1::ELEMENTWISE_OP_WHERE, {ci, yf, 0.5}));
  EXPECT_EQ(ws.info().dtype(), v1::DTYPE_FLOAT32);
  EXPECT_EQ(ws.Download<float>().value(), (std::vector<float>{0.5f, -2, -3, 0.5f, 0.5f, -6}));

  // clip = minimum(maximum(a, lo), hi): NaN stays, lo > hi gives hi, operands promote.
  ASSERT_OK_AND_ASSIGN(Array a, Put<double>({nan, -5, 0.25, 9, 3, -1}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array c, Ufunc(v1::ELEMENTWISE_OP_CLIP, {a, 0.0, 1.0}));
  const std::vector<double> cv = c.Download<double>().value();
  EXPECT_TRUE(std::isnan(cv[0]));
  EXPECT_EQ(std::vector<double>(cv.begin() + 1, cv.end()), (std::vector<double>{0, 0.25, 1, 1, 0}));
  ASSERT_OK_AND_ASSIGN(Array lo, Put<int16_t>({0, 0, 10, 10, 2, -3}, {6}, map));
  ASSERT_OK_AND_ASSIGN(Array ci8, Ufunc(v1::ELEMENTWISE_OP_CLIP, {x8, lo, int64_t{4}}));
  EXPECT_EQ(ci8.info().dtype(), v1::DTYPE_INT16);
  EXPECT_EQ(ci8.Download<int16_t>().value(), (std::vector<int16_t>{1, 2, 4, 4, 4, 4}));

  // Broadcast condition: (4, 1) with x (4, 5) and y (5,); the result takes x's layout, the first
  // operand of the result's shape.
  std::mt19937_64 rng(111);
  const HostArray cond = RandomHost(v1::DTYPE_UINT8, {4, 1}, rng, {.int_lo = 0, .int_hi = 1});
  const HostArray xs = RandomHost(v1::DTYPE_FLOAT64, {4, 5}, rng);
  const HostArray ys = RandomHost(v1::DTYPE_INT32, {5}, rng);
  ASSERT_OK_AND_ASSIGN(Array C, UploadHost(client(), cond, OnDevice(2, dev(3))));
  const v1::IndexMap x_map = Split(2, 0, 4, AllDevices());
  ASSERT_OK_AND_ASSIGN(Array X, UploadHost(client(), xs, x_map));
  ASSERT_OK_AND_ASSIGN(Array Y, UploadHost(client(), ys, OnDevice(1, dev(1))));
  EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_WHERE,
                    {ArrayIn(C, cond), ArrayIn(X, xs), ArrayIn(Y, ys)}));
  EXPECT_TRUE(
      Check(client(), v1::ELEMENTWISE_OP_CLIP, {ArrayIn(X, xs), ArrayIn(Y, ys), ScalarIn(50.0)}));
}

TEST_P(UfuncTest, AsTypeEveryPairOfDTypes) {
  std::mt19937_64 rng(112);
  const double inf = std::numeric_limits<double>::infinity();
  // Edge values of every kind: NaN, infinities, -0.0, halves, the bounds of each integer dtype
  // and beyond, plus random values.
  const std::vector<long double> float_edges = {
      kNaN,    kInf,    -kInf,   -0.0L,    0.5L,  -0.5L,  1.5L,    -1.7L,    127.9L, 128.5L,
      -128.5L, -129.5L, 255.9L,  256.1L,   3e4L,  7e4L,   -3.3e4L, 65535.9L, 2.1e9L, 4.3e9L,
      -2.2e9L, 9.3e18L, 1.9e19L, -9.3e18L, 1e30L, -1e30L, 3.5e38L, 1e300L,   1e-40L, -1e-310L};
  std::vector<Array> arrays;
  std::vector<HostArray> logical;
  arrays.reserve(ImplementedDTypes().size());
  for (v1::DType d : ImplementedDTypes()) {
    HostArray values = RandomHost(d, {60}, rng);
    if (IsFloatDType(d)) {
      for (size_t i = 0; i < float_edges.size(); ++i) {
        values.values[i] = CastValue(float_edges[i], v1::DTYPE_FLOAT64, d);
      }
    } else {
      const std::vector<long double> edges = {IntMin(d),     IntMax(d), IntMin(d) + 1,
                                              IntMax(d) - 1, 0,         1};
      for (size_t i = 0; i < edges.size(); ++i) values.values[i] = edges[i];
    }
    const TestMap map = RandomMap({60}, devices(), rng, /*allow_gaps=*/false);
    ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, {60})));
    arrays.push_back(std::move(a));
    logical.push_back(Logical(values, map));
  }
  for (size_t i = 0; i < arrays.size(); ++i) {
    for (v1::DType to : ImplementedDTypes()) {
      v1::ElementwiseRequest request = Request(v1::ELEMENTWISE_OP_ASTYPE, {ArrayIn(arrays[i], {})});
      request.mutable_spec()->set_dtype(to);
      EXPECT_TRUE(Check(client(), request, {ArrayIn(arrays[i], logical[i])}));
    }
  }
  // Spot checks of the rules, through the SDK call.
  ASSERT_OK_AND_ASSIGN(Array f, Put<double>({std::numeric_limits<double>::quiet_NaN(), inf, -inf,
                                             1e20, -1e20, 3.9, -3.9, -0.0},
                                            {8}, Split(1, 0, 8, {dev(1), dev(0)})));
  ASSERT_OK_AND_ASSIGN(Array to_i32, AsType(f, v1::DTYPE_INT32));
  EXPECT_EQ(to_i32.Download<int32_t>().value(),
            (std::vector<int32_t>{0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 3, -3, 0}));
  ASSERT_OK_AND_ASSIGN(Array to_u8, AsType(f, v1::DTYPE_UINT8));
  EXPECT_EQ(to_u8.Download<uint8_t>().value(), (std::vector<uint8_t>{0, 255, 0, 255, 0, 3, 0, 0}));
  ASSERT_OK_AND_ASSIGN(Array to_u64, AsType(f, v1::DTYPE_UINT64));
  EXPECT_EQ(to_u64.Download<uint64_t>().value(),
            (std::vector<uint64_t>{0, UINT64_MAX, 0, UINT64_MAX, 0, 3, 0, 0}));
  ASSERT_OK_AND_ASSIGN(Array to_bool, AsType(f, v1::DTYPE_BOOL));
  EXPECT_EQ(to_bool.Download<bool>().value(), (std::vector<bool>{1, 1, 1, 1, 1, 1, 1, 0}));
  ASSERT_OK_AND_ASSIGN(Array to_f32, AsType(f, v1::DTYPE_FLOAT32));
  const std::vector<float> f32 = to_f32.Download<float>().value();
  EXPECT_EQ(f32[3], static_cast<float>(1e20));
  EXPECT_EQ(f32[5], static_cast<float>(3.9));
  ASSERT_OK_AND_ASSIGN(Array wide,
                       Put<int64_t>({-1, 256, 65537, INT64_MIN}, {4}, OnDevice(1, dev(2))));
  ASSERT_OK_AND_ASSIGN(Array to_u16, AsType(wide, v1::DTYPE_UINT16));
  EXPECT_EQ(to_u16.Download<uint16_t>().value(), (std::vector<uint16_t>{65535, 256, 1, 0}));
  ASSERT_OK_AND_ASSIGN(Array to_i8, AsType(wide, v1::DTYPE_INT8));
  EXPECT_EQ(to_i8.Download<int8_t>().value(), (std::vector<int8_t>{-1, 0, 1, 0}));
}

TEST_P(UfuncTest, BroadcastingAcrossLayouts) {
  std::mt19937_64 rng(113);
  struct Case {
    Shape a_shape;
    v1::IndexMap a_map;
    v1::DType a_dtype;
    Shape b_shape;
    v1::IndexMap b_map;
    v1::DType b_dtype;
  };
  const std::vector<int> all = AllDevices();
  const std::vector<Case> cases = {
      // A matrix split by rows over the devices, a row vector on one device.
      {{4, 5}, Split(2, 0, 4, all), v1::DTYPE_FLOAT64, {5}, OnDevice(1, dev(1)), v1::DTYPE_INT32},
      // The vector first: the result takes the matrix's layout (the first of the result's shape).
      {{5}, OnDevice(1, dev(2)), v1::DTYPE_FLOAT32, {4, 5}, Split(2, 0, 4, all), v1::DTYPE_FLOAT32},
      // A column split by rows and a row on one device: neither has the result's shape, so the
      // result is the column's layout expanded along axis 1.
      {{4, 1}, Split(2, 0, 4, all), v1::DTYPE_INT16, {1, 5}, OnDevice(2, dev(2)), v1::DTYPE_INT64},
      // (3, 1, 5) with (4, 1): (3, 4, 5).
      {{3, 1, 5},
       Split(3, 0, 3, {dev(1), dev(2), dev(3)}),
       v1::DTYPE_FLOAT32,
       {4, 1},
       OnDevice(2, dev(0)),
       v1::DTYPE_UINT8},
      // The lower-rank operand first: its layout gains a whole leading axis.
      {{4, 1},
       Split(2, 0, 4, {dev(3), dev(1)}),
       v1::DTYPE_INT32,
       {3, 1, 5},
       Split(3, 2, 5, all),
       v1::DTYPE_INT32},
      // A column split by columns (of one) and a matrix split by columns.
      {{6, 1}, OnDevice(2, dev(1)), v1::DTYPE_UINT16, {6, 7}, Split(2, 1, 7, all), v1::DTYPE_INT8},
  };
  for (const Case& c : cases) {
    const HostArray a = RandomHost(c.a_dtype, c.a_shape, rng);
    const HostArray b = RandomHost(c.b_dtype, c.b_shape, rng);
    ASSERT_OK_AND_ASSIGN(Array A, UploadHost(client(), a, c.a_map));
    ASSERT_OK_AND_ASSIGN(Array B, UploadHost(client(), b, c.b_map));
    for (v1::ElementwiseOp op :
         {v1::ELEMENTWISE_OP_SUBTRACT, v1::ELEMENTWISE_OP_GREATER, v1::ELEMENTWISE_OP_MAXIMUM}) {
      EXPECT_TRUE(Check(client(), op, {ArrayIn(A, a), ArrayIn(B, b)}));
    }
  }
  // Random layouts (overlaps, strides, gaps) on both sides.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{6, 1, 4}, {5, 4}}, {{7, 5}, {7, 1}}, {{1, 5}, {6, 1}}, {{3, 4, 5}, {1}}};
  for (const auto& [sa, sb] : shapes) {
    const HostArray a = RandomHost(v1::DTYPE_FLOAT64, sa, rng);
    const HostArray b = RandomHost(v1::DTYPE_FLOAT32, sb, rng);
    const TestMap ma = RandomMap(sa, devices(), rng), mb = RandomMap(sb, devices(), rng);
    ASSERT_OK_AND_ASSIGN(Array A, UploadHost(client(), a, ToProto(ma, sa)));
    ASSERT_OK_AND_ASSIGN(Array B, UploadHost(client(), b, ToProto(mb, sb)));
    EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_ADD,
                      {ArrayIn(A, Logical(a, ma)), ArrayIn(B, Logical(b, mb))}));
    EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_DIVIDE,
                      {ArrayIn(B, Logical(b, mb)), ArrayIn(A, Logical(a, ma))}));
  }
  // Incompatible shapes name both shapes.
  ASSERT_OK_AND_ASSIGN(Array m45,
                       Put<double>(std::vector<double>(20, 1.0), {4, 5}, Split(2, 0, 4, all)));
  ASSERT_OK_AND_ASSIGN(Array m35,
                       Put<double>(std::vector<double>(15, 2.0), {3, 5}, OnDevice(2, dev(1))));
  absl::StatusOr<Array> bad = Ufunc(v1::ELEMENTWISE_OP_ADD, {m45, m35});
  EXPECT_TRUE(StatusIs(bad.status(), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(MentionsShape(bad.status().message(), {4, 5}) &&
              MentionsShape(bad.status().message(), {3, 5}))
      << bad.status();
  ASSERT_OK_AND_ASSIGN(Array v4,
                       Put<double>(std::vector<double>(4, 1.0), {4}, OnDevice(1, dev(0))));
  bad = Ufunc(v1::ELEMENTWISE_OP_WHERE, {m45, m45, v4});
  EXPECT_TRUE(StatusIs(bad.status(), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(MentionsShape(bad.status().message(), {4})) << bad.status();
}

TEST_P(UfuncTest, OutWritesIntoAnExistingArray) {
  std::mt19937_64 rng(114);
  const Shape shape = {6, 7};
  const HostArray a = RandomHost(v1::DTYPE_FLOAT64, shape, rng);
  const HostArray b = RandomHost(v1::DTYPE_FLOAT64, {7}, rng);
  const TestMap a_map = RandomMap(shape, devices(), rng);
  ASSERT_OK_AND_ASSIGN(Array A, UploadHost(client(), a, ToProto(a_map, shape)));
  ASSERT_OK_AND_ASSIGN(Array B, UploadHost(client(), b, OnDevice(1, dev(1))));
  const std::vector<In> ins = {ArrayIn(A, Logical(a, a_map)), ArrayIn(B, b)};
  const v1::IndexMap out_map = BlockGrid2D(6, 7, 2, 2, AllDevices());

  // Into a REPLICA array of another layout: the result keeps out's handle and layout.
  for (v1::Mode mode : {v1::MODE_REPLICA, v1::MODE_SUM, v1::MODE_MAX}) {
    ASSERT_OK_AND_ASSIGN(Array out,
                         client().Create(shape, v1::DTYPE_FLOAT64, ArrayOpts(out_map, mode)));
    v1::ElementwiseRequest request = Request(v1::ELEMENTWISE_OP_ADD, ins);
    request.mutable_spec()->set_out(out.handle());
    std::optional<Array> result;
    EXPECT_TRUE(Check(client(), request, ins, Layout::kUnchecked, &result)) << v1::Mode_Name(mode);
    ASSERT_TRUE(result.has_value());
    EXPECT_EQ(result->handle(), out.handle());
    EXPECT_TRUE(SameIndexMap(result->info().index_map(), out.info().index_map()));
    ASSERT_OK_AND_ASSIGN(Array described, client().Open(out.handle()));
    EXPECT_EQ(described.info().mode(), v1::MODE_REPLICA) << "out's mode becomes REPLICA";
    // The caller's own Array for `out` reads the result.
    ASSERT_OK_AND_ASSIGN(HostArray got, DownloadHost(out));
    const UfuncReference ref =
        ReferenceUfunc(v1::ELEMENTWISE_OP_ADD, {{&ins[0].logical, {}}, {&ins[1].logical, {}}});
    EXPECT_TRUE(ValuesMatch(got, ref.result, 1e-12L));
  }

  // Aliasing an operand: a = a * 2 + nothing else, in place.
  {
    const HostArray c = RandomHost(v1::DTYPE_INT32, shape, rng);
    ASSERT_OK_AND_ASSIGN(Array C, UploadHost(client(), c, Split(2, 1, 7, AllDevices())));
    v1::ElementwiseRequest request =
        Request(v1::ELEMENTWISE_OP_MULTIPLY, {ArrayIn(C, {}), ScalarIn(int64_t{3})});
    request.mutable_spec()->set_out(C.handle());
    ASSERT_OK_AND_ASSIGN(Array r, client().Elementwise(request));
    EXPECT_EQ(r.handle(), C.handle());
    ASSERT_OK_AND_ASSIGN(HostArray got, DownloadHost(C));
    HostArray want = c;
    for (long double& v : want.values) v = WrapInt(v1::DTYPE_INT32, BitsOf(v) * 3);
    EXPECT_TRUE(ValuesMatch(got, want, 0));
  }

  // By name.
  {
    ASSERT_OK_AND_ASSIGN(Array out, client().Create(shape, v1::DTYPE_BOOL,
                                                    ArrayOpts(OnDevice(2, dev(3)), v1::MODE_REPLICA,
                                                              "ufunc-test-out")));
    v1::ElementwiseRequest request = Request(v1::ELEMENTWISE_OP_LESS, ins);
    request.mutable_spec()->set_out("ufunc-test-out");
    EXPECT_TRUE(Check(client(), request, ins, Layout::kUnchecked));
    ASSERT_OK(out.Delete());
  }

  // Wrong shape or dtype: INVALID_ARGUMENT naming out; out is untouched.
  ASSERT_OK_AND_ASSIGN(Array wrong_shape,
                       client().Create({7, 6}, v1::DTYPE_FLOAT64, ArrayOpts(OnDevice(2, dev(0)))));
  ASSERT_OK_AND_ASSIGN(Array wrong_dtype,
                       client().Create(shape, v1::DTYPE_FLOAT32, ArrayOpts(OnDevice(2, dev(0)))));
  ASSERT_OK_AND_ASSIGN(Array wrong_rank,
                       client().Create({7}, v1::DTYPE_FLOAT64, ArrayOpts(OnDevice(1, dev(0)))));
  for (const Array* out : {&wrong_shape, &wrong_dtype, &wrong_rank}) {
    v1::ElementwiseRequest request = Request(v1::ELEMENTWISE_OP_ADD, ins);
    request.mutable_spec()->set_out(out->handle());
    EXPECT_TRUE(StatusIs(client().Elementwise(request).status(), absl::StatusCode::kInvalidArgument,
                         {"out"}))
        << DTypeStr(out->info().dtype()) << ShapeStr(out->shape());
    ASSERT_OK_AND_ASSIGN(HostArray untouched, DownloadHost(*out));
    EXPECT_TRUE(std::all_of(untouched.values.begin(), untouched.values.end(),
                            [](long double v) { return v == 0; }));
  }
  // An unknown out: NOT_FOUND. out with result_index_map: INVALID_ARGUMENT.
  v1::ElementwiseRequest request = Request(v1::ELEMENTWISE_OP_ADD, ins);
  request.mutable_spec()->set_out("arr-00000000deadbeef");
  EXPECT_TRUE(StatusIs(client().Elementwise(request).status(), absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(Array out, client().Create(shape, v1::DTYPE_FLOAT64, ArrayOpts(out_map)));
  request.mutable_spec()->set_out(out.handle());
  *request.mutable_spec()->mutable_result_index_map() = OnDevice(2, dev(0));
  EXPECT_TRUE(StatusIs(client().Elementwise(request).status(), absl::StatusCode::kInvalidArgument));
}

TEST_P(UfuncTest, ResultIndexMapIsHonoured) {
  std::mt19937_64 rng(115);
  const Shape shape = {9, 8};
  for (int trial = 0; trial < 4; ++trial) {
    const HostArray a = RandomHost(v1::DTYPE_FLOAT32, shape, rng);
    const HostArray b = RandomHost(v1::DTYPE_INT16, shape, rng);
    const TestMap ma = RandomMap(shape, devices(), rng), mb = RandomMap(shape, devices(), rng);
    ASSERT_OK_AND_ASSIGN(Array A, UploadHost(client(), a, ToProto(ma, shape)));
    ASSERT_OK_AND_ASSIGN(Array B, UploadHost(client(), b, ToProto(mb, shape)));
    const std::vector<In> ins = {ArrayIn(A, Logical(a, ma)), ArrayIn(B, Logical(b, mb))};
    // Requested in its raw form (reversed and from-the-end slices); reported normalized.
    const v1::IndexMap requested = ToProto(RandomMap(shape, devices(), rng), shape);
    ASSERT_OK_AND_ASSIGN(v1::IndexMap normalized, NormalizedIndexMap(client(), shape, requested));
    v1::ElementwiseRequest request = Request(v1::ELEMENTWISE_OP_MULTIPLY, ins);
    *request.mutable_spec()->mutable_result_index_map() = requested;
    std::optional<Array> result;
    EXPECT_TRUE(Check(client(), request, ins, Layout::kUnchecked, &result));
    ASSERT_TRUE(result.has_value());
    EXPECT_TRUE(SameIndexMap(result->info().index_map(), normalized))
        << result->info().index_map().ShortDebugString() << " vs " << normalized.ShortDebugString();
  }
  // With broadcasting: (9, 1) and (8,) into a block grid.
  const HostArray col = RandomHost(v1::DTYPE_FLOAT64, {9, 1}, rng);
  const HostArray row = RandomHost(v1::DTYPE_FLOAT64, {8}, rng);
  ASSERT_OK_AND_ASSIGN(Array C, UploadHost(client(), col, Split(2, 0, 9, AllDevices())));
  ASSERT_OK_AND_ASSIGN(Array R, UploadHost(client(), row, OnDevice(1, dev(2))));
  const std::vector<In> ins = {ArrayIn(C, col), ArrayIn(R, row)};
  const v1::IndexMap grid = BlockGrid2D(9, 8, 2, 3, AllDevices());
  ASSERT_OK_AND_ASSIGN(v1::IndexMap normalized, NormalizedIndexMap(client(), shape, grid));
  v1::ElementwiseRequest request = Request(v1::ELEMENTWISE_OP_HYPOT, ins);
  *request.mutable_spec()->mutable_result_index_map() = grid;
  std::optional<Array> result;
  EXPECT_TRUE(Check(client(), request, ins, Layout::kUnchecked, &result));
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(SameIndexMap(result->info().index_map(), normalized));
  // A map of the wrong rank names the field.
  *request.mutable_spec()->mutable_result_index_map() = OnDevice(1, dev(0));
  EXPECT_TRUE(StatusIs(client().Elementwise(request).status(), absl::StatusCode::kInvalidArgument,
                       {"result_index_map"}));
}

TEST_P(UfuncTest, OperandsInOpModesUseTheirLogicalValues) {
  std::mt19937_64 rng(116);
  const Shape shape = {12};
  const std::vector<std::pair<v1::Mode, v1::DType>> modes = {
      {v1::MODE_SUM, v1::DTYPE_FLOAT64}, {v1::MODE_PROD, v1::DTYPE_INT32},
      {v1::MODE_MAX, v1::DTYPE_FLOAT32}, {v1::MODE_MIN, v1::DTYPE_INT16},
      {v1::MODE_MAX, v1::DTYPE_UINT8},   {v1::MODE_MIN, v1::DTYPE_FLOAT64}};
  const HostArray base = RandomHost(v1::DTYPE_FLOAT64, shape, rng);
  ASSERT_OK_AND_ASSIGN(Array Base, UploadHost(client(), base, Split(1, 0, 12, AllDevices())));
  for (const auto& [mode, dtype] : modes) {
    // Overlapping copies and gaps (uncovered elements read as the mode's identity).
    const HostArray values = RandomHost(dtype, shape, rng);
    const TestMap map = RandomMap(shape, devices(), rng);
    ASSERT_OK_AND_ASSIGN(Array M, UploadHost(client(), values, ToProto(map, shape), mode));
    const In m = ArrayIn(M, Logical(values, map, mode));
    const In b = ArrayIn(Base, base);
    const std::string what = v1::Mode_Name(mode) + " " + DTypeStr(dtype);
    EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_ADD, {m, b})) << what;  // M's layout
    EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_MAXIMUM, {b, m})) << what;
    EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_NEGATIVE, {m})) << what;
    EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_WHERE, {m, b, ScalarIn(-1.0)})) << what;
  }
  // A fully replicated SUM-mode array holds each value once.
  const HostArray r = RandomHost(v1::DTYPE_INT64, shape, rng);
  ASSERT_OK_AND_ASSIGN(Array R, UploadHost(client(), r, Replicated(1, AllDevices()), v1::MODE_SUM));
  EXPECT_TRUE(Check(client(), v1::ELEMENTWISE_OP_SUBTRACT, {ArrayIn(R, r), ScalarIn(int64_t{1})}));
}

TEST_P(UfuncTest, ErrorsHaveExactCodes) {
  std::mt19937_64 rng(117);
  const HostArray a = RandomHost(v1::DTYPE_FLOAT64, {4, 5}, rng);
  ASSERT_OK_AND_ASSIGN(Array A, UploadHost(client(), a, Split(2, 0, 4, AllDevices())));
  ASSERT_OK_AND_ASSIGN(Array I8, Put<int8_t>({1, 2, 3}, {3}, OnDevice(1, dev(1))));
  auto operand = [](const Array& x) { return x.AsOperand(); };
  auto scalar = [](double v) {
    v1::Operand o;
    *o.mutable_scalar() = MakeScalar(v);
    return o;
  };
  auto request = [](v1::ElementwiseOp op, std::vector<v1::Operand> operands) {
    v1::ElementwiseRequest r;
    r.mutable_spec()->set_op(op);
    for (const v1::Operand& o : operands) *r.mutable_spec()->add_operands() = o;
    return r;
  };
  struct Case {
    std::string name;
    v1::ElementwiseRequest request;
    std::vector<absl::StatusCode> codes;
    std::vector<std::string> needles;
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  v1::ElementwiseRequest astype_no_dtype = request(v1::ELEMENTWISE_OP_ASTYPE, {operand(A)});
  std::vector<Case> cases = {
      {"add of one operand",
       request(v1::ELEMENTWISE_OP_ADD, {operand(A)}),
       {kInvalid},
       {"operands"}},
      {"add of three operands",
       request(v1::ELEMENTWISE_OP_ADD, {operand(A), operand(A), operand(A)}),
       {kInvalid},
       {"operands"}},
      {"sqrt of two operands",
       request(v1::ELEMENTWISE_OP_SQRT, {operand(A), operand(A)}),
       {kInvalid},
       {"operands"}},
      {"where of two operands",
       request(v1::ELEMENTWISE_OP_WHERE, {operand(A), operand(A)}),
       {kInvalid},
       {"operands"}},
      {"clip of one operand",
       request(v1::ELEMENTWISE_OP_CLIP, {operand(A)}),
       {kInvalid},
       {"operands"}},
      {"no operands", request(v1::ELEMENTWISE_OP_NEGATIVE, {}), {kInvalid}, {"operands"}},
      {"scalars only",
       request(v1::ELEMENTWISE_OP_ADD, {scalar(1), scalar(2)}),
       {kInvalid},
       {"operands"}},
      {"an empty operand",
       request(v1::ELEMENTWISE_OP_ADD, {operand(A), v1::Operand()}),
       {kInvalid},
       {"operands[1]"}},
      {"unknown op",
       request(static_cast<v1::ElementwiseOp>(999), {operand(A), operand(A)}),
       {kInvalid},
       {"op"}},
      {"unspecified op",
       request(v1::ELEMENTWISE_OP_UNSPECIFIED, {operand(A), operand(A)}),
       {kInvalid},
       {"op"}},
      {"unknown handle",
       request(v1::ELEMENTWISE_OP_ADD, {operand(A),
                                        [] {
                                          v1::Operand o;
                                          o.set_handle("arr-00000000deadbeef");
                                          return o;
                                        }()}),
       {absl::StatusCode::kNotFound},
       {"operands[1]"}},
      {"astype without dtype", astype_no_dtype, {kInvalid}, {"dtype"}},
      {"int8 scalar out of range",
       request(v1::ELEMENTWISE_OP_ADD, {operand(I8),
                                        [] {
                                          v1::Operand o;
                                          *o.mutable_scalar() = MakeScalar(int64_t{300});
                                          return o;
                                        }()}),
       {kInvalid},
       {}},
  };
  {
    v1::ElementwiseRequest r = request(v1::ELEMENTWISE_OP_ASTYPE, {operand(A)});
    r.mutable_spec()->set_dtype(static_cast<v1::DType>(77));
    cases.push_back({"astype to an unknown dtype", r, {kInvalid}, {"dtype"}});
  }
  for (const Case& c : cases) {
    EXPECT_TRUE(StatusIs(client().Elementwise(c.request).status(), c.codes, c.needles)) << c.name;
  }
  // The operands are intact and the daemon serves.
  ASSERT_OK_AND_ASSIGN(HostArray after, DownloadHost(A));
  EXPECT_TRUE(ValuesMatch(after, a, 0));
}

DISTARRAY_INSTANTIATE_BACKENDS(UfuncTest);

}  // namespace
}  // namespace distarray::testing
