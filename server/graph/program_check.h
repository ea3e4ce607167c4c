// The structural check of a program, independent of its arguments: its memory, names, sizes,
// nesting, loop caps, the parts of its index maps that do not depend on a shape, and that every
// statement has what its kind needs. RegisterProgram runs it once; types, shapes and layouts are
// checked per run by the interpreter's check mode (interpreter.h), since they depend on the
// arguments.
#ifndef DISTARRAY_SERVER_GRAPH_PROGRAM_CHECK_H_
#define DISTARRAY_SERVER_GRAPH_PROGRAM_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"
#include "server/graph/program_limits.h"

namespace distarray {

// What the daemon's shape-independent checks of a program need besides ProgramLimits.
struct ProgramCheckBounds {
  int64_t max_chunks = 0;  // per index map (--max_chunks)
  int num_devices = 0;     // chunks name devices [0, num_devices)
};

// What `program` takes in the daemon's memory: the parsed message (every nested message, string
// and repeated field's allocation, unknown fields included) plus what keeping it costs besides
// (kStoredProgramOverheadBytes). Linear in the program's size.
int64_t ProgramMemoryBytes(const v1::Program& program);
// The store's entry for a program: its id, the map slot, the shared pointer's control block.
inline constexpr int64_t kStoredProgramOverheadBytes = 256;

// INVALID_ARGUMENT naming the offending field (`field` is the program's, e.g. "program"). A
// program over limits.max_program_bytes (ProgramMemoryBytes) is refused before anything else
// is looked at. Index maps of reshard statements are checked for what does not depend on the
// shape they will meet: their chunk count, each chunk's device, one rank for every chunk (at
// most kMaxRank) and non-zero steps; their bounds are checked per run.
absl::Status CheckProgramStructure(const v1::Program& program, const ProgramLimits& limits,
                                   const ProgramCheckBounds& bounds, absl::string_view field);

// 1 to kMaxVariableBytes bytes of [A-Za-z0-9_.], not starting with a digit or '.'.
absl::Status ValidateVariableName(absl::string_view name, absl::string_view field);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_PROGRAM_CHECK_H_
