// The host backend's sort and merge (host_work.h): the order of server/kernels/sort_keys.h, as
// the GPUs use it, with std::stable_sort over codes.
#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/host/host_buffer.h"
#include "server/host/host_work.h"
#include "server/kernels/sort_keys.h"

namespace distarray {
namespace {

template <typename U>
void SortOnHost(const SortKeyCodec& codec, const SortRuns& sort) {
  const U* in = AsHost(sort.keys_in)->as<U>();
  U* out = sort.keys_out ? AsHost(sort.keys_out)->as<U>() : nullptr;
  int64_t* indices = sort.indices_out ? AsHost(sort.indices_out)->as<int64_t>() : nullptr;
  std::vector<U> codes(sort.length);
  std::vector<int64_t> order(sort.length);
  for (int64_t line = 0; line < sort.lines; ++line) {
    const int64_t first = line * sort.length;
    for (int64_t i = 0; i < sort.length; ++i)
      codes[i] = codec.Encode(in[first + i], sort.descending);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return codes[a] < codes[b]; });
    for (int64_t i = 0; i < sort.length; ++i) {
      if (out) out[first + i] = codec.Decode(codes[order[i]], sort.descending);
      if (indices) indices[first + i] = order[i] + sort.index_base;
    }
  }
}

template <typename U>
void MergeOnHost(const SortKeyCodec& codec, const MergeRuns& merge) {
  const U* a = AsHost(merge.a_keys)->as<U>();
  const U* b = AsHost(merge.b_keys)->as<U>();
  U* out = AsHost(merge.out_keys)->as<U>();
  const bool indices = merge.out_indices != nullptr;
  const int64_t* ai = indices ? AsHost(merge.a_indices)->as<int64_t>() : nullptr;
  const int64_t* bi = indices ? AsHost(merge.b_indices)->as<int64_t>() : nullptr;
  int64_t* oi = indices ? AsHost(merge.out_indices)->as<int64_t>() : nullptr;
  int64_t i = 0, j = 0, k = 0;
  auto take = [&](const U* keys, const int64_t* positions, int64_t& at) {
    out[k] = keys[at];
    if (indices) oi[k] = positions[at];
    ++k, ++at;
  };
  while (i < merge.a_count && j < merge.b_count) {
    const U ca = codec.Encode(a[i], merge.descending);
    const U cb = codec.Encode(b[j], merge.descending);
    // Equal keys: a's first, or the smaller index where the runs carry them.
    const bool b_first = cb < ca || (indices && cb == ca && bi[j] < ai[i]);
    if (b_first) {
      take(b, bi, j);
    } else {
      take(a, ai, i);
    }
  }
  while (i < merge.a_count) take(a, ai, i);
  while (j < merge.b_count) take(b, bi, j);
}

template <typename U>
void SearchOnHost(const SortKeyCodec& codec, const SearchRuns& search) {
  const U* sorted = AsHost(search.sorted)->as<U>();
  const U* values = AsHost(search.values)->as<U>();
  int64_t* out = AsHost(search.out)->as<int64_t>();
  for (int64_t i = 0; i < search.count; ++i) {
    out[i] = InsertionPosition(codec, sorted, search.sorted_count, values[i], search.right);
  }
}

}  // namespace

namespace host {

absl::StatusOr<HostWork> SortWork(DType dtype, const SortRuns& sort) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype, sort.zeros_equal);
  if (codec.bytes == 0 || !SortRunsFit(dtype, sort)) {
    return absl::InternalError(
        absl::StrCat("sort: no sort of ", DTypeName(dtype), " over these buffers"));
  }
  std::vector<HostBuffer*> writes;
  if (sort.keys_out) writes.push_back(AsHost(sort.keys_out).get());
  if (sort.indices_out) writes.push_back(AsHost(sort.indices_out).get());
  auto work = [codec, sort] {
    DispatchSortWidth(codec.bytes, [&](auto tag) { SortOnHost<decltype(tag)>(codec, sort); });
  };
  return HostWork{
      sort.keys_in->device(), {AsHost(sort.keys_in).get()}, std::move(writes), std::move(work)};
}

absl::StatusOr<HostWork> MergeWork(DType dtype, const MergeRuns& merge) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype, merge.zeros_equal);
  if (codec.bytes == 0 || !MergeRunsFit(dtype, merge)) {
    return absl::InternalError(
        absl::StrCat("merge: no merge of ", DTypeName(dtype), " over these buffers"));
  }
  std::vector<HostBuffer*> reads = {AsHost(merge.a_keys).get(), AsHost(merge.b_keys).get()};
  std::vector<HostBuffer*> writes = {AsHost(merge.out_keys).get()};
  if (merge.out_indices) {
    reads.push_back(AsHost(merge.a_indices).get());
    reads.push_back(AsHost(merge.b_indices).get());
    writes.push_back(AsHost(merge.out_indices).get());
  }
  auto work = [codec, merge] {
    DispatchSortWidth(codec.bytes, [&](auto tag) { MergeOnHost<decltype(tag)>(codec, merge); });
  };
  return HostWork{merge.out_keys->device(), std::move(reads), std::move(writes), std::move(work)};
}

absl::StatusOr<HostWork> SearchSortedWork(DType dtype, const SearchRuns& search) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype, /*zeros_equal=*/true);
  if (codec.bytes == 0 || !SearchRunsFit(dtype, search)) {
    return absl::InternalError(
        absl::StrCat("searchsorted: no search of ", DTypeName(dtype), " over these buffers"));
  }
  auto work = [codec, search] {
    DispatchSortWidth(codec.bytes, [&](auto tag) { SearchOnHost<decltype(tag)>(codec, search); });
  };
  return HostWork{search.out->device(),
                  {AsHost(search.sorted).get(), AsHost(search.values).get()},
                  {AsHost(search.out).get()},
                  std::move(work)};
}

}  // namespace host
}  // namespace distarray
