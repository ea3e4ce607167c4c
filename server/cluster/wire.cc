#include "server/cluster/wire.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace distarray::cluster {
namespace {

absl::Status Malformed(const std::string& what) {
  return absl::InternalError(absl::StrCat("cluster message malformed: ", what));
}

// An enum sent as int32, within [0, count).
template <typename Enum>
absl::StatusOr<Enum> EnumFromWire(int32_t value, int count, const char* name) {
  if (value < 0 || value >= count) return Malformed(absl::StrCat(name, " ", value));
  return static_cast<Enum>(value);
}

}  // namespace

void ToWire(const Box& box, wire::Box* out) {
  for (const Range& r : box) {
    wire::Range* range = out->add_ranges();
    range->set_start(r.start);
    range->set_step(r.step);
    range->set_count(r.count);
  }
}

void ToWire(const StridedBox& box, wire::StridedBox* out) {
  for (int d = 0; d < box.rank; ++d) {
    out->add_count(box.count[d]);
    out->add_stride(box.stride[d]);
  }
  out->set_offset(box.offset);
}

void ToWire(const Scalar& scalar, wire::Scalar* out) {
  out->set_kind(static_cast<int32_t>(scalar.kind));
  out->set_b(scalar.b);
  out->set_i(scalar.i);
  out->set_u(scalar.u);
  out->set_f(scalar.f);
  out->set_imag(scalar.imag);
}

void ToWire(const Generator& g, wire::Generator* out) {
  out->set_kind(static_cast<int32_t>(g.kind));
  out->set_start(g.start);
  out->set_step(g.step);
  out->set_stop(g.stop);
  out->set_last_index(g.last_index);
  out->set_low(g.low);
  out->set_high(g.high);
  out->set_integer_low(g.integer_low);
  out->set_integer_span(g.integer_span);
  out->set_seed(g.seed);
  out->set_rows(g.rows);
  out->set_cols(g.cols);
  out->set_diagonal(g.diagonal);
}

void ToWire(const ReduceGeometry& geometry, wire::ReduceGeometry* out) {
  ToWire(geometry.kept, out->mutable_kept());
  ToWire(geometry.reduced, out->mutable_reduced());
  out->set_base(geometry.base);
  out->set_reduced_contiguous(geometry.reduced_contiguous);
  ToWire(geometry.index, out->mutable_index());
}

absl::StatusOr<Box> FromWire(const wire::Box& box) {
  if (box.ranges_size() > kMaxRank) return Malformed("box rank");
  Box out;
  out.reserve(box.ranges_size());
  for (const wire::Range& r : box.ranges()) {
    out.push_back(Range{.start = r.start(), .step = r.step(), .count = r.count()});
  }
  return out;
}

absl::StatusOr<StridedBox> FromWire(const wire::StridedBox& box) {
  if (box.count_size() > kMaxRank || box.count_size() != box.stride_size()) {
    return Malformed("strided box rank");
  }
  StridedBox out;
  out.rank = box.count_size();
  for (int d = 0; d < out.rank; ++d) {
    out.count[d] = box.count(d);
    out.stride[d] = box.stride(d);
  }
  out.offset = box.offset();
  return out;
}

absl::StatusOr<Scalar> FromWire(const wire::Scalar& scalar) {
  Scalar out;
  auto kind = EnumFromWire<Scalar::Kind>(scalar.kind(),
                                         static_cast<int>(Scalar::Kind::kComplex) + 1, "scalar");
  if (!kind.ok()) return kind.status();
  out.kind = *kind;
  out.b = scalar.b();
  out.i = scalar.i();
  out.u = scalar.u();
  out.f = scalar.f();
  out.imag = scalar.imag();
  return out;
}

absl::StatusOr<Generator> FromWire(const wire::Generator& g) {
  Generator out;
  auto kind = EnumFromWire<Generator::Kind>(g.kind(), static_cast<int>(Generator::Kind::kTri) + 1,
                                            "generator");
  if (!kind.ok()) return kind.status();
  out.kind = *kind;
  out.start = g.start();
  out.step = g.step();
  out.stop = g.stop();
  out.last_index = g.last_index();
  out.low = g.low();
  out.high = g.high();
  out.integer_low = g.integer_low();
  out.integer_span = g.integer_span();
  out.seed = g.seed();
  out.rows = g.rows();
  out.cols = g.cols();
  out.diagonal = g.diagonal();
  return out;
}

absl::StatusOr<ReduceGeometry> FromWire(const wire::ReduceGeometry& geometry) {
  ReduceGeometry out;
  auto kept = FromWire(geometry.kept());
  auto reduced = FromWire(geometry.reduced());
  auto index = FromWire(geometry.index());
  if (!kept.ok()) return kept.status();
  if (!reduced.ok()) return reduced.status();
  if (!index.ok()) return index.status();
  out.kept = *kept;
  out.reduced = *reduced;
  out.index = *index;
  out.base = geometry.base();
  out.reduced_contiguous = geometry.reduced_contiguous();
  return out;
}

absl::StatusOr<DType> DTypeFromWire(int32_t value) {
  if (value < 1 || value > kMaxDType) return Malformed(absl::StrCat("dtype ", value));
  return static_cast<DType>(value);
}

absl::StatusOr<Combine> CombineFromWire(int32_t value) {
  return EnumFromWire<Combine>(value, static_cast<int>(Combine::kMin) + 1, "combine");
}

absl::StatusOr<ElementwiseOpId> ElementwiseOpFromWire(int32_t value) {
  return EnumFromWire<ElementwiseOpId>(value, static_cast<int>(ElementwiseOpId::kCount),
                                       "elementwise op");
}

absl::StatusOr<ReduceKind> ReduceKindFromWire(int32_t value) {
  return EnumFromWire<ReduceKind>(value, static_cast<int>(ReduceKind::kArgMatch) + 1,
                                  "reduce kind");
}

}  // namespace distarray::cluster
