// The CUDA backend's compute kernels on their own, without the daemon or an RPC: device time of
// the elementwise and reduction launchers on 1 GiB operands, each against the physical limit and
// the peer measured in the same run (a device-to-device copy, and CUB's DeviceReduce for
// reductions, which is what cupy.sum runs), and each result checked against a host reference in
// long double on random inputs. Prints one "key value" line per figure and a table.
//
//   kernel_bench [--elements=N]   (default 2^28: 1 GiB of float32)
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/device/device_reduce.cuh>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/device_timing.h"
#include "server/cuda/compute_kernels.h"
#include "tests/support/strided_views.h"

namespace distarray::cuda {
namespace {

using bench::MedianMs;

// Device memory of `count` T, freed on scope exit.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(int64_t count) : count_(count) {
    DA_BENCH_CHECK(cudaMalloc(&data_, std::max<int64_t>(1, count) * sizeof(T)));
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return data_; }
  int64_t bytes() const { return count_ * static_cast<int64_t>(sizeof(T)); }
  void Upload(const std::vector<T>& host) const {
    DA_BENCH_CHECK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  // bool comes back as uint8_t (std::vector<bool> is packed).
  using Host = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
  std::vector<Host> Download() const {
    std::vector<Host> host(count_);
    DA_BENCH_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  int64_t count_;
};

template <typename T>
std::vector<T> RandomValues(int64_t n, uint64_t seed, double low, double high) {
  std::vector<T> v(n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

struct Row {
  std::string name;
  double ms;
  double gbps;
  double limit_gbps;  // the same bytes at the limit's rate
  std::string peer;   // "" when the row has no peer
  double peer_ms;
  bool correct;
};

// Device-to-device copy rate, bytes read + written per second (the bound of a streaming kernel).
double CopyLimitGBps(int64_t bytes, cudaStream_t stream) {
  DeviceArray<char> a(bytes), b(bytes);
  DA_BENCH_CHECK(cudaMemset(a.get(), 1, bytes));
  const float ms = MedianMs(stream, [&](cudaStream_t s) {
    return cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s);
  });
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

DeviceArg Dense(const void* data) {
  DeviceArg arg;
  arg.data = data;
  return arg;
}

DeviceArg ScalarArg(double value) {
  DeviceArg arg;
  arg.scalar = Scalar::Float(value);
  return arg;
}

// A side x side matrix read through its transpose: the strided path.
DeviceArg Transposed(const void* data, int64_t side) {
  DeviceArg arg;
  arg.data = data;
  arg.contiguous = false;
  arg.view = testing::TransposedView(side, side);
  return arg;
}

// Elementwise `op` computing in `compute` on operands stored as `storage`, checked against
// `reference(i)` within 1 ulp of Out.
template <typename Out>
Row BenchElementwise(const std::string& name, ElementwiseOpId op, DType compute, DType storage,
                     std::vector<DeviceArg> args, int64_t n, int64_t bytes_moved, double copy_gbps,
                     const std::function<long double(int64_t)>& reference, int sm_count,
                     cudaStream_t stream) {
  DeviceArray<Out> out(n);
  const float ms = MedianMs(stream, [&](cudaStream_t s) {
    return LaunchElementwise(op, compute, storage, out.get(), n, args.data(),
                             static_cast<int>(args.size()), sm_count, s);
  });
  const auto got = out.Download();
  bool correct = true;
  for (int64_t i = 0; i < n && correct; ++i) {
    const long double want = reference(i);
    const long double tolerance =
        std::is_same_v<Out, bool>
            ? 0
            : std::fabs(want) * static_cast<long double>(std::numeric_limits<Out>::epsilon());
    if (std::fabs(static_cast<long double>(got[i]) - want) > tolerance) {
      std::fprintf(stderr, "%s: element %lld is %.9g, want %.9Lg\n", name.c_str(),
                   static_cast<long long>(i), static_cast<double>(got[i]), want);
      correct = false;
    }
  }
  return Row{name, ms, bytes_moved / (ms * 1e-3) / 1e9, copy_gbps, "", 0, correct};
}

int Main(int argc, char** argv) {
  int64_t n = int64_t{1} << 28;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--elements=", 11) == 0) {
      n = std::atoll(argv[i] + 11);
    } else {
      std::fprintf(stderr, "usage: kernel_bench [--elements=N]\n");
      return 2;
    }
  }
  const int64_t side = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  int sm_count = 0;
  DA_BENCH_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t stream;
  DA_BENCH_CHECK(cudaStreamCreate(&stream));
  cudaDeviceProp prop;
  DA_BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("kernel_device %s\nkernel_elements %lld\n", prop.name, static_cast<long long>(n));

  const double copy_gbps = CopyLimitGBps(n * 4, stream);
  std::printf("kernel_device_copy_GBps %.1f\n", copy_gbps);

  const std::vector<float> ha = RandomValues<float>(n, 1, 0.0, 1.0);
  const std::vector<float> hb = RandomValues<float>(n, 2, 0.0, 1.0);
  DeviceArray<float> a(n), b(n);
  a.Upload(ha);
  b.Upload(hb);
  std::vector<Row> rows;
  const int64_t f32 = n * 4;
  rows.push_back(BenchElementwise<float>(
      "add_f32", ElementwiseOpId::kAdd, DType::kFloat32, DType::kFloat32,
      {Dense(a.get()), Dense(b.get())}, n, 3 * f32, copy_gbps,
      [&](int64_t i) { return static_cast<float>(ha[i] + hb[i]); }, sm_count, stream));
  rows.push_back(BenchElementwise<float>(
      "multiply_f32_scalar", ElementwiseOpId::kMultiply, DType::kFloat32, DType::kFloat32,
      {Dense(a.get()), ScalarArg(2.5)}, n, 2 * f32, copy_gbps,
      [&](int64_t i) { return static_cast<float>(ha[i] * 2.5f); }, sm_count, stream));
  rows.push_back(BenchElementwise<bool>(
      "less_f32", ElementwiseOpId::kLess, DType::kFloat32, DType::kFloat32,
      {Dense(a.get()), Dense(b.get())}, n, 2 * f32 + n, copy_gbps,
      [&](int64_t i) { return ha[i] < hb[i] ? 1.0L : 0.0L; }, sm_count, stream));
  rows.push_back(BenchElementwise<float>(
      "add_f32_transposed", ElementwiseOpId::kAdd, DType::kFloat32, DType::kFloat32,
      {Transposed(a.get(), side), Dense(b.get())}, side * side, 3 * side * side * 4, copy_gbps,
      [&](int64_t i) {
        const int64_t r = i / side, c = i % side;
        return static_cast<float>(ha[c * side + r] + hb[i]);
      },
      sm_count, stream));
  {
    const std::vector<double> hd = RandomValues<double>(n / 2, 3, 0.0, 1.0);
    DeviceArray<double> d(n / 2);
    d.Upload(hd);
    rows.push_back(BenchElementwise<double>(
        "add_f64", ElementwiseOpId::kAdd, DType::kFloat64, DType::kFloat64,
        {Dense(d.get()), Dense(d.get())}, n / 2, 3 * f32, copy_gbps,
        [&](int64_t i) { return hd[i] + hd[i]; }, sm_count, stream));
  }
  // 16-bit floats: loaded, added in float32 and rounded once in the kernel (no cast passes).
  auto bench_half = [&](auto tag, const std::string& name, DType dtype) {
    using H = decltype(tag);
    std::vector<H> h16a(n), h16b(n);
    for (int64_t i = 0; i < n; ++i) {
      h16a[i] = H(ha[i]);
      h16b[i] = H(hb[i]);
    }
    DeviceArray<H> x(n), y(n);
    x.Upload(h16a);
    y.Upload(h16b);
    rows.push_back(BenchElementwise<H>(
        name, ElementwiseOpId::kAdd, DType::kFloat32, dtype, {Dense(x.get()), Dense(y.get())}, n,
        3 * n * 2, copy_gbps,
        [&](int64_t i) {
          return static_cast<float>(H(static_cast<float>(h16a[i]) + static_cast<float>(h16b[i])));
        },
        sm_count, stream));
    // The sum of one: 16-bit loads, float32 accumulation, one rounding of the result. Values
    // centred on 0, so that the sum of 2^28 of them stays within float16's range.
    for (int64_t i = 0; i < n; ++i) h16a[i] = H(ha[i] - 0.5f);
    x.Upload(h16a);
    DeviceArray<char> half_scratch(size_t{4} << 20);
    DA_BENCH_CHECK(cudaMemset(half_scratch.get(), 0, half_scratch.bytes()));
    DeviceArray<H> total(1);
    const ReduceGeometry all = testing::AllOf(n);
    const float ms = MedianMs(stream, [&](cudaStream_t s) {
      return LaunchReduce(ReduceKind::kSum, DType::kFloat32, dtype, x.get(), all, total.get(), 1.0,
                          nullptr, half_scratch.get(), half_scratch.bytes(), sm_count, s);
    });
    long double want = 0, magnitude = 0;
    for (int64_t i = 0; i < n; ++i) {
      want += static_cast<float>(h16a[i]);
      magnitude += std::fabs(static_cast<float>(h16a[i]));
    }
    const long double got = static_cast<float>(total.Download()[0]);
    const long double eps = static_cast<float>(std::numeric_limits<H>::epsilon());
    // The result's rounding, and float32 accumulation over 2^28 terms.
    const bool correct = std::fabs(got - want) <= std::fabs(want) * eps + 2e-6L * magnitude;
    if (!correct) {
      std::fprintf(stderr, "sum of %s: %.9Lg, want %.9Lg\n", DTypeName(dtype), got, want);
    }
    rows.push_back(
        Row{"sum_" + name.substr(4), ms, n * 2.0 / (ms * 1e-3) / 1e9, copy_gbps, "", 0, correct});
  };
  bench_half(Float16{}, "add_f16", DType::kFloat16);
  bench_half(BFloat16{}, "add_bf16", DType::kBFloat16);

  // complex64 and complex128 products and quotients (Smith's algorithm) over the same bytes as
  // the float32 rows: 2^27 complex64 or 2^26 complex128 elements per operand by default. Each
  // part must lie within a few units of the exact value's scale (|a| |b| for a product, |a| / |b|
  // for a quotient); kernel_bench's CuPy peer for these rows is cupy_complex.py.
  auto bench_complex = [&](auto tag, const std::string& suffix) {
    using C = decltype(tag);
    using R = typename C::Real;
    const int64_t count = n * 4 / static_cast<int64_t>(sizeof(C));
    const std::vector<R> parts = RandomValues<R>(4 * count, 4 + sizeof(C), -2.0, 2.0);
    std::vector<C> hx(count), hy(count);
    for (int64_t i = 0; i < count; ++i) {
      hx[i] = C(parts[4 * i], parts[4 * i + 1]);
      hy[i] = C(parts[4 * i + 2], parts[4 * i + 3]);
    }
    DeviceArray<C> x(count), y(count), z(count);
    x.Upload(hx);
    y.Upload(hy);
    const long double eps = std::numeric_limits<R>::epsilon();
    for (const ElementwiseOpId op : {ElementwiseOpId::kMultiply, ElementwiseOpId::kTrueDivide}) {
      const bool product = op == ElementwiseOpId::kMultiply;
      const DeviceArg args[] = {Dense(x.get()), Dense(y.get())};
      const float ms = MedianMs(stream, [&](cudaStream_t s) {
        return LaunchElementwise(op, DTypeFor<C>(), DTypeFor<C>(), z.get(), count, args, 2,
                                 sm_count, s);
      });
      const std::vector<C> got = z.Download();
      bool correct = true;
      for (int64_t i = 0; i < count && correct; ++i) {
        const std::complex<long double> a(hx[i].re, hx[i].im), b(hy[i].re, hy[i].im);
        const std::complex<long double> want = product ? a * b : a / b;
        const long double tol =
            product ? 4 * eps * std::abs(a) * std::abs(b) : 8 * eps * std::abs(a) / std::abs(b);
        correct =
            std::fabs(got[i].re - want.real()) <= tol && std::fabs(got[i].im - want.imag()) <= tol;
        if (!correct) {
          std::fprintf(stderr, "%s %s: element %lld is (%.9g, %.9g), want (%.9Lg, %.9Lg)\n",
                       product ? "multiply" : "divide", suffix.c_str(), static_cast<long long>(i),
                       static_cast<double>(got[i].re), static_cast<double>(got[i].im), want.real(),
                       want.imag());
        }
      }
      const double bytes = 3.0 * count * sizeof(C);
      rows.push_back(Row{(product ? "multiply_" : "divide_") + suffix, ms,
                         bytes / (ms * 1e-3) / 1e9, copy_gbps, "", 0, correct});
    }
    // exp, a transcendental function (expf/sincosf per element): normwise within 32 units of
    // the exact value's magnitude, checked on every 61st element (long double exp is slow here).
    const DeviceArg x_only[] = {Dense(x.get())};
    const float exp_ms = MedianMs(stream, [&](cudaStream_t s) {
      return LaunchElementwise(ElementwiseOpId::kExp, DTypeFor<C>(), DTypeFor<C>(), z.get(), count,
                               x_only, 1, sm_count, s);
    });
    const std::vector<C> exp_got = z.Download();
    bool exp_correct = true;
    for (int64_t i = 0; i < count && exp_correct; i += 61) {
      const std::complex<long double> want =
          std::exp(std::complex<long double>(hx[i].re, hx[i].im));
      const std::complex<long double> got(exp_got[i].re, exp_got[i].im);
      exp_correct = std::abs(got - want) <= 32 * eps * std::abs(want);
      if (!exp_correct) {
        std::fprintf(stderr, "exp %s: element %lld is (%.9Lg, %.9Lg), want (%.9Lg, %.9Lg)\n",
                     suffix.c_str(), static_cast<long long>(i), got.real(), got.imag(), want.real(),
                     want.imag());
      }
    }
    rows.push_back(Row{"exp_" + suffix, exp_ms, 2.0 * count * sizeof(C) / (exp_ms * 1e-3) / 1e9,
                       copy_gbps, "", 0, exp_correct});
  };
  bench_complex(Complex64{}, "c64");
  bench_complex(Complex128{}, "c128");

  // Reductions: sum over everything (against CUB's float sum), over rows and over columns.
  DeviceArray<char> scratch(size_t{4} << 20);
  DA_BENCH_CHECK(
      cudaMemset(scratch.get(), 0, scratch.bytes()));  // the reductions' tickets start at zero
  DeviceArray<float> out(side);
  auto bench_reduce = [&](const std::string& name, ReduceKind kind, const ReduceGeometry& g,
                          int64_t elements, const std::function<long double(int64_t)>& reference) {
    const float ms = MedianMs(stream, [&](cudaStream_t s) {
      return LaunchReduce(kind, DType::kFloat32, DType::kFloat32, a.get(), g, out.get(), 1.0,
                          nullptr, scratch.get(), scratch.bytes(), sm_count, s);
    });
    const std::vector<float> got = out.Download();
    bool correct = true;
    for (int64_t o = 0; o < g.outputs() && correct; ++o) {
      const long double want = reference(o);
      // The kernels sum floats in double: the float result is the reference, rounded.
      if (std::fabs(got[o] - want) > std::fabs(want) * 2 * FLT_EPSILON) {
        std::fprintf(stderr, "%s: output %lld is %.9g, want %.9Lg\n", name.c_str(),
                     static_cast<long long>(o), got[o], want);
        correct = false;
      }
    }
    return Row{name, ms, elements * 4.0 / (ms * 1e-3) / 1e9, copy_gbps, "", 0, correct};
  };
  {
    long double total = 0;
    float max = -1;
    for (int64_t i = 0; i < n; ++i) {
      total += ha[i];
      max = std::max(max, ha[i]);
    }
    Row sum = bench_reduce("sum_f32", ReduceKind::kSum, testing::AllOf(n), n,
                           [&](int64_t) { return total; });
    // CUB's sum in float (cupy.sum's algorithm) over the same input.
    size_t temp_bytes = 0;
    DA_BENCH_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, a.get(), out.get(), n, stream));
    DeviceArray<char> temp(temp_bytes);
    sum.peer = "cub_sum";
    sum.peer_ms = MedianMs(stream, [&](cudaStream_t s) {
      return cub::DeviceReduce::Sum(temp.get(), temp_bytes, a.get(), out.get(), n, s);
    });
    rows.push_back(sum);
    rows.push_back(bench_reduce("max_f32", ReduceKind::kMax, testing::AllOf(n), n,
                                [&](int64_t) { return max; }));
  }
  {
    std::vector<long double> row_sums(side, 0), column_sums(side, 0);
    for (int64_t r = 0; r < side; ++r) {
      for (int64_t c = 0; c < side; ++c) {
        row_sums[r] += ha[r * side + c];
        column_sums[c] += ha[r * side + c];
      }
    }
    rows.push_back(bench_reduce("sum_f32_axis1", ReduceKind::kSum,
                                testing::OverMatrixAxis(side, side, 1), side * side,
                                [&](int64_t o) { return row_sums[o]; }));
    rows.push_back(bench_reduce("sum_f32_axis0", ReduceKind::kSum,
                                testing::OverMatrixAxis(side, side, 0), side * side,
                                [&](int64_t o) { return column_sums[o]; }));
  }

  std::printf(
      "\n| kernel | device time | GB/s | of device-copy rate | peer | kernel/peer time | "
      "checked |\n|---|---|---|---|---|---|---|\n");
  bool all_correct = true;
  for (const Row& r : rows) {
    std::printf("kernel_%s_ms %.4f\nkernel_%s_GBps %.1f\n", r.name.c_str(), r.ms, r.name.c_str(),
                r.gbps);
    std::printf("| %s | %.3f ms | %.0f | %.2fx | %s | %s | %s |\n", r.name.c_str(), r.ms, r.gbps,
                r.gbps / r.limit_gbps, r.peer.empty() ? "-" : r.peer.c_str(),
                r.peer.empty() ? "-" : std::to_string(r.peer_ms / r.ms).c_str(),
                r.correct ? "yes" : "NO");
    all_correct = all_correct && r.correct;
  }
  DA_BENCH_CHECK(cudaStreamDestroy(stream));
  return all_correct ? 0 : 1;
}

}  // namespace
}  // namespace distarray::cuda

int main(int argc, char** argv) { return distarray::cuda::Main(argc, argv); }
