// CreateArray's fills (v1::Fill), checked against a dtype and shape and launched on an array's
// chunks; the CreateArray RPC and a program's create statement share them.
#include "server/ops/fill.h"

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "common/proto_convert.h"
#include "common/scalar_check.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

// Whether converting the double `v` to `dtype` is defined: integers truncate toward zero, so the
// truncated value must lie in [lowest, max + 1); float32 needs |v| <= FLT_MAX, and a 16-bit float
// a value that does not round to infinity (float16: |v| < 65520).
bool FitsAfterConversion(double v, DType dtype) {
  if (dtype == DType::kBool) return true;
  if (dtype == DType::kFloat64) return std::isfinite(v);
  if (dtype == DType::kFloat32) return std::fabs(v) <= std::numeric_limits<float>::max();
  if (dtype == DType::kFloat16) return std::isfinite(v) && std::isfinite(float{Float16(v)});
  if (dtype == DType::kBFloat16) return std::isfinite(v) && std::isfinite(float{BFloat16(v)});
  return DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      const double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
      const double max_plus_one = (static_cast<double>(std::numeric_limits<T>::max() / 2) + 1) * 2;
      const double truncated = std::trunc(v);
      return truncated >= lowest && truncated < max_plus_one;
    } else {
      return std::isfinite(v);
    }
  });
}

}  // namespace

absl::Status ValidateFill(const v1::Fill& fill, DType dtype, const Shape& shape) {
  const int64_t num_elements = NumElements(shape);
  // A complex fill's generated values are real parts (uniform draws both parts from the same
  // range), so they must fit the real part's dtype; a full value may be complex itself.
  if (IsComplex(dtype) && !fill.has_full()) {
    return ValidateFill(fill, RealPartDType(dtype), shape);
  }
  switch (fill.kind_case()) {
    case v1::Fill::kFull: {
      ASSIGN_OR_RETURN(Scalar value, ScalarFromProto(fill.full().value(), "fill.full.value"));
      return ValidateScalarFor(value, dtype, "fill.full.value");
    }
    case v1::Fill::kArange: {
      const double start = fill.arange().start(), step = fill.arange().step();
      if (!std::isfinite(start) || !std::isfinite(step)) {
        return absl::InvalidArgumentError("fill.arange: start and step must be finite");
      }
      // A zero-size array generates no value to check.
      if (num_elements == 0) return absl::OkStatus();
      // The values run monotonically from the first to the last, so both ends in the dtype's
      // range means every value is (a conversion from out of range is undefined behaviour).
      const double last = start + step * static_cast<double>(num_elements - 1);
      for (const double v : {start, last}) {
        if (!FitsAfterConversion(v, dtype)) {
          return absl::InvalidArgumentError(absl::StrCat("fill.arange: value ", v, " (start ",
                                                         start, ", step ", step, ") is outside ",
                                                         DTypeName(dtype)));
        }
      }
      return absl::OkStatus();
    }
    case v1::Fill::kUniform: {
      const auto& u = fill.uniform();
      if (!std::isfinite(u.low()) || !std::isfinite(u.high()) || !(u.low() < u.high())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fill.uniform: need finite low < high, got [", u.low(), ", ", u.high(), ")"));
      }
      if (IsFloating(dtype) &&
          !(FitsAfterConversion(u.low(), dtype) && FitsAfterConversion(u.high(), dtype))) {
        return absl::InvalidArgumentError(absl::StrCat("fill.uniform: [", u.low(), ", ", u.high(),
                                                       ") is outside ", DTypeName(dtype)));
      }
      if (dtype != DType::kBool && !IsFloating(dtype)) {
        RETURN_IF_ERROR(
            ValidateScalarFor(Scalar::Float(std::floor(u.low())), dtype, "fill.uniform.low"));
        RETURN_IF_ERROR(
            ValidateScalarFor(Scalar::Float(std::ceil(u.high()) - 1), dtype, "fill.uniform.high"));
      }
      return absl::OkStatus();
    }
    case v1::Fill::kNormal: {
      const auto& n = fill.normal();
      if (!IsFloating(dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fill.normal: normal draws need a floating dtype, not ", DTypeName(dtype)));
      }
      if (!std::isfinite(n.mean()) || !std::isfinite(n.stddev()) || n.stddev() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("fill.normal: need a finite mean and a finite stddev >= 0, got mean ",
                         n.mean(), ", stddev ", n.stddev()));
      }
      return absl::OkStatus();
    }
    case v1::Fill::kIntegers: {
      const auto& n = fill.integers();
      if (dtype == DType::kBool || IsFloating(dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fill.integers: integer draws need an integer dtype, not ", DTypeName(dtype)));
      }
      if (!(n.low() < n.high())) {
        return absl::InvalidArgumentError(
            absl::StrCat("fill.integers: need low < high, got [", n.low(), ", ", n.high(), ")"));
      }
      RETURN_IF_ERROR(ValidateScalarFor(Scalar::Int(n.low()), dtype, "fill.integers.low"));
      return ValidateScalarFor(Scalar::Int(n.high() - 1), dtype, "fill.integers.high");
    }
    case v1::Fill::kLinspace: {
      const auto& l = fill.linspace();
      if (!std::isfinite(l.start()) || !std::isfinite(l.stop())) {
        return absl::InvalidArgumentError("fill.linspace: start and stop must be finite");
      }
      for (const double v : {l.start(), l.stop()}) {
        if (!FitsAfterConversion(v, dtype)) {
          return absl::InvalidArgumentError(
              absl::StrCat("fill.linspace: value ", v, " is outside ", DTypeName(dtype)));
        }
      }
      return absl::OkStatus();
    }
    case v1::Fill::kEye:
    case v1::Fill::kTri:
      if (shape.size() < 2) {
        return absl::InvalidArgumentError(
            absl::StrCat("fill.", fill.has_eye() ? "eye" : "tri",
                         ": needs an array of rank 2 or more (it marks a diagonal of the last two "
                         "axes); the shape is ",
                         shape.size() == 1 ? "1-d" : "0-d"));
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();  // zeros, ones, or unset (zeros)
  }
}

namespace {

// The generator of a generated fill (arange, the random draws, linspace, eye, tri) for an array
// of `shape`; nullopt for constant fills.
std::optional<Generator> GeneratorFor(const v1::Fill& fill, const Shape& shape) {
  Generator g;
  switch (fill.kind_case()) {
    case v1::Fill::kArange:
      g.start = fill.arange().start();
      g.step = fill.arange().step();
      return g;
    case v1::Fill::kUniform:
      g.kind = Generator::Kind::kUniform;
      g.low = fill.uniform().low();
      g.high = fill.uniform().high();
      g.seed = fill.uniform().seed();
      return g;
    case v1::Fill::kNormal:
      g.kind = Generator::Kind::kNormal;
      g.low = fill.normal().mean();
      g.high = fill.normal().stddev();
      g.seed = fill.normal().seed();
      return g;
    case v1::Fill::kIntegers:
      g.kind = Generator::Kind::kIntegers;
      g.integer_low = fill.integers().low();
      g.integer_span = static_cast<uint64_t>(fill.integers().high()) -
                       static_cast<uint64_t>(fill.integers().low());
      g.seed = fill.integers().seed();
      return g;
    case v1::Fill::kLinspace: {
      // As numpy.linspace: step = delta / div, values start + i * step, the last exactly stop.
      const int64_t n = NumElements(shape);
      const int64_t div = fill.linspace().endpoint() ? n - 1 : n;
      g.kind = Generator::Kind::kLinspace;
      g.start = fill.linspace().start();
      g.stop = fill.linspace().stop();
      g.step = div > 0 ? (g.stop - g.start) / static_cast<double>(div) : 0;
      g.last_index = fill.linspace().endpoint() && n > 1 ? n - 1 : -1;
      return g;
    }
    case v1::Fill::kEye:
    case v1::Fill::kTri:
      g.kind = fill.has_eye() ? Generator::Kind::kEye : Generator::Kind::kTri;
      g.rows = shape[shape.size() - 2];
      g.cols = shape.back();
      g.diagonal = fill.has_eye() ? fill.eye().k() : fill.tri().k();
      return g;
    default:
      return std::nullopt;
  }
}

}  // namespace

absl::Status LaunchFill(DeviceOps& ops, const Array& array, const v1::Fill& fill,
                        const StopCheck& stop) {
  for (const Chunk& chunk : array.chunks) {
    if (stop) RETURN_IF_ERROR(stop());  // a fill of many chunks is long CPU work
    const Shape shape = BoxShape(chunk.spec.box);
    if (const std::optional<Generator> g = GeneratorFor(fill, array.shape)) {
      RETURN_IF_ERROR(
          ops.FillGenerated(array.dtype, chunk.buffer, array.shape, chunk.spec.box, *g));
      continue;
    }
    Scalar value = Scalar::Int(fill.has_ones() ? 1 : 0);
    if (fill.has_full()) {
      ASSIGN_OR_RETURN(value, ScalarFromProto(fill.full().value(), ""));
    }
    RETURN_IF_ERROR(
        ops.FillConstant(array.dtype, BufferBox{chunk.buffer, shape, FullBox(shape)}, value));
  }
  return absl::OkStatus();
}

}  // namespace distarray
