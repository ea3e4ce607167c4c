// Searching and set functions composed from the daemon's ops (distarray/search_functions.h).
#include "distarray/search_functions.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/function_args.h"
#include "common/dtype.h"
#include "distarray/array_functions.h"
#include "distarray/index_maps.h"
#include "distarray/indexing.h"

namespace distarray {
namespace {

// Positions per take: the daemon plans each run of an index array against each chunk it meets,
// within --max_chunks; scattered positions are a run each, so batches of this many stay well
// under it (the Python SDK's GATHER_BATCH).
constexpr int64_t kGatherBatch = 8192;
// The most arrays one concat takes (the daemon's bound on ConcatSpec.sources).
constexpr size_t kConcatSources = 1024;
// Positions a Repeat with counts held here lists in its requests, at most (the Python SDK lists
// them the same way; counts past this belong in the daemon).
constexpr int64_t kMaxListedRepeat = int64_t{1} << 26;

std::vector<int> DevicesOf(const Array& a) {
  std::vector<int> devices;
  for (const v1::Chunk& chunk : a.info().index_map().chunks()) devices.push_back(chunk.device());
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (devices.empty()) devices.push_back(0);
  return devices;
}

// `n` int64 values start, start + 1, ... split over `like`'s devices.
absl::StatusOr<Array> CountUp(const Array& like, int64_t n, int64_t start) {
  ArrayOptions options;
  if (n > 0) options.index_map = Split(1, 0, n, DevicesOf(like));
  return like.client().Create({n}, v1::DTYPE_INT64, options,
                              fills::Arange(static_cast<double>(start)));
}

// The running count of the 1-D bool `mask` (int64) and its last element, read back.
struct RunningCount {
  Array counts;
  int64_t total = 0;
};
absl::StatusOr<RunningCount> CountTrue(const Array& mask) {
  absl::StatusOr<Array> counts = CumulativeSum(mask, 0);  // bool scans to int64
  if (!counts.ok()) return counts.status();
  RunningCount out{*std::move(counts), 0};
  const int64_t length = mask.shape()[0];
  if (length == 0) return out;
  absl::StatusOr<Array> last = GetItem(out.counts, {Index(length - 1)});
  if (!last.ok()) return last.status();
  absl::StatusOr<std::vector<int64_t>> value = last->Download<int64_t>();
  if (!value.ok()) return value.status();
  out.total = value->at(0);
  return out;
}

// Where in the running count each rank 1, 2, ..., total first appears: the True positions.
absl::StatusOr<Array> TruePositions(const Array& mask, const RunningCount& count) {
  absl::StatusOr<Array> ranks = CountUp(mask, count.total, 1);
  if (!ranks.ok()) return ranks.status();
  return SearchSorted(count.counts, *ranks, /*right=*/false);
}

// x's elements at n positions along `axis`, taken in batches of kGatherBatch (`take(start, stop)`
// takes positions [start, stop)), each batch's pieces resharded to one per device of x before the
// batches are joined: scattered positions would otherwise leave one chunk per element.
absl::StatusOr<Array> GatherInBatches(
    const Array& x, int axis, int64_t n,
    const std::function<absl::StatusOr<Array>(int64_t, int64_t)>& take) {
  if (n <= kGatherBatch) return take(0, n);
  const std::vector<int> devices = DevicesOf(x);
  const int rank = static_cast<int>(x.shape().size());
  std::vector<Array> parts;
  for (int64_t start = 0; start < n; start += kGatherBatch) {
    absl::StatusOr<Array> part = take(start, std::min(n, start + kGatherBatch));
    if (!part.ok()) return part.status();
    if (part->info().index_map().chunks_size() > static_cast<int>(devices.size())) {
      absl::StatusOr<Array> compact =
          part->Reshard(Split(rank, axis, part->shape()[axis], devices), std::nullopt);
      if (!compact.ok()) return compact.status();
      part = std::move(compact);
    }
    parts.push_back(*std::move(part));
  }
  // A concat joins at most kConcatSources arrays: more parts are joined in groups, then the
  // groups (over 2^23 positions).
  while (parts.size() > 1) {
    std::vector<Array> joined;
    for (size_t start = 0; start < parts.size(); start += kConcatSources) {
      const size_t stop = std::min(parts.size(), start + kConcatSources);
      std::vector<Operand> operands(parts.begin() + start, parts.begin() + stop);
      absl::StatusOr<Array> group = Concat(operands, axis);
      if (!group.ok()) return group.status();
      joined.push_back(*std::move(group));
    }
    parts = std::move(joined);
  }
  return std::move(parts.front());
}

// Take(x, positions) along axis 0 for any number of positions held in the daemon.
absl::StatusOr<Array> Gather(const Array& x, const Array& positions) {
  return GatherInBatches(
      x, 0, positions.shape()[0], [&](int64_t start, int64_t stop) -> absl::StatusOr<Array> {
        if (start == 0 && stop == positions.shape()[0]) {
          return Take(x, positions, 0);
        }
        absl::StatusOr<Array> batch = GetItem(positions, {Slice{.start = start, .stop = stop}});
        if (!batch.ok()) return batch.status();
        return Take(x, *batch, 0);
      });
}

// True where a value starts in the sorted `s`: its first element and every one unequal to the
// element before it (each NaN).
absl::StatusOr<Array> Starts(const Array& s) {
  ArrayOptions first;
  first.index_map = Split(1, 0, 1, {DevicesOf(s).front()});
  absl::StatusOr<Array> head = s.client().Create({1}, v1::DTYPE_BOOL, first, fills::Ones());
  if (!head.ok() || s.shape()[0] == 1) return head;
  absl::StatusOr<Array> later = GetItem(s, {Slice{.start = 1}});
  if (!later.ok()) return later.status();
  absl::StatusOr<Array> earlier = GetItem(s, {Slice{.stop = -1}});
  if (!earlier.ok()) return earlier.status();
  absl::StatusOr<Array> differs = Ufunc(v1::ELEMENTWISE_OP_NOT_EQUAL, {*later, *earlier});
  if (!differs.ok()) return differs.status();
  return Concat({*head, *differs}, 0);
}

// The sorted flattening of `a` and the positions where its values start.
struct Groups {
  Array sorted;
  Array positions;
};
// The stable permutation that sorts the 1-D `flat`. Complex numbers have no order on the daemon:
// an argsort by imaginary part, then a stable one by real part, orders them as NumPy does (real
// part first) and makes equal numbers adjacent, as the Python SDK composes it. The imaginary part
// is composed, and NaN where the real part is infinite, so numbers of one infinite real part may
// come out as more than one value.
absl::StatusOr<Array> SortingOrder(const Array& flat) {
  if (!internal::IsComplexDType(flat.info().dtype())) return Argsort(flat, 0);
  absl::StatusOr<Array> imag = internal::ImagPart(flat);
  if (!imag.ok()) return imag.status();
  absl::StatusOr<Array> by_imag = Argsort(*imag, 0);
  if (!by_imag.ok()) return by_imag.status();
  absl::StatusOr<Array> real = internal::RealPart(flat);
  if (!real.ok()) return real.status();
  absl::StatusOr<Array> real_by_imag = Gather(*real, *by_imag);
  if (!real_by_imag.ok()) return real_by_imag.status();
  absl::StatusOr<Array> then_real = Argsort(*real_by_imag, 0);
  if (!then_real.ok()) return then_real.status();
  return Gather(*by_imag, *then_real);
}

// The starts' running count and positions in the sorted `sorted`.
struct StartsOf {
  RunningCount count;
  Array positions;
};
absl::StatusOr<StartsOf> StartsIn(const Array& sorted) {
  absl::StatusOr<Array> starts = Starts(sorted);
  if (!starts.ok()) return starts.status();
  absl::StatusOr<RunningCount> count = CountTrue(*starts);
  if (!count.ok()) return count.status();
  absl::StatusOr<Array> positions = TruePositions(*starts, *count);
  if (!positions.ok()) return positions.status();
  return StartsOf{*std::move(count), *std::move(positions)};
}

absl::StatusOr<Groups> GroupsOf(const Array& a) {
  absl::StatusOr<Array> flat = Reshape(a, {-1});
  if (!flat.ok()) return flat.status();
  absl::StatusOr<Array> sorted = absl::UnknownError("unsorted");
  if (internal::IsComplexDType(a.info().dtype())) {
    absl::StatusOr<Array> order = SortingOrder(*flat);
    if (!order.ok()) return order.status();
    sorted = Gather(*flat, *order);
  } else {
    sorted = Sort(*flat, 0);
  }
  if (!sorted.ok()) return sorted.status();
  absl::StatusOr<StartsOf> starts = StartsIn(*sorted);
  if (!starts.ok()) return starts.status();
  return Groups{*std::move(sorted), std::move(starts->positions)};
}

// Each value's count: the distance from its start to the next start (or to `n`, the end).
absl::StatusOr<Array> CountsOf(const Array& positions, int64_t n) {
  absl::StatusOr<Array> next = GetItem(positions, {Slice{.start = 1}});
  if (!next.ok()) return next.status();
  absl::StatusOr<Array> end = CountUp(positions, 1, n);
  if (!end.ok()) return end.status();
  absl::StatusOr<Array> bounds = Concat({*next, *end}, 0);
  if (!bounds.ok()) return bounds.status();
  return Ufunc(v1::ELEMENTWISE_OP_SUBTRACT, {*bounds, positions});
}

// What UniqueInverse and UniqueAll share: the stable order of the flattened `a`, its sorted
// values' starts, and each element's value number in a's shape.
struct Inverse {
  Array order;  // the stable argsort of the flattened a
  Array sorted;
  StartsOf starts;
  Array inverse_indices;
};
absl::StatusOr<Inverse> InverseOf(const Array& a) {
  absl::StatusOr<Array> flat = Reshape(a, {-1});
  if (!flat.ok()) return flat.status();
  absl::StatusOr<Array> order = SortingOrder(*flat);
  if (!order.ok()) return order.status();
  absl::StatusOr<Array> sorted = Gather(*flat, *order);
  if (!sorted.ok()) return sorted.status();
  absl::StatusOr<StartsOf> starts = StartsIn(*sorted);
  if (!starts.ok()) return starts.status();
  // The sorted element i holds value number counts[i] - 1; the element at order[i] is it.
  absl::StatusOr<Array> numbers = Ufunc(v1::ELEMENTWISE_OP_SUBTRACT, {starts->count.counts, 1});
  if (!numbers.ok()) return numbers.status();
  absl::StatusOr<Array> back = Argsort(*order, 0);
  if (!back.ok()) return back.status();
  absl::StatusOr<Array> placed = Gather(*numbers, *back);
  if (!placed.ok()) return placed.status();
  absl::StatusOr<Array> inverse = Reshape(*placed, a.shape());
  if (!inverse.ok()) return inverse.status();
  return Inverse{*std::move(order), *std::move(sorted), *std::move(starts), *std::move(inverse)};
}

// An empty int64 array of `shape` on a's devices.
absl::StatusOr<Array> EmptyIndices(const Array& a, const std::vector<int64_t>& shape) {
  return a.client().Create(shape, v1::DTYPE_INT64, {});
}

}  // namespace

absl::StatusOr<std::vector<Array>> Nonzero(const Array& a) {
  const std::vector<int64_t> shape = a.shape();
  if (shape.empty()) {
    return absl::InvalidArgumentError(
        "a: Nonzero of a 0-d array (the array API leaves 0-d inputs out; reshape it to (1,))");
  }
  absl::StatusOr<Array> flat = Reshape(a, {-1});
  if (!flat.ok()) return flat.status();
  absl::StatusOr<Array> mask =
      a.info().dtype() == v1::DTYPE_BOOL ? std::move(flat) : AsType(*flat, v1::DTYPE_BOOL);
  if (!mask.ok()) return mask.status();
  absl::StatusOr<RunningCount> count = CountTrue(*mask);
  if (!count.ok()) return count.status();
  absl::StatusOr<Array> positions = TruePositions(*mask, *count);
  if (!positions.ok()) return positions.status();
  // Flat C-order positions as one index per axis: (p % (stride * length)) / stride.
  std::vector<Array> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t stride = 1;  // elements per step of axis d (a product of the later axes)
    for (size_t e = d + 1; e < shape.size(); ++e) stride *= shape[e];
    // Axis 0, and every axis of an empty result (whose strides may be 0), is a copy: each axis
    // its own array.
    const bool copy = d == 0 || count->total == 0;
    absl::StatusOr<Array> index =
        copy ? AsType(*positions, v1::DTYPE_INT64)
             : Ufunc(v1::ELEMENTWISE_OP_REMAINDER, {*positions, stride * shape[d]});
    if (index.ok() && stride != 1 && count->total > 0) {
      index = Ufunc(v1::ELEMENTWISE_OP_FLOOR_DIVIDE, {*index, stride});
    }
    if (!index.ok()) return index.status();
    out.push_back(*std::move(index));
  }
  return out;
}

absl::StatusOr<Array> MaskedGet(const Array& a, const Array& mask) {
  if (mask.info().dtype() != v1::DTYPE_BOOL) {
    return absl::InvalidArgumentError(absl::StrCat("mask: MaskedGet takes a bool mask, not ",
                                                   v1::DType_Name(mask.info().dtype()),
                                                   " (an integer index array is Take's)"));
  }
  if (mask.shape() != a.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mask: shape ", internal::ShapeText(mask.shape()), " differs from a's ",
                     internal::ShapeText(a.shape())));
  }
  absl::StatusOr<Array> flat = Reshape(a, {-1});
  if (!flat.ok()) return flat.status();
  absl::StatusOr<Array> flat_mask = Reshape(mask, {-1});
  if (!flat_mask.ok()) return flat_mask.status();
  absl::StatusOr<RunningCount> count = CountTrue(*flat_mask);
  if (!count.ok()) return count.status();
  absl::StatusOr<Array> positions = TruePositions(*flat_mask, *count);
  if (!positions.ok()) return positions.status();
  return Gather(*flat, *positions);
}

absl::StatusOr<Array> UniqueValues(const Array& a) {
  absl::StatusOr<Array> flat = Reshape(a, {-1});
  if (!flat.ok() || flat->shape()[0] == 0) return flat;
  absl::StatusOr<Groups> groups = GroupsOf(a);
  if (!groups.ok()) return groups.status();
  return Gather(groups->sorted, groups->positions);
}

absl::StatusOr<UniqueCountsResult> UniqueCounts(const Array& a) {
  absl::StatusOr<Array> flat = Reshape(a, {-1});
  if (!flat.ok()) return flat.status();
  const int64_t n = flat->shape()[0];
  if (n == 0) {
    absl::StatusOr<Array> counts = a.client().Create({0}, v1::DTYPE_INT64, {});
    if (!counts.ok()) return counts.status();
    return UniqueCountsResult{*std::move(flat), *std::move(counts)};
  }
  absl::StatusOr<Groups> groups = GroupsOf(a);
  if (!groups.ok()) return groups.status();
  absl::StatusOr<Array> values = Gather(groups->sorted, groups->positions);
  if (!values.ok()) return values.status();
  absl::StatusOr<Array> counts = CountsOf(groups->positions, n);
  if (!counts.ok()) return counts.status();
  return UniqueCountsResult{*std::move(values), *std::move(counts)};
}

absl::StatusOr<UniqueInverseResult> UniqueInverse(const Array& a) {
  absl::StatusOr<Array> flat = Reshape(a, {-1});
  if (!flat.ok()) return flat.status();
  if (flat->shape()[0] == 0) {
    absl::StatusOr<Array> inverse = EmptyIndices(a, a.shape());
    if (!inverse.ok()) return inverse.status();
    return UniqueInverseResult{*std::move(flat), *std::move(inverse)};
  }
  absl::StatusOr<Inverse> inverse = InverseOf(a);
  if (!inverse.ok()) return inverse.status();
  absl::StatusOr<Array> values = Gather(inverse->sorted, inverse->starts.positions);
  if (!values.ok()) return values.status();
  return UniqueInverseResult{*std::move(values), std::move(inverse->inverse_indices)};
}

absl::StatusOr<UniqueAllResult> UniqueAll(const Array& a) {
  absl::StatusOr<Array> flat = Reshape(a, {-1});
  if (!flat.ok()) return flat.status();
  const int64_t n = flat->shape()[0];
  if (n == 0) {
    absl::StatusOr<Array> indices = EmptyIndices(a, {0});
    absl::StatusOr<Array> inverse = EmptyIndices(a, a.shape());
    absl::StatusOr<Array> counts = EmptyIndices(a, {0});
    for (const absl::StatusOr<Array>* made : {&indices, &inverse, &counts}) {
      if (!made->ok()) return made->status();
    }
    return UniqueAllResult{*std::move(flat), *std::move(indices), *std::move(inverse),
                           *std::move(counts)};
  }
  absl::StatusOr<Inverse> inverse = InverseOf(a);
  if (!inverse.ok()) return inverse.status();
  absl::StatusOr<Array> values = Gather(inverse->sorted, inverse->starts.positions);
  if (!values.ok()) return values.status();
  // Stable: a value's first sorted element is its first occurrence.
  absl::StatusOr<Array> indices = Gather(inverse->order, inverse->starts.positions);
  if (!indices.ok()) return indices.status();
  absl::StatusOr<Array> counts = CountsOf(inverse->starts.positions, n);
  if (!counts.ok()) return counts.status();
  return UniqueAllResult{*std::move(values), *std::move(indices),
                         std::move(inverse->inverse_indices), *std::move(counts)};
}

namespace {

absl::Status CheckMask(const Array& a, const Array& mask) {
  if (mask.info().dtype() != v1::DTYPE_BOOL) {
    return absl::InvalidArgumentError(absl::StrCat("mask: MaskedSet takes a bool mask, not ",
                                                   v1::DType_Name(mask.info().dtype())));
  }
  if (mask.shape() != a.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mask: shape ", internal::ShapeText(mask.shape()), " differs from a's ",
                     internal::ShapeText(a.shape())));
  }
  return absl::OkStatus();
}

// a = where(mask, v, a), in place.
absl::Status WriteWhere(Array& a, const Array& mask, const Operand& v) {
  absl::StatusOr<Array> written = Ufunc(v1::ELEMENTWISE_OP_WHERE, {mask, v, a});
  if (!written.ok()) return written.status();
  return a.SetItem({Ellipsis()}, *written);
}

}  // namespace

absl::Status MaskedSet(Array& a, const Array& mask, const Operand& scalar) {
  if (absl::Status s = CheckMask(a, mask); !s.ok()) return s;
  return WriteWhere(a, mask, scalar);
}

absl::Status MaskedSet(Array& a, const Array& mask, const Array& value) {
  if (absl::Status s = CheckMask(a, mask); !s.ok()) return s;
  const std::vector<int64_t> shape = value.shape();
  if (shape.empty()) return WriteWhere(a, mask, value);
  if (shape.size() == 1 && shape[0] == 1) {
    absl::StatusOr<Array> one = Reshape(value, {});
    if (!one.ok()) return one.status();
    return WriteWhere(a, mask, *one);
  }
  // One value per selected element: the i-th selected position takes value[c[i] - 1], c being
  // the mask's running count.
  absl::StatusOr<Array> flat_mask = Reshape(mask, {-1});
  if (!flat_mask.ok()) return flat_mask.status();
  absl::StatusOr<RunningCount> count = CountTrue(*flat_mask);
  if (!count.ok()) return count.status();
  if (shape.size() != 1 || shape[0] != count->total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value: shape ", internal::ShapeText(shape),
        " is neither one element nor one per selected element (", count->total, " selected)"));
  }
  if (count->total == 0) return absl::OkStatus();
  absl::StatusOr<Array> rank = Ufunc(v1::ELEMENTWISE_OP_SUBTRACT, {count->counts, 1});
  if (rank.ok()) rank = Ufunc(v1::ELEMENTWISE_OP_MAXIMUM, {*rank, 0});
  if (!rank.ok()) return rank.status();
  absl::StatusOr<Array> spread = Gather(value, *rank);
  if (spread.ok()) spread = Reshape(*spread, a.shape());
  if (!spread.ok()) return spread.status();
  return WriteWhere(a, mask, *spread);
}

absl::StatusOr<Array> Repeat(const Array& a, const std::vector<int64_t>& counts, int32_t axis) {
  absl::StatusOr<int> d = internal::AxisOf(axis, a.shape().size(), "axis");
  if (!d.ok()) return d.status();
  const int64_t n = a.shape()[*d];
  if (counts.size() == 1) return Repeat(a, counts[0], axis);  // one count for every element
  if (static_cast<int64_t>(counts.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat("repeats: ", counts.size(),
                                                   " counts for an axis of length ", n,
                                                   " (give one count, or ", n, ")"));
  }
  // ends[i]: the result's positions up to element i's last copy (element i fills
  // [ends[i] - counts[i], ends[i])).
  std::vector<int64_t> ends(counts.size());
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("repeats: repeats[", i, "] is ", counts[i], "; counts must be >= 0"));
    }
    if (counts[i] > kMaxListedRepeat - total) {
      return absl::InvalidArgumentError(
          absl::StrCat("repeats: the counts add up to more than ", kMaxListedRepeat,
                       " positions; hold them in the daemon (Repeat with an Array of counts)"));
    }
    total += counts[i];
    ends[i] = total;
  }
  std::vector<Index> key(a.shape().size(), Index(Slice{}));
  if (total == 0) {
    key[*d] = Slice{.start = 0, .stop = 0};
    return GetItem(a, key);
  }
  // Each batch lists its own positions (all of them at once would be up to 512 MiB here).
  return GatherInBatches(a, *d, total, [&](int64_t start, int64_t stop) {
    Positions listed;
    listed.values.reserve(stop - start);
    size_t i = std::upper_bound(ends.begin(), ends.end(), start) - ends.begin();
    for (int64_t j = start; j < stop; ++j) {
      while (ends[i] <= j) ++i;
      listed.values.push_back(static_cast<int64_t>(i));
    }
    std::vector<Index> batch = key;
    batch[*d] = std::move(listed);
    return GetItem(a, batch);
  });
}

absl::StatusOr<Array> Repeat(const Array& a, const Array& counts, int32_t axis) {
  absl::StatusOr<int> d = internal::AxisOf(axis, a.shape().size(), "axis");
  if (!d.ok()) return d.status();
  const int64_t n = a.shape()[*d];
  const std::vector<int64_t> counts_shape = counts.shape();
  const v1::DType counts_dtype = counts.info().dtype();
  const DType kind = static_cast<DType>(counts_dtype);  // the enums share values (ToProto)
  if (!IsSignedInteger(kind) && !IsUnsignedInteger(kind) && kind != DType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat(
        "repeats: counts must be integers or bools, not ", v1::DType_Name(counts_dtype)));
  }
  const bool one_count =
      counts_shape.empty() || (counts_shape.size() == 1 && counts_shape[0] == 1 && n != 1);
  if (!one_count && (counts_shape.size() != 1 || counts_shape[0] != n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats: counts of shape ", internal::ShapeText(counts_shape),
                     " for an axis of length ", n, " (give one count, or ", n, ")"));
  }
  // No counts at all (an empty axis): nothing to repeat, nothing to check.
  if (!one_count && n == 0) {
    return GetItem(a, std::vector<Index>(a.shape().size(), Index(Slice{})));
  }
  absl::StatusOr<Array> wide = AsType(counts, v1::DTYPE_INT64);
  if (!wide.ok()) return wide.status();
  // The total (the result's length), the smallest and the largest count, read back in one
  // download.
  std::vector<Array> parts;  // owned here until the concat has read them
  for (v1::ReduceOp op : {v1::REDUCE_OP_SUM, v1::REDUCE_OP_MIN, v1::REDUCE_OP_MAX}) {
    absl::StatusOr<Array> part = Reduce(*wide, op, {}, false, true);
    if (part.ok()) part = Reshape(*part, {1});
    if (!part.ok()) return part.status();
    parts.push_back(*std::move(part));
  }
  absl::StatusOr<Array> joined = Concat(std::vector<Operand>(parts.begin(), parts.end()), 0);
  if (!joined.ok()) return joined.status();
  absl::StatusOr<std::vector<int64_t>> read = joined->Download<int64_t>();
  if (!read.ok()) return read.status();
  if ((*read)[1] < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats: a count is ", (*read)[1],
                     "; counts must be >= 0 (unsigned counts of 2^63 or more read as negative)"));
  }
  // The device sum wraps past int64: refuse any total that could have.
  const int64_t elements = one_count ? 1 : n;
  if ((*read)[2] > 0 && elements > std::numeric_limits<int64_t>::max() / (*read)[2]) {
    return absl::InvalidArgumentError(absl::StrCat("repeats: ", elements, " counts of up to ",
                                                   (*read)[2],
                                                   " may add up to more than 2^63 - 1 elements"));
  }
  if (one_count) return Repeat(a, (*read)[1], axis);
  const int64_t length = (*read)[0];
  if (length == 0) {
    std::vector<Index> key(a.shape().size(), Index(Slice{}));
    key[*d] = Slice{.start = 0, .stop = 0};
    return GetItem(a, key);
  }
  // Position j of the result takes the first element whose running count exceeds j.
  absl::StatusOr<Array> ends = CumulativeSum(*wide, 0);
  if (!ends.ok()) return ends.status();
  absl::StatusOr<Array> targets = CountUp(a, length, 0);
  if (!targets.ok()) return targets.status();
  absl::StatusOr<Array> source = SearchSorted(*ends, *targets, /*right=*/true);
  if (!source.ok()) return source.status();
  return GatherInBatches(a, *d, length, [&](int64_t start, int64_t stop) -> absl::StatusOr<Array> {
    if (start == 0 && stop == length) return Take(a, *source, *d);
    absl::StatusOr<Array> batch = GetItem(*source, {Slice{.start = start, .stop = stop}});
    if (!batch.ok()) return batch.status();
    return Take(a, *batch, *d);
  });
}

}  // namespace distarray
