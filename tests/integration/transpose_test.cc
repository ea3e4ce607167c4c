// permute_dims of chunks large enough for the CUDA backend's tiled transpose (32x32 tiles through
// shared memory), on every backend: every element size the shape ops move (1, 2, 4, 8 and 16
// bytes), sizes that are not multiples of the tile, a batch axis in front, and a slice of a
// larger array; each result bit for bit against the host.
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"

namespace distarray::testing {
namespace {

class TransposeTest : public BackendTest {
 protected:
  template <typename T>
  void CheckType(v1::DType dtype);
};

template <typename T>
std::vector<T> RandomOf(size_t n, std::mt19937_64& rng) {
  std::vector<T> out(n);
  for (T& v : out) {
    if constexpr (std::is_same_v<T, std::complex<double>>) {
      v = T(static_cast<double>(rng() % 100000) / 7, static_cast<double>(rng() % 100000) / 3);
    } else if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(static_cast<double>(rng() % 1000000) / 17);
    } else {
      v = static_cast<T>(rng());
    }
  }
  return out;
}

// a of shape (batch, rows, cols) permuted by (0, 2, 1), in the host's C order.
template <typename T>
std::vector<T> SwapLastTwo(const std::vector<T>& a, int64_t batch, int64_t rows, int64_t cols) {
  std::vector<T> out(a.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        out[(b * cols + c) * rows + r] = a[(b * rows + r) * cols + c];
      }
    }
  }
  return out;
}

template <typename T>
void TransposeTest::CheckType(v1::DType dtype) {
  SCOPED_TRACE(DTypeStr(dtype));
  std::mt19937_64 rng(dtype + 900);
  {  // 2-D, rows over two devices: each device transposes its (35, 97) half.
    const int64_t rows = 70, cols = 97;
    const std::vector<T> a = RandomOf<T>(rows * cols, rng);
    ASSERT_OK_AND_ASSIGN(
        Array x, client().Upload<T>(a, {rows, cols}, {Split(2, 0, rows, {dev(0), dev(1)})}));
    ASSERT_OK_AND_ASSIGN(Array t, PermuteDims(x, {1, 0}));
    ASSERT_OK_AND_ASSIGN(std::vector<T> got, t.Download<T>());
    EXPECT_TRUE(got == SwapLastTwo(a, 1, rows, cols)) << "(70, 97).T";
  }
  {  // 3-D with a batch axis in front, split along the batch.
    const int64_t batch = 3, rows = 40, cols = 65;
    const std::vector<T> a = RandomOf<T>(batch * rows * cols, rng);
    ASSERT_OK_AND_ASSIGN(Array x, client().Upload<T>(a, {batch, rows, cols},
                                                     {Split(3, 0, batch, {dev(1), dev(0)})}));
    ASSERT_OK_AND_ASSIGN(Array t, PermuteDims(x, {0, 2, 1}));
    ASSERT_OK_AND_ASSIGN(std::vector<T> got, t.Download<T>());
    EXPECT_TRUE(got == SwapLastTwo(a, batch, rows, cols)) << "(3, 40, 65) permuted (0, 2, 1)";
  }
  {  // A slice, transposed: x[5:60, 3:90].T.
    const int64_t rows = 64, cols = 96;
    const std::vector<T> a = RandomOf<T>(rows * cols, rng);
    ASSERT_OK_AND_ASSIGN(Array x, client().Upload<T>(a, {rows, cols}, {OnDevice(2, dev(1))}));
    ASSERT_OK_AND_ASSIGN(
        Array window, GetItem(x, {Slice{.start = 5, .stop = 60}, Slice{.start = 3, .stop = 90}}));
    ASSERT_OK_AND_ASSIGN(Array t, PermuteDims(window, {1, 0}));
    ASSERT_OK_AND_ASSIGN(std::vector<T> got, t.Download<T>());
    std::vector<T> want;
    for (int64_t c = 3; c < 90; ++c) {
      for (int64_t r = 5; r < 60; ++r) want.push_back(a[r * cols + c]);
    }
    EXPECT_TRUE(got == want) << "x[5:60, 3:90].T";
  }
}

TEST_P(TransposeTest, LargeChunksTransposeBitForBit) {
  CheckType<int8_t>(v1::DTYPE_INT8);
  CheckType<uint16_t>(v1::DTYPE_UINT16);
  CheckType<float>(v1::DTYPE_FLOAT32);
  CheckType<double>(v1::DTYPE_FLOAT64);
  CheckType<std::complex<double>>(v1::DTYPE_COMPLEX128);
}

DISTARRAY_INSTANTIATE_BACKENDS(TransposeTest);

}  // namespace
}  // namespace distarray::testing
