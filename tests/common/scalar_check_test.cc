#include "common/scalar_check.h"

#include <gtest/gtest.h>

#include <cmath>

namespace distarray {
namespace {

bool Fits(const Scalar& s, DType dtype) { return ValidateScalarFor(s, dtype, "x").ok(); }

TEST(ValidateScalarForTest, FloatScalarsMustBeExactIntegersInRange) {
  const double two63 = std::ldexp(1.0, 63), two64 = std::ldexp(1.0, 64);
  // 2^63 into int64 and 2^64 into uint64 once wrapped to -2^63 and 0.
  EXPECT_FALSE(Fits(Scalar::Float(two63), DType::kInt64));
  EXPECT_TRUE(Fits(Scalar::Float(-two63), DType::kInt64));
  EXPECT_TRUE(Fits(Scalar::Float(std::nextafter(two63, 0)), DType::kInt64));
  EXPECT_FALSE(Fits(Scalar::Float(two64), DType::kUInt64));
  EXPECT_TRUE(Fits(Scalar::Float(std::nextafter(two64, 0)), DType::kUInt64));
  EXPECT_FALSE(Fits(Scalar::Float(-1), DType::kUInt64));
  EXPECT_FALSE(Fits(Scalar::Float(2147483648.0), DType::kInt32));
  EXPECT_TRUE(Fits(Scalar::Float(-2147483648.0), DType::kInt32));
  EXPECT_FALSE(Fits(Scalar::Float(256), DType::kUInt8));
  EXPECT_FALSE(Fits(Scalar::Float(1.5), DType::kInt16));
  EXPECT_FALSE(Fits(Scalar::Float(NAN), DType::kInt8));
  EXPECT_FALSE(Fits(Scalar::Float(INFINITY), DType::kUInt32));
}

TEST(ValidateScalarForTest, IntegerScalarsOutsideTheRangeAreRefused) {
  EXPECT_FALSE(Fits(Scalar::Int(128), DType::kInt8));
  EXPECT_TRUE(Fits(Scalar::Int(-128), DType::kInt8));
  EXPECT_FALSE(Fits(Scalar::Int(-1), DType::kUInt16));
  EXPECT_FALSE(Fits(Scalar::UInt(uint64_t{1} << 63), DType::kInt64));
  EXPECT_TRUE(Fits(Scalar::UInt(UINT64_MAX), DType::kUInt64));
  // Into floats: only exactly representable integers (no UB for values near 2^63 or 2^64).
  EXPECT_FALSE(Fits(Scalar::Int(INT64_MAX), DType::kFloat64));
  EXPECT_TRUE(Fits(Scalar::Int(INT64_MIN), DType::kFloat64));
  EXPECT_FALSE(Fits(Scalar::UInt(UINT64_MAX), DType::kFloat32));
  EXPECT_TRUE(Fits(Scalar::Int(16777216), DType::kFloat32));
  EXPECT_FALSE(Fits(Scalar::Int(16777217), DType::kFloat32));
}

TEST(ValidateScalarForTest, MessageNamesTheField) {
  EXPECT_EQ(ValidateScalarFor(Scalar::Int(300), DType::kUInt8, "spec.operands[1].scalar").message(),
            "spec.operands[1].scalar: scalar 300 is not exactly representable as uint8");
}

}  // namespace
}  // namespace distarray
