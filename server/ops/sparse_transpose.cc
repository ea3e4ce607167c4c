#include "server/ops/sparse_transpose.h"

#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checked.h"
#include "common/status_macros.h"
#include "server/kernels/csr.h"

namespace distarray {
namespace {

absl::Status ReadAll(Backend& backend, const BufferPtr& buffer, int64_t bytes, void* dst) {
  if (bytes == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<PendingRead> read, backend.ReadToHost(buffer, 0, bytes, dst));
  return read->Wait();
}

absl::StatusOr<BufferPtr> Upload(Backend& backend, int device, const void* src, int64_t bytes) {
  ASSIGN_OR_RETURN(BufferPtr buffer, backend.Allocate(device, bytes));
  RETURN_IF_ERROR(backend.WriteFromHost(buffer, 0, src, bytes));
  return buffer;
}

// A 1-D result of chunks laid end to end: chunk i of `lengths[i]` elements on `devices[i]`.
OpResult EndToEnd(DType dtype, const std::vector<int>& devices, const std::vector<int64_t>& lengths,
                  std::vector<BufferPtr> buffers) {
  OpResult out{{0}, dtype, Mode::kReplica, {}};
  int64_t offset = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    out.chunks.push_back(
        Chunk{ChunkSpec{devices[i], {Range{offset, 1, lengths[i]}}}, std::move(buffers[i])});
    offset += lengths[i];
  }
  out.shape = {offset};
  return out;
}

}  // namespace

absl::StatusOr<CsrParts> TransposeOnHost(Backend& backend, const CsrOperand& matrix,
                                         const StopCheck& alive) {
  const CsrMeta& meta = matrix.meta;
  const int64_t value_size = DTypeSize(meta.dtype);
  const int64_t index_size = DTypeSize(meta.index_dtype);
  std::vector<int> devices;
  std::vector<int64_t> indptr_lengths, entry_lengths;
  std::vector<BufferPtr> indptr_buffers, index_buffers, data_buffers;
  for (size_t b = 0; b < meta.blocks.size(); ++b) {
    if (alive) RETURN_IF_ERROR(alive());
    const ChunkSpec& block = meta.blocks[b];
    const int64_t rows = block.box[0].count, cols = block.box[1].count;
    const int64_t capacity = meta.capacity[b];
    // The block's own parts are bounded by the arrays that hold them (already allocated). The
    // transpose's offsets are not: a block one row high may claim 2^40 columns. They are admitted
    // on the device, with checked arithmetic, before any host memory is set aside for them.
    const std::optional<int64_t> t_indptr_bytes =
        AddOrNull(cols, 1) ? MulOrNull(cols + 1, 8) : std::nullopt;
    if (!t_indptr_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "transpose: block ", b, " has ", cols, " columns; its transpose's offsets do not fit"));
    }
    ASSIGN_OR_RETURN(BufferPtr t_indptr_buffer, backend.Allocate(block.device, *t_indptr_bytes));
    std::vector<int64_t> indptr(static_cast<size_t>(rows + 1));
    std::vector<char> indices(static_cast<size_t>(capacity * index_size));
    std::vector<char> data(static_cast<size_t>(capacity * value_size));
    RETURN_IF_ERROR(
        ReadAll(backend, matrix.indptr->chunks[b].buffer, (rows + 1) * 8, indptr.data()));
    RETURN_IF_ERROR(
        ReadAll(backend, matrix.indices->chunks[b].buffer, capacity * index_size, indices.data()));
    RETURN_IF_ERROR(
        ReadAll(backend, matrix.data->chunks[b].buffer, capacity * value_size, data.data()));
    auto column_of = [&](int64_t e) {
      return meta.index_dtype == DType::kInt32
                 ? csr::Column(reinterpret_cast<const int32_t*>(indices.data())[e], cols)
                 : csr::Column(reinterpret_cast<const int64_t*>(indices.data())[e], cols);
    };
    // Counting sort by column: counts, offsets, then the entries in row order.
    std::vector<int64_t> t_indptr(static_cast<size_t>(cols + 1), 0);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t begin, end;
      csr::RowRange(indptr.data(), row, capacity, &begin, &end);
      for (int64_t e = begin; e < end; ++e) {
        const int64_t column = column_of(e);
        if (column >= 0) ++t_indptr[column + 1];
      }
    }
    for (int64_t c = 0; c < cols; ++c) t_indptr[c + 1] += t_indptr[c];
    const int64_t entries = t_indptr[cols];
    // A block without entries keeps one unused entry (an array's chunk is never empty).
    const int64_t t_capacity = entries > 0 ? entries : 1;
    std::vector<int64_t> t_indices(static_cast<size_t>(t_capacity), 0);
    std::vector<char> t_data(static_cast<size_t>(t_capacity * value_size), 0);
    std::vector<int64_t> next(t_indptr.begin(), t_indptr.end() - 1);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t begin, end;
      csr::RowRange(indptr.data(), row, capacity, &begin, &end);
      for (int64_t e = begin; e < end; ++e) {
        const int64_t column = column_of(e);
        if (column < 0) continue;
        const int64_t slot = next[column]++;
        t_indices[slot] = row;
        std::memcpy(t_data.data() + slot * value_size, data.data() + e * value_size, value_size);
      }
    }
    devices.push_back(block.device);
    indptr_lengths.push_back(cols + 1);
    entry_lengths.push_back(t_capacity);
    RETURN_IF_ERROR(backend.WriteFromHost(t_indptr_buffer, 0, t_indptr.data(), *t_indptr_bytes));
    ASSIGN_OR_RETURN(BufferPtr i, Upload(backend, block.device, t_indices.data(), t_capacity * 8));
    ASSIGN_OR_RETURN(BufferPtr d,
                     Upload(backend, block.device, t_data.data(), t_capacity * value_size));
    indptr_buffers.push_back(std::move(t_indptr_buffer));
    index_buffers.push_back(std::move(i));
    data_buffers.push_back(std::move(d));
  }
  return CsrParts{EndToEnd(DType::kInt64, devices, indptr_lengths, std::move(indptr_buffers)),
                  EndToEnd(DType::kInt64, devices, entry_lengths, std::move(index_buffers)),
                  EndToEnd(meta.dtype, devices, entry_lengths, std::move(data_buffers))};
}

}  // namespace distarray
