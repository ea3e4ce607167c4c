#include "server/ops/flat_runs.h"

#include <algorithm>

namespace distarray {

std::vector<Box> FlatRunBoxes(const Shape& shape, int64_t start, int64_t count) {
  std::vector<Box> boxes;
  if (count <= 0) return boxes;
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) return {Box{}};
  // block[k]: flat positions one step along axis k spans.
  std::vector<int64_t> block(rank, 1);
  for (int k = rank - 2; k >= 0; --k) block[k] = block[k + 1] * shape[k + 1];
  int64_t position = start;
  const int64_t end = start + count;
  while (position < end) {
    // The largest block the position is aligned to that still fits before `end`; the run then
    // takes as many such blocks as fit in the current row of that axis.
    for (int k = 0; k < rank; ++k) {
      if (position % block[k] != 0 || end - position < block[k]) continue;
      Box box(rank);
      int64_t rest = position;
      for (int a = 0; a < rank; ++a) {
        const int64_t index = rest / block[a];
        rest %= block[a];
        if (a < k) box[a] = Range{index, 1, 1};
        if (a > k) box[a] = Range{0, 1, shape[a]};
        if (a == k) {
          const int64_t steps = std::min((end - position) / block[k], shape[k] - index);
          box[a] = Range{index, 1, steps};
        }
      }
      position += box[k].count * block[k];
      boxes.push_back(std::move(box));
      break;
    }
  }
  return boxes;
}

std::optional<Box> FlatRunAsBox(const Shape& shape, int64_t start, int64_t count) {
  std::vector<Box> boxes = FlatRunBoxes(shape, start, count);
  if (boxes.size() != 1) return std::nullopt;
  return std::move(boxes.front());
}

}  // namespace distarray
