// An array as the engine holds it: metadata plus one device buffer per chunk. Arrays are
// immutable snapshots (an in-place reshard swaps the registry entry), so an operation can read an
// array while another client deletes or replaces it; buffers live while any work uses them.
#ifndef DISTARRAY_SERVER_OPS_ARRAY_H_
#define DISTARRAY_SERVER_OPS_ARRAY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/box.h"
#include "common/dtype.h"
#include "common/index_map.h"
#include "common/mode.h"
#include "server/backend/device_ops.h"

namespace distarray {

struct Chunk {
  ChunkSpec spec;    // device and global box
  BufferPtr buffer;  // the box's elements, dense, C order
};

struct Array {
  std::string handle;
  std::string name;  // empty when unnamed
  // The client session that owns an unnamed array, as "tenant/session" (empty: none, or named).
  // When the session's lease runs out the array is deleted.
  std::string session;
  Shape shape;
  DType dtype = DType::kFloat32;
  Mode mode = Mode::kReplica;
  std::vector<Chunk> chunks;
  // The tenant that owns the array (server/security/tenant.h); only its calls see the array. Last,
  // so the positional initializers of unregistered arrays (RunGraph's variables) stay valid.
  std::string tenant;

  IndexMap index_map() const {
    IndexMap map;
    for (const Chunk& c : chunks) map.push_back(c.spec);
    return map;
  }
  std::map<int, int64_t> bytes_per_device() const {
    std::map<int, int64_t> bytes;
    for (const Chunk& c : chunks)
      bytes[c.spec.device] += NumElements(c.spec.box) * DTypeSize(dtype);
    return bytes;
  }
};
using ArrayPtr = std::shared_ptr<const Array>;

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_ARRAY_H_
