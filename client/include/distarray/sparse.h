// Sparse matrices on the daemon (v1::CsrMatrix; docs/api.md, "Sparse matrices"): CSR blocks held
// as three 1-D arrays. The client builds a matrix's CSR from COO triplets (duplicates summed,
// entries in any order) and uploads it, its rows split over devices, one block per device; the
// products run on the devices (SparseMatmul, or MatmulOpSpec.sparse_a in programs).
#ifndef DISTARRAY_CLIENT_SPARSE_H_
#define DISTARRAY_CLIENT_SPARSE_H_

#include <complex>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "distarray/client.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

class CsrMatrix {
 public:
  // The m x n matrix of the triplets (rows[i], cols[i], values[i]), duplicates summed, its rows
  // split into near-equal contiguous blocks over `devices` (a device that would get no row gets
  // no block). INVALID_ARGUMENT for triplets of different lengths or an index out of range,
  // naming it. T: float, double, std::complex<float> or std::complex<double>.
  template <typename T>
  static absl::StatusOr<CsrMatrix> FromCoo(const Client& client, int64_t m, int64_t n,
                                           std::span<const int64_t> rows,
                                           std::span<const int64_t> cols, std::span<const T> values,
                                           const std::vector<int>& devices);

  const std::vector<int64_t>& shape() const { return shape_; }
  v1::DType dtype() const { return data_.info().dtype(); }
  // The entries stored (after duplicates were summed).
  int64_t nnz() const { return nnz_; }
  const v1::IndexMap& blocks() const { return blocks_; }
  const Array& indptr() const { return indptr_; }
  const Array& indices() const { return indices_; }
  const Array& data() const { return data_; }
  // The request message naming this matrix's arrays by handle.
  v1::CsrMatrix proto() const;

  // The transpose (n x m), built by the daemon: block i is this block i transposed, on the same
  // device, so A.T @ y gives one partial product per device (a SUM-mode array).
  absl::StatusOr<CsrMatrix> Transpose() const;
  // The dense matrix in the blocks' layout.
  absl::StatusOr<Array> ToDense() const;

  // Untyped FromCoo: `values` holds rows.size() elements of `dtype`.
  static absl::StatusOr<CsrMatrix> FromCooBytes(const Client& client, int64_t m, int64_t n,
                                                std::span<const int64_t> rows,
                                                std::span<const int64_t> cols, const void* values,
                                                int64_t value_count, v1::DType dtype,
                                                const std::vector<int>& devices);

 private:
  CsrMatrix(Array indptr, Array indices, Array data, std::vector<int64_t> shape,
            v1::IndexMap blocks, int64_t nnz)
      : indptr_(std::move(indptr)),
        indices_(std::move(indices)),
        data_(std::move(data)),
        shape_(std::move(shape)),
        blocks_(std::move(blocks)),
        nnz_(nnz) {}

  Array indptr_, indices_, data_;
  std::vector<int64_t> shape_;
  v1::IndexMap blocks_;
  int64_t nnz_ = 0;
};

// a @ b for a dense 1-D b (SpMV) or 2-D b (SpMM) of a's dtype. Rows shared by several blocks (a
// transposed row-split matrix) give a SUM-mode array of partial products.
absl::StatusOr<Array> SparseMatmul(const CsrMatrix& a, const Array& b);

template <typename T>
absl::StatusOr<CsrMatrix> CsrMatrix::FromCoo(const Client& client, int64_t m, int64_t n,
                                             std::span<const int64_t> rows,
                                             std::span<const int64_t> cols,
                                             std::span<const T> values,
                                             const std::vector<int>& devices) {
  return FromCooBytes(client, m, n, rows, cols, values.data(), static_cast<int64_t>(values.size()),
                      DTypeOf<T>(), devices);
}

}  // namespace distarray

#endif  // DISTARRAY_CLIENT_SPARSE_H_
