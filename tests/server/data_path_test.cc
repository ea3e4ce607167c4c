// The data path in-process (the engine on the host backend): slabs bounded in bytes whatever the
// shape, and regions with negative steps downloaded and uploaded in NumPy's order, checked
// against an independent model of Python slicing on random data, with slab targets small enough
// that every region spans many slabs.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/index_map.h"
#include "server/engine/engine.h"
#include "server/engine/upload_session.h"
#include "server/host/host_backend.h"
#include "server/ops/slab_plan.h"

namespace distarray {
namespace {

// ---- A model of NumPy basic slicing, written from Python's slice.indices, not from ours. ----

struct PySlice {
  std::optional<int64_t> start, stop, step;
};

std::vector<int64_t> PyIndices(const PySlice& s, int64_t n) {
  const int64_t step = s.step.value_or(1);
  int64_t start, stop;
  auto adjust = [&](std::optional<int64_t> v, int64_t if_unset) {
    if (!v) return if_unset;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  start = adjust(s.start, step < 0 ? n - 1 : 0);
  stop = adjust(s.stop, step < 0 ? -1 : n);
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t i = start; i < stop; i += step) out.push_back(i);
  } else {
    for (int64_t i = start; i > stop; i += step) out.push_back(i);
  }
  return out;
}

// The flat (C-order) indices into an array of `shape` that a[slices] visits, in NumPy's order.
std::vector<int64_t> PyRegion(const std::vector<PySlice>& slices, const Shape& shape) {
  std::vector<std::vector<int64_t>> axes;
  for (size_t d = 0; d < shape.size(); ++d) axes.push_back(PyIndices(slices[d], shape[d]));
  std::vector<int64_t> out = {0};
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<int64_t> next;
    for (int64_t base : out) {
      for (int64_t i : axes[d]) next.push_back(base * shape[d] + i);
    }
    out = std::move(next);
  }
  return out;
}

v1::Region ToRegion(const std::vector<PySlice>& slices) {
  v1::Region region;
  for (const PySlice& s : slices) {
    v1::Slice* p = region.add_slices();
    if (s.start) p->set_start(*s.start);
    if (s.stop) p->set_stop(*s.stop);
    if (s.step) p->set_step(*s.step);
  }
  return region;
}

std::string Describe(const std::vector<PySlice>& slices) {
  std::string out = "[";
  for (const PySlice& s : slices) {
    if (out.size() > 1) out += ", ";
    if (s.start) out += std::to_string(*s.start);
    out += ":";
    if (s.stop) out += std::to_string(*s.stop);
    if (s.step) out += ":" + std::to_string(*s.step);
  }
  return out + "]";
}

// ---- The engine on four simulated devices. ----

class DataPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = HostBackend::Create({.device_count = 4, .memory_limit_bytes = 1 << 28});
    ASSERT_TRUE(backend.ok()) << backend.status();
    engine_.emplace(*std::move(backend));
  }
  void TearDown() override { SetSlabTargetsForTesting(0, 0); }

  // A REPLICA int32 array of `shape` holding `values`, laid out in chunks of `chunk` indices per
  // axis (plus, when `strided`, chunks interleaved by step 2 on axis 0, which takes the staging
  // path) over the four devices, with one chunk duplicated.
  ArrayPtr Make(const Shape& shape, const std::vector<int32_t>& values, int64_t chunk,
                bool strided) {
    v1::UploadHeader header;
    v1::ArraySpec* spec = header.mutable_new_array();
    for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
    spec->set_dtype(v1::DTYPE_INT32);
    // The grid of chunks, in C order of their corner.
    std::vector<std::vector<std::pair<int64_t, int64_t>>> axes;  // (start, step) per chunk
    for (size_t d = 0; d < shape.size(); ++d) {
      std::vector<std::pair<int64_t, int64_t>> ranges;
      if (d == 0 && strided) {
        ranges = {{0, 2}, {1, 2}};
      } else {
        for (int64_t s = 0; s < shape[d]; s += chunk) ranges.push_back({s, 1});
      }
      axes.push_back(ranges);
    }
    std::vector<std::vector<std::pair<int64_t, int64_t>>> corners = {{}};
    for (const auto& ranges : axes) {
      std::vector<std::vector<std::pair<int64_t, int64_t>>> next;
      for (const auto& c : corners) {
        for (const auto& r : ranges) {
          next.push_back(c);
          next.back().push_back(r);
        }
      }
      corners = std::move(next);
    }
    int device = 0;
    for (size_t i = 0; i <= corners.size(); ++i) {
      const auto& corner = corners[i == corners.size() ? 0 : i];  // the first one twice
      v1::Chunk* c = spec->mutable_index_map()->add_chunks();
      c->set_device(device++ % 4);
      for (size_t d = 0; d < shape.size(); ++d) {
        v1::Slice* s = c->add_slices();
        s->set_start(corner[d].first);
        if (corner[d].second == 1) {
          s->set_stop(std::min(shape[d], corner[d].first + chunk));
        } else {
          s->set_step(corner[d].second);
        }
      }
    }
    auto session = engine_->BeginUpload(header);
    EXPECT_TRUE(session.ok()) << session.status();
    const char* bytes = reinterpret_cast<const char*>(values.data());
    const size_t total = values.size() * sizeof(int32_t);
    // Pieces of odd sizes, so slab boundaries fall inside messages and elements.
    for (size_t at = 0; at < total;) {
      const size_t n = std::min<size_t>(total - at, 13);
      EXPECT_TRUE((*session)->Append(absl::string_view(bytes + at, n)).ok());
      at += n;
    }
    auto array = (*session)->Finish();
    EXPECT_TRUE(array.ok()) << array.status();
    return *array;
  }

  absl::StatusOr<std::vector<int32_t>> Download(const ArrayPtr& array, const v1::Region& region) {
    v1::DownloadArrayRequest request;
    request.set_handle(array->handle);
    *request.mutable_region() = region;
    request.set_max_message_bytes(7);
    std::string bytes;
    RETURN_IF_ERROR(engine_->Download(request, [&](const Shape&, DType, absl::string_view b) {
      bytes.append(b.data(), b.size());
      return true;
    }));
    // The shared-memory path's DownloadInto lands the same bytes in a buffer of their size.
    std::string direct(bytes.size(), '\x5a');
    RETURN_IF_ERROR(
        engine_->DownloadInto(request, direct.data(), static_cast<int64_t>(direct.size())));
    if (direct != bytes) return absl::InternalError("DownloadInto differs from Download");
    std::vector<int32_t> out(bytes.size() / sizeof(int32_t));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  absl::Status Upload(const ArrayPtr& array, const v1::Region& region,
                      const std::vector<int32_t>& values) {
    ASSIGN_OR_RETURN(RegionSelection selection,
                     NormalizeRegionSelection(region, array->shape, "header.region"));
    UploadSession session(*engine_, *array, UploadSession::Target::kInPlace, std::move(selection));
    const char* bytes = reinterpret_cast<const char*>(values.data());
    const size_t total = values.size() * sizeof(int32_t);
    if (++uploads_ % 2 == 0) {
      // Pieces of 11 bytes (as a stream's messages): every slab fills through the session's
      // buffer, its boundaries inside pieces and elements.
      for (size_t at = 0; at < total;) {
        const size_t n = std::min<size_t>(total - at, 11);
        RETURN_IF_ERROR(session.Append(absl::string_view(bytes + at, n)));
        at += n;
      }
    } else {
      // An odd first piece, then the rest at once: the first slab fills through the session's
      // buffer, whole slabs after it are written from where they lie (as from a shared-memory
      // segment).
      const size_t first = std::min<size_t>(total, 11);
      RETURN_IF_ERROR(session.Append(absl::string_view(bytes, first)));
      RETURN_IF_ERROR(session.Append(absl::string_view(bytes + first, total - first)));
    }
    return session.Finish().status();
  }
  int uploads_ = 0;  // Upload alternates between its two ways of cutting the bytes

  std::mt19937 rng_{42};
  std::vector<int32_t> Random(int64_t n) {
    std::vector<int32_t> out(n);
    for (int32_t& v : out) v = static_cast<int32_t>(rng_());
    return out;
  }

  std::optional<Engine> engine_;
};

// Every combination of ascending and descending slices (and single elements either way) over
// 1-D, 2-D and 3-D arrays, for several slab targets (one element, a few, part of a row, more
// than the array), both chunk layouts.
TEST_F(DataPathTest, RegionsFollowNumPyOrderOnDownloadAndUpload) {
  const std::vector<PySlice> choices = {
      {},            // :
      {{}, {}, -1},  // ::-1
      {1, -1, 2},    // 1:-1:2
      {-1, 2, -3},   // -1:2:-3
      {{}, {}, -2},  // ::-2
      {3, 4, {}},    // 3:4 (one element)
      {4, 3, -1},    // 4:3:-1 (one element, descending)
      {{}, 0, -1},   // everything but index 0, downwards
  };
  const std::vector<Shape> shapes = {{11}, {7, 9}, {6, 7, 5}};
  for (int64_t target : {int64_t{1}, int64_t{12}, int64_t{100}, int64_t{1} << 20}) {
    SetSlabTargetsForTesting(target, target + 4);
    for (const Shape& shape : shapes) {
      for (bool strided : {false, true}) {
        const int64_t n = NumElements(shape);
        std::vector<int32_t> expected = Random(n);
        ArrayPtr array = Make(shape, expected, /*chunk=*/3, strided);
        ASSERT_NE(array, nullptr);
        std::vector<size_t> pick(shape.size(), 0);
        while (true) {
          std::vector<PySlice> slices;
          for (size_t d = 0; d < shape.size(); ++d) slices.push_back(choices[pick[d]]);
          const std::vector<int64_t> flat = PyRegion(slices, shape);
          const v1::Region region = ToRegion(slices);
          SCOPED_TRACE(Describe(slices) + " target " + std::to_string(target) +
                       (strided ? " strided" : ""));

          auto got = Download(array, region);
          ASSERT_TRUE(got.ok()) << got.status();
          std::vector<int32_t> want;
          for (int64_t i : flat) want.push_back(expected[i]);
          ASSERT_EQ(*got, want);

          // a[region] = values, then the whole array.
          const std::vector<int32_t> values = Random(flat.size());
          ASSERT_TRUE(Upload(array, region, values).ok());
          for (size_t k = 0; k < flat.size(); ++k) expected[flat[k]] = values[k];
          auto whole = Download(array, v1::Region());
          ASSERT_TRUE(whole.ok()) << whole.status();
          ASSERT_EQ(*whole, expected);

          size_t d = 0;
          for (; d < pick.size(); ++d) {
            if (++pick[d] < choices.size()) break;
            pick[d] = 0;
          }
          if (d == pick.size()) break;
        }
        ASSERT_TRUE(engine_->Delete(array->handle).ok());
      }
    }
  }
}

TEST_F(DataPathTest, TheIssuesExampleRegion) {
  SetSlabTargetsForTesting(24, 20);
  const Shape shape = {9, 8, 10};
  std::vector<int32_t> expected = Random(NumElements(shape));
  ArrayPtr array = Make(shape, expected, 4, false);
  const std::vector<PySlice> slices = {
      {{}, {}, -2}, {2, 7, {}}, {-1, 2, -3}};  // [::-2, 2:7, -1:2:-3]
  auto got = Download(array, ToRegion(slices));
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<int32_t> want;
  for (int i0 = 8; i0 >= 0; i0 -= 2) {
    for (int i1 = 2; i1 < 7; ++i1) {
      for (int i2 = 9; i2 > 2; i2 -= 3) want.push_back(expected[(i0 * 8 + i1) * 10 + i2]);
    }
  }
  EXPECT_EQ(*got, want);
}

TEST_F(DataPathTest, ZeroDimensionalArraysRoundTrip) {
  ArrayPtr array = Make({}, {1234567}, 1, false);
  auto got = Download(array, v1::Region());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, std::vector<int32_t>{1234567});
}

TEST_F(DataPathTest, DownloadIntoRefusesADestinationOfAnotherSize) {
  const std::vector<int32_t> values = Random(5 * 6);
  ArrayPtr array = Make({5, 6}, values, 2, false);
  v1::DownloadArrayRequest request;
  request.set_handle(array->handle);
  std::string destination(values.size() * sizeof(int32_t) + 4, '\x5a');
  for (int64_t bytes : {int64_t{0}, int64_t{4}, static_cast<int64_t>(destination.size())}) {
    const absl::Status status = engine_->DownloadInto(request, destination.data(), bytes);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << bytes << ": " << status;
  }
  // No destination at all (an empty mapping has none) is no way around the check.
  EXPECT_EQ(engine_->DownloadInto(request, nullptr, 0).code(),
            absl::StatusCode::kFailedPrecondition);
  // A refusal comes before any device read: nothing was written, not even the tail.
  EXPECT_EQ(destination.substr(values.size() * sizeof(int32_t)), std::string(4, '\x5a'));
  EXPECT_EQ(destination, std::string(destination.size(), '\x5a'));
}

// ---- The slab walker itself. ----

int64_t MaxSlabBytes(const Shape& shape, int64_t element_size, int64_t target, int64_t* count,
                     int64_t* total) {
  RegionSelection region{FullBox(shape), std::vector<bool>(shape.size(), false)};
  auto walker = SlabWalker::Create(region, element_size, target, "region");
  EXPECT_TRUE(walker.ok());
  int64_t max = 0;
  *count = 0;
  *total = 0;
  for (; !walker->done(); walker->Next()) {
    max = std::max(max, walker->bytes());
    EXPECT_EQ(walker->bytes(), NumElements(walker->box()) * element_size);
    *total += walker->bytes();
    ++*count;
  }
  return max;
}

TEST(SlabWalkerTest, OneHugeRowIsSplit) {
  int64_t count = 0, total = 0;
  // [1, 2^30] int8: the old slabs were whole rows (1 GiB).
  EXPECT_EQ(MaxSlabBytes({1, int64_t{1} << 30}, 1, 16 << 20, &count, &total), 16 << 20);
  EXPECT_EQ(count, 64);
  EXPECT_EQ(total, int64_t{1} << 30);
  // One element selected from it.
  RegionSelection one{{Range{0, 1, 1}, Range{12345, 1, 1}}, {false, false}};
  auto walker = SlabWalker::Create(one, 1, 16 << 20, "region");
  ASSERT_TRUE(walker.ok());
  EXPECT_EQ(walker->bytes(), 1);
}

TEST(SlabWalkerTest, SlabsAreBoundedWhateverTheShape) {
  for (const Shape& shape : std::vector<Shape>{{3, 5, 7, 11}, {1000, 3}, {2, 1, 999}, {5}}) {
    for (int64_t target : {1, 4, 8, 100, 1000, 1 << 20}) {
      int64_t count = 0, total = 0;
      const int64_t max = MaxSlabBytes(shape, 4, target, &count, &total);
      EXPECT_LE(max, std::max<int64_t>(target, 4));
      EXPECT_EQ(total, NumElements(shape) * 4);
    }
  }
}

TEST(SlabWalkerTest, ZeroDimensionalRegionIsOneSlab) {
  auto walker = SlabWalker::Create(RegionSelection{}, 8, 16, "region");
  ASSERT_TRUE(walker.ok());
  EXPECT_FALSE(walker->done());
  EXPECT_EQ(walker->bytes(), 8);
  walker->Next();
  EXPECT_TRUE(walker->done());
}

}  // namespace
}  // namespace distarray
