// Sort and argsort along an axis (ManipulationSpec.sort), and searchsorted, planned and executed
// like the other manipulation ops (manipulation.h). The result takes the source's layout; how the
// elements get sorted across devices is SortPlan's choice (docs/design.md, "Sorting").
#ifndef DISTARRAY_SERVER_OPS_SORT_H_
#define DISTARRAY_SERVER_OPS_SORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/ops/manipulation.h"

namespace distarray {

absl::Status PlanSort(const OpContext& context, const v1::SortSpec& spec, const std::string& field,
                      PlannedManipulation& planned);

// The result's chunks (sorted values, or int64 positions for argsort), on fresh buffers.
absl::StatusOr<std::vector<Chunk>> ExecuteSort(const OpContext& context,
                                               const PlannedManipulation& planned);

// search_sorted: sources are {sorted, values}; the result has values' layout (or, where values'
// chunks leave elements uncovered, a split of it that covers them) and int64 positions.
absl::Status PlanSearchSorted(const OpContext& context, const v1::SearchSortedSpec& spec,
                              const std::string& field, PlannedManipulation& planned);
absl::StatusOr<std::vector<Chunk>> ExecuteSearchSorted(const OpContext& context,
                                                       const PlannedManipulation& planned);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_SORT_H_
