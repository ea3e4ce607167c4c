// The structural check of a program, independent of its arguments: names, sizes, nesting, loop
// caps, and that every statement has what its kind needs. RegisterProgram runs it once; types,
// shapes and layouts are checked per run by the interpreter's check mode (interpreter.h), since
// they depend on the arguments.
#ifndef DISTARRAY_SERVER_GRAPH_PROGRAM_CHECK_H_
#define DISTARRAY_SERVER_GRAPH_PROGRAM_CHECK_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"
#include "server/graph/program_limits.h"

namespace distarray {

// INVALID_ARGUMENT naming the offending field (`field` is the program's, e.g. "program").
absl::Status CheckProgramStructure(const v1::Program& program, const ProgramLimits& limits,
                                   absl::string_view field);

// 1 to kMaxVariableBytes bytes of [A-Za-z0-9_.], not starting with a digit or '.'.
absl::Status ValidateVariableName(absl::string_view name, absl::string_view field);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_PROGRAM_CHECK_H_
