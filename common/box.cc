#include "common/box.h"

namespace distarray {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t NumElements(const Box& box) {
  int64_t n = 1;
  for (const Range& r : box) n *= r.count;
  return n;
}

Shape BoxShape(const Box& box) {
  Shape shape;
  shape.reserve(box.size());
  for (const Range& r : box) shape.push_back(r.count);
  return shape;
}

Box FullBox(const Shape& shape) {
  Box box;
  box.reserve(shape.size());
  for (int64_t d : shape) box.push_back(Range{0, 1, d});
  return box;
}

std::optional<Box> IntersectBoxes(const Box& a, const Box& b) {
  Box out;
  out.reserve(a.size());
  for (size_t d = 0; d < a.size(); ++d) {
    std::optional<Range> r = Intersect(a[d], b[d]);
    if (!r) return std::nullopt;
    out.push_back(*r);
  }
  return out;
}

bool BoxContains(const Box& outer, const Box& inner) {
  for (size_t d = 0; d < outer.size(); ++d) {
    if (!ContainsRange(outer[d], inner[d])) return false;
  }
  return true;
}

Box ToLocal(const Box& chunk, const Box& global) {
  Box local;
  local.reserve(chunk.size());
  for (size_t d = 0; d < chunk.size(); ++d) {
    local.push_back(Range{(global[d].start - chunk[d].start) / chunk[d].step,
                          global[d].step / chunk[d].step, global[d].count});
  }
  return local;
}

std::vector<int64_t> DenseStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

std::optional<int64_t> ContiguousOffset(const Shape& shape, const Box& box) {
  // Walking outwards, an axis may span more than one index only if every axis inside it is
  // taken whole; the run is then contiguous.
  bool inner_whole = true;
  for (size_t d = shape.size(); d-- > 0;) {
    const Range& r = box[d];
    if (r.count > 1 && (!inner_whole || r.step != 1)) return std::nullopt;
    inner_whole = inner_whole && r.count == shape[d];
  }
  const std::vector<int64_t> strides = DenseStrides(shape);
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) offset += box[d].start * strides[d];
  return offset;
}

StridedBox MakeStridedBox(const Shape& shape, const Box& box) {
  StridedBox out;
  out.rank = static_cast<int>(shape.size());
  const std::vector<int64_t> strides = DenseStrides(shape);
  for (int d = 0; d < out.rank; ++d) {
    out.count[d] = box[d].count;
    out.stride[d] = box[d].step * strides[d];
    out.offset += box[d].start * strides[d];
  }
  return out;
}

}  // namespace distarray
