// The host backend's CSR block products and densification (host_work.h): plain loops over the
// rows, reading offsets and columns through server/kernels/csr.h's guards.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/host/host_buffer.h"
#include "server/host/host_work.h"
#include "server/kernels/csr.h"

namespace distarray {
namespace {

// Calls fn(T{}, I{}) for the value type of `dtype` (float32, float64, complex64, complex128) and
// the index type of `index_dtype` (int32, int64); false for any other pair.
template <typename Fn>
bool DispatchCsr(DType dtype, DType index_dtype, Fn&& fn) {
  auto with_index = [&](auto value) {
    if (index_dtype == DType::kInt32) {
      fn(value, int32_t{});
    } else {
      fn(value, int64_t{});
    }
  };
  switch (dtype) {
    case DType::kFloat32:
      with_index(float{});
      return true;
    case DType::kFloat64:
      with_index(double{});
      return true;
    case DType::kComplex64:
      with_index(Complex64{});
      return true;
    case DType::kComplex128:
      with_index(Complex128{});
      return true;
    default:
      return false;
  }
}

template <typename T, typename I>
void CsrMatmulOnHost(const CsrProduct& p) {
  const int64_t* indptr = AsHost(p.indptr)->as<int64_t>();
  const I* indices = AsHost(p.indices)->as<I>();
  const T* data = AsHost(p.data)->as<T>();
  const T* x = AsHost(p.x)->as<T>();
  T* y = AsHost(p.y)->as<T>();
  for (int64_t row = 0; row < p.rows; ++row) {
    T* out = y + row * p.k;
    for (int64_t j = 0; j < p.k; ++j) out[j] = T(0);
    int64_t begin, end;
    csr::RowRange(indptr, row, p.capacity, &begin, &end);
    for (int64_t e = begin; e < end; ++e) {
      const int64_t column = csr::Column(indices[e], p.cols);
      if (column < 0) continue;
      const T* in = x + column * p.k;
      for (int64_t j = 0; j < p.k; ++j) out[j] = out[j] + data[e] * in[j];
    }
  }
}

template <typename T, typename I>
void CsrToDenseOnHost(const CsrProduct& p) {
  const int64_t* indptr = AsHost(p.indptr)->as<int64_t>();
  const I* indices = AsHost(p.indices)->as<I>();
  const T* data = AsHost(p.data)->as<T>();
  T* y = AsHost(p.y)->as<T>();
  for (int64_t i = 0; i < p.rows * p.cols; ++i) y[i] = T(0);
  for (int64_t row = 0; row < p.rows; ++row) {
    int64_t begin, end;
    csr::RowRange(indptr, row, p.capacity, &begin, &end);
    for (int64_t e = begin; e < end; ++e) {
      const int64_t column = csr::Column(indices[e], p.cols);
      if (column >= 0) y[row * p.cols + column] = y[row * p.cols + column] + data[e];
    }
  }
}

absl::StatusOr<HostWork> CsrWork(DType dtype, const CsrProduct& p, bool product) {
  const bool supported = dtype == DType::kFloat32 || dtype == DType::kFloat64 ||
                         dtype == DType::kComplex64 || dtype == DType::kComplex128;
  if (!supported || !CsrBlockFits(dtype, p, product)) {
    return absl::InternalError(absl::StrCat(product ? "csr matmul" : "csr to dense", ": no ",
                                            DTypeName(dtype), " block over these buffers"));
  }
  std::vector<HostBuffer*> reads = {AsHost(p.indptr).get(), AsHost(p.indices).get(),
                                    AsHost(p.data).get()};
  if (product) reads.push_back(AsHost(p.x).get());
  auto run = [dtype, p, product] {
    DispatchCsr(dtype, p.index_dtype, [&](auto value, auto index) {
      using T = decltype(value);
      using I = decltype(index);
      if (product) {
        CsrMatmulOnHost<T, I>(p);
      } else {
        CsrToDenseOnHost<T, I>(p);
      }
    });
  };
  return HostWork{p.y->device(), std::move(reads), {AsHost(p.y).get()}, std::move(run)};
}

}  // namespace

namespace host {

absl::StatusOr<HostWork> CsrMatmulWork(DType dtype, const CsrProduct& product) {
  return CsrWork(dtype, product, /*product=*/true);
}

absl::StatusOr<HostWork> CsrToDenseWork(DType dtype, const CsrProduct& block) {
  return CsrWork(dtype, block, /*product=*/false);
}

}  // namespace host
}  // namespace distarray
