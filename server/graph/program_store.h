// Registered programs (RegisterProgram): checked once for structure, kept by id, run many times.
// Each program belongs to the tenant that registered it: another tenant's id answers NOT_FOUND
// exactly as an unknown one does, and the limit on registered programs counts per tenant, so one
// tenant cannot fill the store for the others.
#ifndef DISTARRAY_SERVER_GRAPH_PROGRAM_STORE_H_
#define DISTARRAY_SERVER_GRAPH_PROGRAM_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

using ProgramPtr = std::shared_ptr<const v1::Program>;

class ProgramStore {
 public:
  explicit ProgramStore(int max_programs) : max_programs_(max_programs) {}

  // A new id ("prog-" and 16 hex digits, never reused) owned by `tenant`. RESOURCE_EXHAUSTED when
  // the tenant holds max_programs already.
  absl::StatusOr<std::string> Add(const std::string& tenant, v1::Program program);
  // NOT_FOUND naming `field` when `id` is unknown or another tenant's.
  absl::StatusOr<ProgramPtr> Find(const std::string& tenant, const std::string& id,
                                  absl::string_view field) const;
  absl::Status Erase(const std::string& tenant, const std::string& id, absl::string_view field);
  int64_t size() const;

 private:
  struct Entry {
    std::string tenant;
    ProgramPtr program;
  };
  const int max_programs_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> programs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> count_by_tenant_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_PROGRAM_STORE_H_
