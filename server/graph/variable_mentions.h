// Which variable names a run of program statements mentions anywhere: operands, sources, targets,
// conditions, nested bodies. A superset of what they read (a target counts too), which is what a
// conservative liveness test needs: a value no later statement mentions is never read again.
#ifndef DISTARRAY_SERVER_GRAPH_VARIABLE_MENTIONS_H_
#define DISTARRAY_SERVER_GRAPH_VARIABLE_MENTIONS_H_

#include <string>

#include "absl/container/flat_hash_set.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// Every string field of block[from..] and of everything nested in it (by reflection, so a
// statement kind added later is covered without a change here).
absl::flat_hash_set<std::string> VariablesMentioned(
    const google::protobuf::RepeatedPtrField<v1::Statement>& block, int from);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_VARIABLE_MENTIONS_H_
