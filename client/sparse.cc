// CSR matrices built on the client from COO triplets and uploaded as three arrays
// (distarray/sparse.h).
#include "distarray/sparse.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "distarray/index_maps.h"

namespace distarray {
namespace {

int64_t ValueSize(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return 4;
    case v1::DTYPE_FLOAT64:
    case v1::DTYPE_COMPLEX64:
      return 8;
    case v1::DTYPE_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

// values[to] += values[from], element of `dtype` (a real or complex float).
void AddInto(v1::DType dtype, char* to, const char* from) {
  auto add = [&](auto tag, int parts) {
    using R = decltype(tag);
    R a[2], b[2];
    std::memcpy(a, to, sizeof(R) * parts);
    std::memcpy(b, from, sizeof(R) * parts);
    for (int p = 0; p < parts; ++p) a[p] += b[p];
    std::memcpy(to, a, sizeof(R) * parts);
  };
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return add(float{}, 1);
    case v1::DTYPE_FLOAT64:
      return add(double{}, 1);
    case v1::DTYPE_COMPLEX64:
      return add(float{}, 2);
    default:
      return add(double{}, 2);
  }
}

// A 1-D layout of chunks laid end to end: chunk i of lengths[i] elements on devices[i].
v1::IndexMap EndToEnd(const std::vector<int>& devices, const std::vector<int64_t>& lengths) {
  std::vector<v1::Chunk> chunks;
  int64_t offset = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    chunks.push_back(MakeChunk(devices[i], {SliceSpec{offset, offset + lengths[i], 1}}));
    offset += lengths[i];
  }
  return MakeIndexMap(chunks);
}

absl::StatusOr<Array> UploadPart(const Client& client, const std::string& bytes, v1::DType dtype,
                                 const std::vector<int>& devices,
                                 const std::vector<int64_t>& lengths) {
  v1::UploadHeader header;
  v1::ArraySpec* spec = header.mutable_new_array();
  spec->mutable_shape()->add_dims(std::accumulate(lengths.begin(), lengths.end(), int64_t{0}));
  spec->set_dtype(dtype);
  *spec->mutable_index_map() = EndToEnd(devices, lengths);
  spec->set_mode(v1::MODE_REPLICA);
  absl::StatusOr<v1::ArrayInfo> info =
      client.UploadBytes(header, bytes.data(), static_cast<int64_t>(bytes.size()));
  if (!info.ok()) return info.status();
  return Array(client, *std::move(info), /*owned=*/true);
}

template <typename I>
void Append(std::string& out, I value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

}  // namespace

absl::StatusOr<CsrMatrix> CsrMatrix::FromCooBytes(const Client& client, int64_t m, int64_t n,
                                                  std::span<const int64_t> rows,
                                                  std::span<const int64_t> cols, const void* values,
                                                  int64_t value_count, v1::DType dtype,
                                                  const std::vector<int>& devices) {
  const int64_t size = ValueSize(dtype);
  if (size == 0) {
    return absl::InvalidArgumentError(
        "values: sparse values are float32, float64, complex64 or complex128");
  }
  if (m < 0 || n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape: (", m, ", ", n, ") has a negative axis"));
  }
  const auto count = static_cast<int64_t>(rows.size());
  if (static_cast<int64_t>(cols.size()) != count || value_count != count) {
    return absl::InvalidArgumentError(absl::StrCat("rows, cols, values: lengths ", rows.size(),
                                                   ", ", cols.size(), " and ", value_count,
                                                   " differ (one triplet per entry)"));
  }
  if (devices.empty()) return absl::InvalidArgumentError("devices: give at least one");
  for (int64_t i = 0; i < count; ++i) {
    if (rows[i] < 0 || rows[i] >= m) {
      return absl::InvalidArgumentError(
          absl::StrCat("rows[", i, "]: ", rows[i], " is out of range for ", m, " rows"));
    }
    if (cols[i] < 0 || cols[i] >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("cols[", i, "]: ", cols[i], " is out of range for ", n, " columns"));
    }
  }
  // Entries by (row, column), stable; equal positions are summed into the first.
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return rows[a] != rows[b] ? rows[a] < rows[b] : cols[a] < cols[b];
  });
  const char* in = static_cast<const char*>(values);
  std::vector<int64_t> entry_row, entry_col;
  std::string entry_values;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = order[k];
    if (!entry_row.empty() && entry_row.back() == rows[i] && entry_col.back() == cols[i]) {
      AddInto(dtype, entry_values.data() + (entry_row.size() - 1) * size, in + i * size);
      continue;
    }
    entry_row.push_back(rows[i]);
    entry_col.push_back(cols[i]);
    entry_values.append(in + i * size, size);
  }
  const auto nnz = static_cast<int64_t>(entry_row.size());
  const bool narrow = n <= std::numeric_limits<int32_t>::max();
  std::vector<int> block_devices;
  std::vector<int64_t> indptr_lengths, entry_lengths;
  std::string indptr_bytes, index_bytes, value_bytes;
  std::vector<v1::Chunk> blocks;
  if (m > 0 && n > 0) {
    const auto parts = static_cast<int64_t>(devices.size());
    int64_t first_row = 0, entry = 0;
    for (int64_t b = 0; b < parts; ++b) {
      const int64_t block_rows = m / parts + (b < m % parts ? 1 : 0);
      if (block_rows == 0) continue;
      const int64_t first_entry = entry;
      Append<int64_t>(indptr_bytes, 0);
      for (int64_t r = first_row; r < first_row + block_rows; ++r) {
        while (entry < nnz && entry_row[entry] == r) {
          if (narrow) {
            Append(index_bytes, static_cast<int32_t>(entry_col[entry]));
          } else {
            Append(index_bytes, entry_col[entry]);
          }
          value_bytes.append(entry_values, entry * size, size);
          ++entry;
        }
        Append<int64_t>(indptr_bytes, entry - first_entry);
      }
      int64_t stored = entry - first_entry;
      if (stored == 0) {  // a chunk is never empty: one unused entry
        if (narrow) {
          Append<int32_t>(index_bytes, 0);
        } else {
          Append<int64_t>(index_bytes, 0);
        }
        value_bytes.append(size, '\0');
        stored = 1;
      }
      block_devices.push_back(devices[b]);
      indptr_lengths.push_back(block_rows + 1);
      entry_lengths.push_back(stored);
      blocks.push_back(MakeChunk(
          devices[b], {SliceSpec{first_row, first_row + block_rows, 1}, SliceSpec{0, n, 1}}));
      first_row += block_rows;
    }
  }
  const v1::DType index_dtype = narrow ? v1::DTYPE_INT32 : v1::DTYPE_INT64;
  absl::StatusOr<Array> indptr =
      UploadPart(client, indptr_bytes, v1::DTYPE_INT64, block_devices, indptr_lengths);
  if (!indptr.ok()) return indptr.status();
  absl::StatusOr<Array> indices =
      UploadPart(client, index_bytes, index_dtype, block_devices, entry_lengths);
  if (!indices.ok()) return indices.status();
  absl::StatusOr<Array> data = UploadPart(client, value_bytes, dtype, block_devices, entry_lengths);
  if (!data.ok()) return data.status();
  return CsrMatrix(*std::move(indptr), *std::move(indices), *std::move(data), {m, n},
                   MakeIndexMap(blocks), nnz);
}

v1::CsrMatrix CsrMatrix::proto() const {
  v1::CsrMatrix matrix;
  *matrix.mutable_indptr() = indptr_.AsOperand();
  *matrix.mutable_indices() = indices_.AsOperand();
  *matrix.mutable_data() = data_.AsOperand();
  for (int64_t d : shape_) matrix.mutable_shape()->add_dims(d);
  *matrix.mutable_blocks() = blocks_;
  return matrix;
}

absl::StatusOr<CsrMatrix> CsrMatrix::Transpose() const {
  v1::SparseRequest request;
  *request.mutable_spec()->mutable_transpose() = proto();
  absl::StatusOr<std::vector<Array>> parts = data_.client().Sparse(request);
  if (!parts.ok()) return parts.status();
  if (parts->size() != 3) {
    return absl::InternalError(
        absl::StrCat("transpose: the daemon answered ", parts->size(), " arrays, not 3"));
  }
  v1::IndexMap blocks;
  for (const v1::Chunk& block : blocks_.chunks()) {
    v1::Chunk* t = blocks.add_chunks();
    t->set_device(block.device());
    *t->add_slices() = block.slices(1);
    *t->add_slices() = block.slices(0);
  }
  return CsrMatrix(std::move((*parts)[0]), std::move((*parts)[1]), std::move((*parts)[2]),
                   {shape_[1], shape_[0]}, std::move(blocks), nnz_);
}

absl::StatusOr<Array> CsrMatrix::ToDense() const {
  v1::SparseRequest request;
  *request.mutable_spec()->mutable_to_dense() = proto();
  absl::StatusOr<std::vector<Array>> dense = data_.client().Sparse(request);
  if (!dense.ok()) return dense.status();
  if (dense->size() != 1) {
    return absl::InternalError(
        absl::StrCat("to_dense: the daemon answered ", dense->size(), " arrays, not 1"));
  }
  return std::move(dense->front());
}

absl::StatusOr<Array> SparseMatmul(const CsrMatrix& a, const Array& b) {
  v1::MatmulRequest request;
  *request.mutable_spec()->mutable_sparse_a() = a.proto();
  *request.mutable_spec()->mutable_b() = b.AsOperand();
  return b.client().Matmul(request);
}

}  // namespace distarray
