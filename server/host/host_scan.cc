// The host backend's scan (host_work.h): each line in order, in ApplyCombine's arithmetic, the
// same element-level operation the CUDA kernels use.
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/host/host_buffer.h"
#include "server/host/host_work.h"
#include "server/kernels/ops.h"

namespace distarray {
namespace {

template <typename T>
void ScanOnHost(const ScanLines& scan) {
  const T* in = AsHost(scan.in)->as<T>();
  T* out = AsHost(scan.out)->as<T>();
  const T* carry = scan.carry ? AsHost(scan.carry)->as<T>() : nullptr;
  const Combine combine = scan.product ? Combine::kMultiply : Combine::kAdd;
  // All inner lines of one outer index advance together: the inner loop streams over memory.
  std::vector<T> acc(scan.inner);
  for (int64_t o = 0; o < scan.outer; ++o) {
    const int64_t base = o * scan.length * scan.inner;
    for (int64_t n = 0; n < scan.inner; ++n) {
      acc[n] = carry ? carry[o * scan.inner + n] : T(scan.product ? 1 : 0);
    }
    for (int64_t i = 0; i < scan.length; ++i) {
      const int64_t row = base + i * scan.inner;
      for (int64_t n = 0; n < scan.inner; ++n) {
        acc[n] = ApplyCombine(combine, acc[n], in[row + n]);
        out[row + n] = acc[n];
      }
    }
  }
}

}  // namespace

namespace host {

absl::StatusOr<HostWork> ScanWork(DType dtype, const ScanLines& scan) {
  if (!IsImplemented(dtype) || dtype == DType::kBool || !ScanLinesFit(dtype, scan)) {
    return absl::InternalError(
        absl::StrCat("scan: no scan of ", DTypeName(dtype), " over these buffers"));
  }
  std::vector<HostBuffer*> reads;
  if (scan.in != scan.out) reads.push_back(AsHost(scan.in).get());
  if (scan.carry) reads.push_back(AsHost(scan.carry).get());
  auto work = [dtype, scan] {
    DispatchStorageDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) ScanOnHost<T>(scan);
    });
  };
  return HostWork{scan.out->device(), std::move(reads), {AsHost(scan.out).get()}, std::move(work)};
}

}  // namespace host
}  // namespace distarray
