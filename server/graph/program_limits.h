// The bounds a program must stay within (flags of distarrayd; GetServerInfo reports them). A
// program is client input like any other: its size, depth, loop caps and returned bytes are all
// bounded before anything runs.
#ifndef DISTARRAY_SERVER_GRAPH_PROGRAM_LIMITS_H_
#define DISTARRAY_SERVER_GRAPH_PROGRAM_LIMITS_H_

#include <cstdint>

namespace distarray {

struct ProgramLimits {
  int max_statements = 4096;                       // counted over every body
  int max_depth = 8;                               // nesting of loops and branches
  int64_t max_loop_iterations = int64_t{1} << 30;  // the largest max_iterations a loop may ask
  int max_registered_programs = 1024;
  int64_t max_value_output_bytes = int64_t{1} << 20;  // all value_outputs of one run together
  int max_cached_graphs = 64;  // executable graphs kept (least recently used goes first)
  // What one program may take in the daemon's memory (ProgramMemoryBytes: the parsed message,
  // not its wire size, which is several times smaller), inline or registered.
  int64_t max_program_bytes = int64_t{16} << 20;
  // What one tenant's registered programs may take together (the same measure, as stored).
  int64_t tenant_program_bytes = int64_t{64} << 20;
};

inline constexpr int kMaxVariableBytes = 128;

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_PROGRAM_LIMITS_H_
