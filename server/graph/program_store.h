// Registered programs (RegisterProgram): checked once for structure, kept by id, run many times.
// Each program belongs to the tenant that registered it: another tenant's id answers NOT_FOUND
// exactly as an unknown one does, and the limits on registered programs (their number and the
// memory they take, ProgramMemoryBytes) count per tenant, so one tenant cannot fill the store, or
// the host's memory, for the others. Deleting a program returns its bytes to its tenant.
#ifndef DISTARRAY_SERVER_GRAPH_PROGRAM_STORE_H_
#define DISTARRAY_SERVER_GRAPH_PROGRAM_STORE_H_

#include <cstdint>
#include <memory>
#include <random>
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
  ProgramStore(int max_programs, int64_t max_tenant_bytes);

  // A new id ("prog-" and 16 hex digits: 64 random bits, so an id kept across a restart of the
  // daemon names nothing, rather than whatever was registered first since) owned by `tenant`; the
  // program is charged `bytes` (ProgramMemoryBytes of it as stored). RESOURCE_EXHAUSTED naming
  // `field` when the tenant holds max_programs already or its programs would take more than
  // max_tenant_bytes.
  absl::StatusOr<std::string> Add(const std::string& tenant, v1::Program program, int64_t bytes,
                                  absl::string_view field);
  // NOT_FOUND naming `field` when `id` is unknown or another tenant's.
  absl::StatusOr<ProgramPtr> Find(const std::string& tenant, const std::string& id,
                                  absl::string_view field) const;
  absl::Status Erase(const std::string& tenant, const std::string& id, absl::string_view field);
  int64_t size() const;
  // What `tenant`'s programs are charged together.
  int64_t TenantBytes(const std::string& tenant) const;

 private:
  struct Entry {
    std::string tenant;
    ProgramPtr program;
    int64_t bytes = 0;
  };
  struct TenantUsage {
    int programs = 0;
    int64_t bytes = 0;
  };
  const int max_programs_;
  const int64_t max_tenant_bytes_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> programs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, TenantUsage> usage_by_tenant_ ABSL_GUARDED_BY(mu_);
  // Seeded from the system's entropy at start: ids differ from every earlier run's.
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_PROGRAM_STORE_H_
