// Where a block's statements mention each variable name: operands, sources, targets, conditions,
// nested bodies. A superset of what they read (a target counts too), which is what a conservative
// liveness test needs: a value whose name no statement after index i mentions is never read again
// after i.
#ifndef DISTARRAY_SERVER_GRAPH_VARIABLE_MENTIONS_H_
#define DISTARRAY_SERVER_GRAPH_VARIABLE_MENTIONS_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// For every string field of the block's statements and of everything nested in them (by
// reflection, so a statement kind added later is covered without a change here): the index of
// the last statement mentioning it. One pass over the block.
absl::flat_hash_map<std::string, int> LastMentions(
    const google::protobuf::RepeatedPtrField<v1::Statement>& block);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_VARIABLE_MENTIONS_H_
