// Elementwise add, subtract, multiply and divide on arrays in different layouts and with
// scalars, against a long-double host reference.
#include <cmath>
#include <random>

#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

class ElementwiseTest : public BackendTest {};

template <typename T>
long double Apply(v1::ElementwiseOp op, long double a, long double b) {
  switch (op) {
    case v1::ELEMENTWISE_OP_ADD:
      return a + b;
    case v1::ELEMENTWISE_OP_SUBTRACT:
      return a - b;
    case v1::ELEMENTWISE_OP_MULTIPLY:
      return a * b;
    default:
      return a / b;
  }
}

// Float results must be the correctly rounded value (within half an ulp of the exact one, so
// within one ulp here); integer results must be exact.
template <typename T>
void ExpectClose(T got, long double want, int64_t index) {
  if constexpr (std::is_floating_point_v<T>) {
    const long double tolerance =
        std::numeric_limits<T>::epsilon() * std::fabs(want) + std::numeric_limits<T>::denorm_min();
    ASSERT_LE(std::fabs(static_cast<long double>(got) - want), tolerance) << "element " << index;
  } else {
    // Through a 64-bit integer: converting a value outside T's range from floating point is
    // undefined, while integer conversion wraps as the daemon's integer arithmetic does.
    const T wrapped = want < 0 ? static_cast<T>(static_cast<int64_t>(want))
                               : static_cast<T>(static_cast<uint64_t>(want));
    ASSERT_EQ(got, wrapped) << "element " << index;
  }
}

template <typename T>
void CheckOps(const Client& client, int devices, std::mt19937_64& rng) {
  const Shape shape = {13, 8};
  const int64_t n = NumElements(shape);
  std::vector<v1::ElementwiseOp> ops = {v1::ELEMENTWISE_OP_ADD, v1::ELEMENTWISE_OP_SUBTRACT,
                                        v1::ELEMENTWISE_OP_MULTIPLY};
  if (std::is_floating_point_v<T>) ops.push_back(v1::ELEMENTWISE_OP_DIVIDE);
  for (v1::ElementwiseOp op : ops) {
    const TestMap a_map = RandomMap(shape, devices, rng);
    const TestMap b_map = RandomMap(shape, devices, rng);
    std::vector<T> a = RandomValues<T>(n, rng), b = RandomValues<T>(n, rng);
    for (T& v : b) {
      if (v == T(0)) v = T(3);  // no division by zero
    }
    auto A = client.Upload<T>(a, shape, {ToProto(a_map, shape)});
    auto B = client.Upload<T>(b, shape, {ToProto(b_map, shape)});
    ASSERT_TRUE(A.ok() && B.ok());
    const std::vector<T> a_held = Expected(a, a_map, shape, v1::MODE_REPLICA);
    const std::vector<T> b_held = Expected(b, b_map, shape, v1::MODE_REPLICA);
    const std::vector<int> a_copies = CopiesPerElement(a_map, shape);

    auto C = A->Elementwise(op, B->AsOperand());
    ASSERT_TRUE(C.ok()) << C.status();
    EXPECT_EQ(C->info().index_map().chunks_size(), A->info().index_map().chunks_size());
    auto c = C->template Download<T>();
    ASSERT_TRUE(c.ok()) << c.status();
    for (int64_t i = 0; i < n; ++i) {
      // Elements outside the result's (A's) layout read as zero.
      if (a_copies[i] == 0) {
        ASSERT_EQ((*c)[i], T(0));
      } else if (op != v1::ELEMENTWISE_OP_DIVIDE || b_held[i] != T(0)) {
        ExpectClose<T>((*c)[i], Apply<T>(op, a_held[i], b_held[i]), i);
      }
    }

    // Scalar on either side.
    const T s = T(3);
    v1::Operand scalar;
    *scalar.mutable_scalar() = MakeScalar(s);
    auto right = A->Elementwise(op, scalar, /*this_first=*/true);
    auto left = A->Elementwise(op, scalar, /*this_first=*/false);
    ASSERT_TRUE(right.ok() && left.ok()) << right.status() << left.status();
    auto r = right->template Download<T>();
    auto l = left->template Download<T>();
    ASSERT_TRUE(r.ok() && l.ok());
    for (int64_t i = 0; i < n; ++i) {
      if (a_copies[i] == 0) continue;
      ExpectClose<T>((*r)[i], Apply<T>(op, a_held[i], s), i);
      if (op != v1::ELEMENTWISE_OP_DIVIDE || a_held[i] != T(0)) {
        ExpectClose<T>((*l)[i], Apply<T>(op, s, a_held[i]), i);
      }
    }
  }
}

TEST_P(ElementwiseTest, ArithmeticAcrossLayoutsAndDTypes) {
  std::mt19937_64 rng(31337);
  CheckOps<float>(client(), devices(), rng);
  CheckOps<double>(client(), devices(), rng);
  CheckOps<int32_t>(client(), devices(), rng);
  CheckOps<int64_t>(client(), devices(), rng);
  CheckOps<uint8_t>(client(), devices(), rng);
  CheckOps<int16_t>(client(), devices(), rng);
}

TEST_P(ElementwiseTest, OperandsInOpModesUseTheirLogicalValues) {
  std::mt19937_64 rng(8);
  const Shape shape = {20};
  const std::vector<double> a = RandomValues<double>(20, rng), b = RandomValues<double>(20, rng);
  const v1::IndexMap replicated = Replicated(1, {dev(0), dev(1)});
  ASSERT_OK_AND_ASSIGN(Array A, client().Upload<double>(a, shape, {replicated, v1::MODE_SUM}));
  ASSERT_OK_AND_ASSIGN(Array B, client().Upload<double>(
                                    b, shape, {Split(1, 0, 20, {dev(2), dev(3)}), v1::MODE_MAX}));
  ASSERT_OK_AND_ASSIGN(Array C, A * B);
  EXPECT_EQ(C.info().mode(), v1::MODE_REPLICA);
  ASSERT_OK_AND_ASSIGN(std::vector<double> c, C.Download<double>());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(c[i], a[i] * b[i]);
}

// Integer arithmetic wraps modulo 2^bits as NumPy's does (signed overflow is undefined behaviour
// in C++, so the kernels compute in unsigned types): found by the request fuzzer under UBSan.
TEST_P(ElementwiseTest, IntegerOverflowWrapsAsInNumPy) {
  const v1::IndexMap split = Split(1, 0, 4, {dev(0), dev(1)});
  const std::vector<int64_t> big = {INT64_MAX, INT64_MIN, INT64_MAX - 1, -7};
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<int64_t>(big, {4}, {split}));
  ASSERT_OK_AND_ASSIGN(Array sum, a + a);
  EXPECT_EQ(sum.Download<int64_t>().value(), (std::vector<int64_t>{-2, 0, -4, -14}));
  ASSERT_OK_AND_ASSIGN(Array plus_one, a + int64_t{1});
  EXPECT_EQ(plus_one.Download<int64_t>().value(),
            (std::vector<int64_t>{INT64_MIN, INT64_MIN + 1, INT64_MAX, -6}));
  ASSERT_OK_AND_ASSIGN(Array product, a * a);
  EXPECT_EQ(product.Download<int64_t>().value(), (std::vector<int64_t>{1, 0, 4, 49}));
  // uint16 * uint16 promotes to int in C++ and would overflow it; NumPy gives the low 16 bits.
  const std::vector<uint16_t> wide = {65535, 65535, 300, 2};
  ASSERT_OK_AND_ASSIGN(Array w, client().Upload<uint16_t>(wide, {4}, {split}));
  ASSERT_OK_AND_ASSIGN(Array squared, w * w);
  EXPECT_EQ(squared.Download<uint16_t>().value(), (std::vector<uint16_t>{1, 1, 24464, 4}));
  // Copies combined in SUM mode wrap the same way.
  ASSERT_OK_AND_ASSIGN(Array copies,
                       client().Upload<int32_t>(std::vector<int32_t>(4, INT32_MAX), {4},
                                                {Replicated(1, {dev(0), dev(1)})}));
  ASSERT_OK_AND_ASSIGN(Array summed, copies.ChangeMode(v1::MODE_SUM));
  ASSERT_OK_AND_ASSIGN(Array doubled, summed + summed);
  EXPECT_EQ(doubled.Download<int32_t>().value(), std::vector<int32_t>(4, -2));
}

DISTARRAY_INSTANTIATE_BACKENDS(ElementwiseTest);

}  // namespace
}  // namespace distarray::testing
