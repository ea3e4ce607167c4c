// The graph cache's keys: a strong hash of what a recorded graph depends on, instead of the
// program's bytes. An inline program's serialized form can be many megabytes (index maps, or
// fields this daemon does not know), and the cache keeps its key twice per entry.
#ifndef DISTARRAY_SERVER_GRAPH_PROGRAM_DIGEST_H_
#define DISTARRAY_SERVER_GRAPH_PROGRAM_DIGEST_H_

#include <string>

#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view bytes);

// SHA-256 (hex) of `program`'s deterministic serialization without its unknown fields: programs
// that differ only in fields this daemon ignores have one digest, and one cached graph.
std::string ProgramDigest(const v1::Program& program);

// SHA-256 (hex) of `program`'s deterministic serialization as it is, unknown fields included:
// no copy and no reflection walk, so cheap enough for every call (a client sends its program the
// same way each time). Two programs differing only in unknown fields have two of these and one
// ProgramDigest.
std::string ProgramBytesDigest(const v1::Program& program);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_PROGRAM_DIGEST_H_
