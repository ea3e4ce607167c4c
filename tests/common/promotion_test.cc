#include "common/promotion.h"

#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace distarray {
namespace {

using D = DType;
constexpr D kDTypes[] = {D::kBool,   D::kInt8,   D::kInt16,  D::kInt32,   D::kInt64,  D::kUInt8,
                         D::kUInt16, D::kUInt32, D::kUInt64, D::kFloat32, D::kFloat64};

// numpy.result_type(row, column) as NumPy 2.4 printed it (the table docs/api.md shows).
TEST(PromoteTypesTest, EqualsNumPysResultTypeForEveryPair) {
  const D kNumPy[11][11] = {
      {D::kBool, D::kInt8, D::kInt16, D::kInt32, D::kInt64, D::kUInt8, D::kUInt16, D::kUInt32,
       D::kUInt64, D::kFloat32, D::kFloat64},
      {D::kInt8, D::kInt8, D::kInt16, D::kInt32, D::kInt64, D::kInt16, D::kInt32, D::kInt64,
       D::kFloat64, D::kFloat32, D::kFloat64},
      {D::kInt16, D::kInt16, D::kInt16, D::kInt32, D::kInt64, D::kInt16, D::kInt32, D::kInt64,
       D::kFloat64, D::kFloat32, D::kFloat64},
      {D::kInt32, D::kInt32, D::kInt32, D::kInt32, D::kInt64, D::kInt32, D::kInt32, D::kInt64,
       D::kFloat64, D::kFloat64, D::kFloat64},
      {D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kInt64,
       D::kFloat64, D::kFloat64, D::kFloat64},
      {D::kUInt8, D::kInt16, D::kInt16, D::kInt32, D::kInt64, D::kUInt8, D::kUInt16, D::kUInt32,
       D::kUInt64, D::kFloat32, D::kFloat64},
      {D::kUInt16, D::kInt32, D::kInt32, D::kInt32, D::kInt64, D::kUInt16, D::kUInt16, D::kUInt32,
       D::kUInt64, D::kFloat32, D::kFloat64},
      {D::kUInt32, D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kUInt32, D::kUInt32, D::kUInt32,
       D::kUInt64, D::kFloat64, D::kFloat64},
      {D::kUInt64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kUInt64, D::kUInt64,
       D::kUInt64, D::kUInt64, D::kFloat64, D::kFloat64},
      {D::kFloat32, D::kFloat32, D::kFloat32, D::kFloat64, D::kFloat64, D::kFloat32, D::kFloat32,
       D::kFloat64, D::kFloat64, D::kFloat32, D::kFloat64},
      {D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64,
       D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64},
  };
  for (int i = 0; i < 11; ++i) {
    for (int j = 0; j < 11; ++j) {
      EXPECT_EQ(PromoteTypes(kDTypes[i], kDTypes[j]), kNumPy[i][j])
          << DTypeName(kDTypes[i]) << " with " << DTypeName(kDTypes[j]);
    }
  }
}

// numpy.result_type(complex64, x) for every x, from NumPy 2.1 (bfloat16 as JAX: with float32's
// parts); complex128 with anything is complex128.
TEST(PromoteTypesTest, ComplexTakesTheDTypeWhosePartsHoldBoth) {
  const std::vector<std::pair<D, D>> with_complex64 = {
      {D::kBool, D::kComplex64},       {D::kInt8, D::kComplex64},
      {D::kInt16, D::kComplex64},      {D::kInt32, D::kComplex128},
      {D::kInt64, D::kComplex128},     {D::kUInt8, D::kComplex64},
      {D::kUInt16, D::kComplex64},     {D::kUInt32, D::kComplex128},
      {D::kUInt64, D::kComplex128},    {D::kFloat16, D::kComplex64},
      {D::kBFloat16, D::kComplex64},   {D::kFloat32, D::kComplex64},
      {D::kFloat64, D::kComplex128},   {D::kComplex64, D::kComplex64},
      {D::kComplex128, D::kComplex128}};
  for (const auto& [other, want] : with_complex64) {
    EXPECT_EQ(PromoteTypes(D::kComplex64, other), want) << DTypeName(other);
    EXPECT_EQ(PromoteTypes(other, D::kComplex64), want) << DTypeName(other);
    EXPECT_EQ(PromoteTypes(D::kComplex128, other), D::kComplex128) << DTypeName(other);
  }
  EXPECT_EQ(PromoteTypes(D::kComplex64, D::kUnspecified), std::nullopt);
  // Weak scalars keep the complex dtype; the float loop of a complex dtype is itself.
  EXPECT_EQ(PromoteWithScalar(D::kComplex64, Scalar::Kind::kFloat), D::kComplex64);
  EXPECT_EQ(PromoteWithScalar(D::kComplex64, Scalar::Kind::kInt), D::kComplex64);
  EXPECT_EQ(FloatFor(D::kComplex128), D::kComplex128);
}

TEST(PromoteWithScalarTest, ScalarsAreWeak) {
  EXPECT_EQ(PromoteWithScalar(D::kInt8, Scalar::Kind::kInt), D::kInt8);
  EXPECT_EQ(PromoteWithScalar(D::kBool, Scalar::Kind::kInt), D::kInt64);
  EXPECT_EQ(PromoteWithScalar(D::kInt32, Scalar::Kind::kFloat), D::kFloat64);
  EXPECT_EQ(PromoteWithScalar(D::kFloat32, Scalar::Kind::kFloat), D::kFloat32);
  EXPECT_EQ(PromoteWithScalar(D::kUInt16, Scalar::Kind::kBool), D::kUInt16);
}

TEST(FloatForTest, NumPysFloatLoops) {
  EXPECT_EQ(FloatFor(D::kBool), D::kFloat16);
  EXPECT_EQ(FloatFor(D::kUInt8), D::kFloat16);
  EXPECT_EQ(FloatFor(D::kInt16), D::kFloat32);
  EXPECT_EQ(FloatFor(D::kUInt32), D::kFloat64);
  EXPECT_EQ(FloatFor(D::kFloat32), D::kFloat32);
}

TEST(ValidateWeakScalarTest, IntegersMustFitIntegerDTypes) {
  EXPECT_TRUE(ValidateWeakScalar(Scalar::Int(255), D::kUInt8, "s").ok());
  EXPECT_EQ(ValidateWeakScalar(Scalar::Int(256), D::kUInt8, "s").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateWeakScalar(Scalar::Int(-1), D::kUInt64, "s").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateWeakScalar(Scalar::UInt(uint64_t{1} << 63), D::kInt64, "s").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateWeakScalar(Scalar::Int(1 << 30), D::kFloat32, "s").ok());
  EXPECT_TRUE(ValidateWeakScalar(Scalar::Float(1e300), D::kFloat32, "s").ok());
}

}  // namespace
}  // namespace distarray
