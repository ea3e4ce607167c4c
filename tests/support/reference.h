// The tests' own host model of index maps and array values, independent of the daemon's code:
// random layouts (overlapping, strided, negative-step, with gaps), coverage, and random data.
#ifndef DISTARRAY_TESTS_SUPPORT_REFERENCE_H_
#define DISTARRAY_TESTS_SUPPORT_REFERENCE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include "distarray/v1/distarray.pb.h"

namespace distarray::testing {

using Shape = std::vector<int64_t>;

// One axis of a chunk: start, start+step, ... < stop (step > 0). `reversed` writes it on the wire
// as the equivalent negative-step slice; `from_end` writes negative bounds.
struct AxisSlice {
  int64_t start = 0, stop = 1, step = 1;
  bool reversed = false;
  bool from_end = false;
  bool Contains(int64_t i) const { return i >= start && i < stop && (i - start) % step == 0; }
};
struct TestChunk {
  int device = 0;
  std::vector<AxisSlice> axes;
};
using TestMap = std::vector<TestChunk>;

inline v1::IndexMap ToProto(const TestMap& map, const Shape& shape) {
  v1::IndexMap out;
  for (const TestChunk& c : map) {
    v1::Chunk* chunk = out.add_chunks();
    chunk->set_device(c.device);
    for (size_t d = 0; d < c.axes.size(); ++d) {
      const AxisSlice& a = c.axes[d];
      v1::Slice* s = chunk->add_slices();
      if (a.reversed) {
        const int64_t last = a.start + (a.stop - 1 - a.start) / a.step * a.step;
        s->set_start(a.from_end ? last - shape[d] : last);
        if (a.start - 1 >= 0) s->set_stop(a.start - 1);  // unset: down to index 0
        s->set_step(-a.step);
      } else {
        s->set_start(a.from_end ? a.start - shape[d] : a.start);
        if (a.stop < shape[d] && a.from_end)
          s->set_stop(a.stop - shape[d]);
        else
          s->set_stop(a.stop);
        if (a.step != 1) s->set_step(a.step);
      }
    }
  }
  return out;
}

inline std::vector<int64_t> Unravel(int64_t linear, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

inline int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// How many chunks of `map` hold each element (C order).
inline std::vector<int> CopiesPerElement(const TestMap& map, const Shape& shape) {
  std::vector<int> copies(NumElements(shape), 0);
  for (int64_t i = 0; i < static_cast<int64_t>(copies.size()); ++i) {
    const std::vector<int64_t> index = Unravel(i, shape);
    for (const TestChunk& c : map) {
      bool in = true;
      for (size_t d = 0; d < shape.size() && in; ++d) in = c.axes[d].Contains(index[d]);
      copies[i] += in;
    }
  }
  return copies;
}

// A random layout over `devices` devices: a partition of a random axis into blocks, plus (maybe)
// strided overlapping chunks, minus (maybe, when allow_gaps) one block.
inline TestMap RandomMap(const Shape& shape, int devices, std::mt19937_64& rng,
                         bool allow_gaps = true) {
  auto pick = [&](int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto whole = [&](int64_t n) { return AxisSlice{0, n, 1, pick(0, 3) == 0, pick(0, 3) == 0}; };
  TestMap map;
  const int axis = shape.empty() ? -1 : static_cast<int>(pick(0, shape.size() - 1));
  const int64_t blocks = axis < 0 ? 1 : pick(1, std::min<int64_t>(4, shape[axis]));
  for (int64_t b = 0; b < blocks; ++b) {
    TestChunk c{static_cast<int>(pick(0, devices - 1)), {}};
    for (size_t d = 0; d < shape.size(); ++d) {
      if (static_cast<int>(d) == axis) {
        c.axes.push_back(AxisSlice{shape[d] * b / blocks, shape[d] * (b + 1) / blocks, 1,
                                   pick(0, 3) == 0, pick(0, 3) == 0});
      } else {
        c.axes.push_back(whole(shape[d]));
      }
    }
    map.push_back(c);
  }
  for (int64_t extra = pick(0, 2); extra > 0; --extra) {
    TestChunk c{static_cast<int>(pick(0, devices - 1)), {}};
    for (int64_t n : shape) {
      const int64_t start = pick(0, n - 1);
      c.axes.push_back(
          AxisSlice{start, pick(start + 1, n), pick(1, 3), pick(0, 2) == 0, pick(0, 3) == 0});
    }
    map.push_back(c);
  }
  if (allow_gaps && map.size() > 1 && pick(0, 2) == 0) map.erase(map.begin());
  return map;
}

template <typename T>
std::vector<T> RandomValues(int64_t n, std::mt19937_64& rng) {
  std::vector<T> values(n);
  for (size_t i = 0; i < values.size(); ++i) {
    auto&& v = values[i];  // a proxy for std::vector<bool>
    if constexpr (std::is_same_v<T, bool>) {
      v = rng() & 1;
    } else if constexpr (std::is_floating_point_v<T>) {
      v = std::uniform_real_distribution<T>(-100, 100)(rng);
    } else {
      // Small magnitudes keep products of two values inside every integer dtype.
      const int64_t lo = std::is_signed_v<T> ? -100 : 0;
      v = static_cast<T>(std::uniform_int_distribution<int64_t>(lo, 100)(rng));
    }
  }
  return values;
}

// A contiguous copy of `values` (std::vector<bool> has no data() to upload from).
template <typename T>
std::unique_ptr<T[]> Contiguous(const std::vector<T>& values) {
  auto out = std::make_unique<T[]>(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return out;
}

// The logical value an uncovered element reads as in `mode`.
template <typename T>
T Identity(v1::Mode mode) {
  switch (mode) {
    case v1::MODE_PROD:
      return T(1);
    case v1::MODE_MAX:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case v1::MODE_MIN:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    default:
      return T(0);
  }
}

// What downloading an array holding `values` under `map` in `mode` must return.
template <typename T>
std::vector<T> Expected(const std::vector<T>& values, const TestMap& map, const Shape& shape,
                        v1::Mode mode) {
  const std::vector<int> copies = CopiesPerElement(map, shape);
  std::vector<T> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = copies[i] > 0 ? values[i] : Identity<T>(mode);
  return out;
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_REFERENCE_H_
