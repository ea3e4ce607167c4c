// One UploadArray stream: bytes arrive in pieces of any size and are written to the chunks one
// slab (a run of rows of the region's first axis) at a time, so the device copy of one slab
// overlaps the receipt of the next and the host holds at most one slab.
#ifndef DISTARRAY_SERVER_ENGINE_UPLOAD_SESSION_H_
#define DISTARRAY_SERVER_ENGINE_UPLOAD_SESSION_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/engine/array.h"

namespace distarray {

class Engine;

class UploadSession {
 public:
  // `array` is the target (a new, unregistered array when `is_new`); `region` is where the bytes
  // go, in global coordinates.
  UploadSession(Engine& engine, Array array, bool is_new, Box region);

  // INVALID_ARGUMENT when the stream carries more bytes than the region holds.
  absl::Status Append(absl::string_view bytes);
  // INVALID_ARGUMENT when fewer bytes arrived than the region holds; otherwise registers a new
  // array (ALREADY_EXISTS if its name was taken meanwhile) or returns the updated one.
  absl::StatusOr<ArrayPtr> Finish();

  int64_t expected_bytes() const { return expected_bytes_; }

 private:
  absl::Status FlushSlab();

  Engine& engine_;
  Array array_;
  const bool is_new_;
  const Box region_;
  const int64_t element_size_;
  const int64_t row_bytes_;  // bytes of one index of the region's first axis
  const int64_t rows_per_slab_;
  const int64_t expected_bytes_;
  int64_t received_bytes_ = 0;
  int64_t next_row_ = 0;  // first row of the slab being filled
  std::string slab_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_UPLOAD_SESSION_H_
