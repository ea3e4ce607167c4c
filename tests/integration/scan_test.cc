// Cumulative sums and products (ManipulationSpec.scan) through the SDK, against a host reference
// on fresh random data: every axis of 2-D and 3-D arrays over layouts whose chunks hold whole lines
// (no carries), split the scanned axis (carries between devices), grids whose blocks meet several
// earlier blocks, overlapping and gapped random layouts and an op-mode source; one long line split
// over every device; the dtype rules (bool and narrow integers widen, integers wrap); a scan inside
// a recorded loop; and the errors.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "distarray/graph.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

namespace g = distarray::graph;

// NumPy's cumsum/cumprod dtype (the daemon's ScanResultDType).
v1::DType ScanDType(v1::DType d) {
  switch (d) {
    case v1::DTYPE_BOOL:
    case v1::DTYPE_INT8:
    case v1::DTYPE_INT16:
    case v1::DTYPE_INT32:
      return v1::DTYPE_INT64;
    case v1::DTYPE_UINT8:
    case v1::DTYPE_UINT16:
    case v1::DTYPE_UINT32:
      return v1::DTYPE_UINT64;
    default:
      return d;
  }
}

struct ScanReference {
  HostArray out;
  std::vector<long double> abs_tol;
};

// The inclusive scan of every line along `axis`, in order: integers exactly, wrapping modulo
// 2^bits of the result dtype; floats in long double, each element allowed (i + 2) roundings of the
// result dtype times the magnitude of its terms, plus the subnormal spacing (the daemon combines
// partial sums in another order).
ScanReference RefScan(const HostArray& x, int axis, bool product) {
  const int rank = static_cast<int>(x.shape.size());
  if (axis < 0) axis += rank;
  const v1::DType out_dtype = ScanDType(x.dtype);
  const bool integer = !IsFloatDType(out_dtype);
  const long double unit = out_dtype == v1::DTYPE_FLOAT32   ? 0x1p-24L
                           : out_dtype == v1::DTYPE_FLOAT64 ? 0x1p-53L
                                                            : 0x1p-11L;  // float16
  // Products shrink into the subnormals, whose spacing is absolute.
  const long double subnormal = out_dtype == v1::DTYPE_FLOAT32   ? 0x1p-149L
                                : out_dtype == v1::DTYPE_FLOAT64 ? 0x1p-1074L
                                                                 : 0x1p-24L;
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  const int64_t length = x.shape[axis];
  const int64_t outer = length == 0 ? 0 : NumElements(x.shape) / (length * inner);
  ScanReference ref{HostArray{out_dtype, x.shape, x.values},
                    std::vector<long double>(x.values.size(), 0)};
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t n = 0; n < inner; ++n) {
      UInt128 wrapped = product ? 1 : 0;
      long double acc = product ? 1 : 0, magnitude = product ? 1 : 0;
      for (int64_t i = 0; i < length; ++i) {
        const int64_t at = (o * length + i) * inner + n;
        const long double v = x.values[at];
        if (integer) {
          wrapped = product ? wrapped * BitsOf(v) : wrapped + BitsOf(v);
          ref.out.values[at] = WrapInt(out_dtype, wrapped);
        } else {
          acc = product ? acc * v : acc + v;
          magnitude = product ? magnitude * std::fabs(v) : magnitude + std::fabs(v);
          ref.out.values[at] = acc;
          ref.abs_tol[at] = (i + 2) * (unit * magnitude + subnormal);
        }
      }
    }
  }
  return ref;
}

class ScanTest : public BackendTest {
 protected:
  struct Layout {
    std::string name;
    v1::IndexMap map;
    v1::Mode mode = v1::MODE_REPLICA;
  };

  std::vector<int> AllDevices() const { return {dev(0), dev(1), dev(2), dev(3)}; }

  std::vector<Layout> Layouts(const Shape& shape, std::mt19937_64& rng) const {
    const int rank = static_cast<int>(shape.size());
    const int64_t n = shape[0];
    std::vector<Layout> layouts = {
        {"rows", Split(rank, 0, n, {dev(0), dev(1)})},
        {"last axis", Split(rank, rank - 1, shape[rank - 1], {dev(0), dev(1), dev(2)})},
        {"overlapping",
         MakeIndexMap({Band(dev(0), rank, 0, 0, (2 * n + 2) / 3), Band(dev(1), rank, 0, n / 3, n),
                       Band(dev(2), rank, rank - 1, 0, shape[rank - 1] / 2)})},
        {"uneven", MakeIndexMap({Band(dev(1), rank, 0, 0, 1), Band(dev(0), rank, 0, 1, n - 2),
                                 Band(dev(2), rank, 0, n - 2, n)})},
        {"random", ToProto(RandomMap(shape, devices(), rng), shape)},
        {"sum mode", Split(rank, 0, n, {dev(0), dev(1)}), v1::MODE_SUM},
    };
    if (rank == 2) {
      // Blocks that each meet two earlier blocks along either axis.
      layouts.push_back({"grid", BlockGrid2D(shape[0], shape[1], 3, 2, AllDevices())});
    }
    return layouts;
  }

  // Scans `host` uploaded in `layout` along `axis` and checks values, dtype, mode and layout.
  void ExpectScan(const HostArray& host, const Layout& layout, int axis, bool product,
                  const std::string& what) {
    const std::string w = absl::StrCat(what, " ", Describe(host), " in ", layout.name, " axis ",
                                       axis, product ? " cumulative_prod" : " cumulative_sum");
    ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), host, layout.map, layout.mode));
    const HostArray logical =
        Logical(host, FromProto(a.info().index_map(), host.shape), layout.mode);
    const ScanReference ref = RefScan(logical, axis, product);
    absl::StatusOr<Array> s = product ? CumulativeProd(a, axis) : CumulativeSum(a, axis);
    ASSERT_TRUE(s.ok()) << w << ": " << s.status();
    EXPECT_EQ(s->info().mode(), v1::MODE_REPLICA) << w;
    ASSERT_OK_AND_ASSIGN(HostArray got, DownloadHost(*s));
    EXPECT_TRUE(ValuesMatch(got, ref.out, 0, &ref.abs_tol)) << w;
    ASSERT_OK_AND_ASSIGN(HostArray after, DownloadHost(a));
    EXPECT_TRUE(ValuesMatch(after, logical, 0)) << w << ": the source afterwards";
  }
};

TEST_P(ScanTest, EveryAxisOverLayoutsMatchesTheHost) {
  std::mt19937_64 rng(401);
  for (const Shape& shape : {Shape{9, 7}, Shape{5, 4, 6}}) {
    for (const Layout& layout : Layouts(shape, rng)) {
      for (v1::DType dtype : {v1::DTYPE_FLOAT64, v1::DTYPE_INT32, v1::DTYPE_FLOAT32}) {
        const HostArray host = RandomHost(
            dtype, shape, rng, {.float_lo = -1, .float_hi = 1, .int_lo = -50, .int_hi = 50});
        for (int axis = -static_cast<int>(shape.size()); axis < static_cast<int>(shape.size());
             ++axis) {
          ASSERT_NO_FATAL_FAILURE(ExpectScan(host, layout, axis, /*product=*/false, "sum"));
        }
      }
      // Products of factors near 1 (floats), and integers over their whole range (wrapping).
      const HostArray near_one =
          RandomHost(v1::DTYPE_FLOAT64, shape, rng, {.float_lo = 0.5, .float_hi = 1.5});
      ASSERT_NO_FATAL_FAILURE(ExpectScan(near_one, layout, 0, /*product=*/true, "prod"));
      const HostArray wide = RandomHost(v1::DTYPE_INT64, shape, rng);
      ASSERT_NO_FATAL_FAILURE(ExpectScan(wide, layout, 0, /*product=*/true, "prod"));
      ASSERT_NO_FATAL_FAILURE(ExpectScan(wide, layout, -1, /*product=*/false, "wrapping sum"));
    }
  }
}

// The dtypes NumPy widens (bool and narrow integers to int64 or uint64), wrapping integers at
// full range, and float16 (float32 arithmetic, rounded every step).
TEST_P(ScanTest, DTypesFollowNumPysRules) {
  std::mt19937_64 rng(402);
  const Shape shape = {6, 10};
  const Layout layout{"rows", Split(2, 0, 6, {dev(0), dev(1), dev(2)})};
  for (v1::DType dtype :
       {v1::DTYPE_BOOL, v1::DTYPE_INT8, v1::DTYPE_INT16, v1::DTYPE_UINT8, v1::DTYPE_UINT16,
        v1::DTYPE_UINT32, v1::DTYPE_UINT64, v1::DTYPE_INT64, v1::DTYPE_FLOAT16}) {
    const HostArray host = RandomHost(dtype, shape, rng, {.float_lo = -1, .float_hi = 1});
    for (bool product : {false, true}) {
      ASSERT_NO_FATAL_FAILURE(ExpectScan(host, layout, 0, product, "dtype"));
      ASSERT_NO_FATAL_FAILURE(ExpectScan(host, layout, 1, product, "dtype"));
    }
  }
}

// One line split over every device: each block's lines start from the totals of the blocks
// before it, on other devices. Lengths where blocks hold one element, and a long one.
TEST_P(ScanTest, OneLineSplitOverDevicesCarriesAcrossThem) {
  std::mt19937_64 rng(403);
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{100003}}) {
    const Layout split{"split", Split(1, 0, n, AllDevices())};
    const Layout reversed{"reversed devices", Split(1, 0, n, {dev(3), dev(2), dev(1), dev(0)})};
    for (const Layout& layout : {split, reversed}) {
      const HostArray f = RandomHost(v1::DTYPE_FLOAT64, {n}, rng, {.float_lo = -1, .float_hi = 1});
      ASSERT_NO_FATAL_FAILURE(ExpectScan(f, layout, 0, false, "one line"));
      const HostArray i = RandomHost(v1::DTYPE_INT64, {n}, rng);
      ASSERT_NO_FATAL_FAILURE(ExpectScan(i, layout, 0, false, "one line"));
      ASSERT_NO_FATAL_FAILURE(ExpectScan(i, layout, 0, true, "one line"));
    }
  }
  // More chunks than the carries pair (kMaxScanCarryChunks, 256): 300 one-element chunks over
  // the devices, scanned in the working layout and moved back to them.
  std::vector<int> many;
  for (int i = 0; i < 300; ++i) many.push_back(dev(i % 4));
  const Layout fine{"300 chunks", Split(1, 0, 300, many)};
  const HostArray x = RandomHost(v1::DTYPE_INT64, {300}, rng);
  ASSERT_NO_FATAL_FAILURE(ExpectScan(x, fine, 0, false, "one line"));
  // Zero-size arrays scan to zero-size arrays.
  ASSERT_OK_AND_ASSIGN(
      Array empty, UploadHost(client(), HostArray{v1::DTYPE_INT32, {0, 3}, {}}, MakeIndexMap({})));
  ASSERT_OK_AND_ASSIGN(Array scanned, CumulativeSum(empty, 1));
  EXPECT_EQ(scanned.shape(), (Shape{0, 3}));
  EXPECT_EQ(scanned.info().dtype(), v1::DTYPE_INT64);
}

// Lines long enough along a leading axis that the CUDA backend cuts them into segments (a scan
// of segment totals between), with carries from other chunks too; and many contiguous lines
// split along the axis (each line's carry folded into its first element).
TEST_P(ScanTest, LongLinesOverSplitLayouts) {
  std::mt19937_64 rng(405);
  for (const Shape& shape : {Shape{300, 3}, Shape{3, 257, 4}, Shape{6, 1000}}) {
    const int rank = static_cast<int>(shape.size());
    for (int axis = 0; axis < rank; ++axis) {
      const Layout layout{"split along the axis",
                          Split(rank, axis, shape[axis], {dev(0), dev(1), dev(2)})};
      const HostArray f =
          RandomHost(v1::DTYPE_FLOAT64, shape, rng, {.float_lo = -1, .float_hi = 1});
      ASSERT_NO_FATAL_FAILURE(ExpectScan(f, layout, axis, false, "long lines"));
      const HostArray i = RandomHost(v1::DTYPE_INT64, shape, rng);
      ASSERT_NO_FATAL_FAILURE(ExpectScan(i, layout, axis, true, "long lines"));
      const HostArray h = RandomHost(v1::DTYPE_FLOAT32, shape, rng, {.float_lo = 0, .float_hi = 1});
      ASSERT_NO_FATAL_FAILURE(ExpectScan(h, {"whole", OnDevice(rank, dev(1))}, axis, false,
                                         "long lines on one device"));
    }
  }
}

// A scan as a loop body: x = cumulative_sum(x) until an element reaches 1000 (the values become
// binomial coefficients), over a layout that carries between devices every iteration.
TEST_P(ScanTest, ScanInARecordedLoop) {
  const int64_t n = 40;
  const std::vector<int64_t> ones(n, 1);
  ASSERT_OK_AND_ASSIGN(
      Array a, client().Upload<int64_t>(ones, {n}, {Split(1, 0, n, {dev(0), dev(1), dev(2)})}));
  g::ProgramBuilder p;
  const g::Vars out =
      p.WhileLoop([](std::span<const g::Var> v) { return g::All(v[0] < 1000.0); },
                  [](std::span<const g::Var> v) { return g::Vars{g::CumulativeSum(v[0])}; },
                  {p.Input("x")}, 100);
  p.Output("x", out[0]);
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {{"x", &a}}));
  std::vector<int64_t> want = ones;
  auto below = [&] {
    for (int64_t v : want) {
      if (v >= 1000) return false;
    }
    return true;
  };
  while (below()) {
    for (int64_t i = 1; i < n; ++i) want[i] += want[i - 1];
  }
  EXPECT_EQ(*run.outputs.at("x").Download<int64_t>(), want);
}

TEST_P(ScanTest, BadRequestsNameTheField) {
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<float>(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3},
                                                       {Split(2, 0, 2, {dev(0), dev(1)})}));
  auto expect = [](const absl::Status& status, absl::StatusCode code, const std::string& field,
                   const std::string& what) {
    EXPECT_EQ(status.code(), code) << what << ": " << status;
    EXPECT_TRUE(absl::StrContains(status.message(), field)) << what << ": " << status;
  };
  expect(CumulativeSum(a, 2).status(), absl::StatusCode::kInvalidArgument, "spec.scan.axis",
         "axis 2 of a 2-d array");
  expect(CumulativeProd(a, -3).status(), absl::StatusCode::kInvalidArgument, "spec.scan.axis",
         "axis -3 of a 2-d array");
  ASSERT_OK_AND_ASSIGN(
      Array scalar,
      client().Upload<float>(std::vector<float>{1}, {}, {MakeIndexMap({MakeChunk(dev(0), {})})}));
  expect(CumulativeSum(scalar).status(), absl::StatusCode::kInvalidArgument, "spec.scan.source",
         "a 0-d array");
  v1::ManipulateRequest request;
  request.mutable_spec()->mutable_scan()->mutable_source()->set_handle("no-such-handle");
  expect(client().Manipulate(request).status(), absl::StatusCode::kNotFound, "spec.scan.source",
         "an unknown handle");
  request.mutable_spec()->mutable_scan()->clear_source();
  expect(client().Manipulate(request).status(), absl::StatusCode::kInvalidArgument,
         "spec.scan.source", "no source");
  // The daemon is up and the array intact.
  EXPECT_EQ(*a.Download<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

DISTARRAY_INSTANTIATE_BACKENDS(ScanTest);

}  // namespace
}  // namespace distarray::testing
