#include "server/graph/program_store.h"

#include <malloc.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/names.h"

namespace distarray {

namespace {

// Deleting a program this large trims the allocator's free memory (Erase).
constexpr int64_t kTrimAfterBytes = int64_t{1} << 20;

// One message for unknown and foreign ids, so existence does not leak across tenants.
absl::Status NoProgram(absl::string_view field, absl::string_view id) {
  return absl::NotFoundError(
      absl::StrCat(field, ": no registered program ", QuoteClientString(id)));
}

}  // namespace

ProgramStore::ProgramStore(int max_programs, int64_t max_tenant_bytes)
    : max_programs_(max_programs), max_tenant_bytes_(max_tenant_bytes) {
  // 128 bits of entropy: two runs start from the same state about never.
  std::random_device entropy;
  std::seed_seq seed{entropy(), entropy(), entropy(), entropy()};
  absl::MutexLock lock(&mu_);
  random_.seed(seed);
}

absl::StatusOr<std::string> ProgramStore::Add(const std::string& tenant, v1::Program program,
                                              int64_t bytes, absl::string_view field) {
  absl::MutexLock lock(&mu_);
  TenantUsage& usage = usage_by_tenant_[tenant];
  if (usage.programs >= max_programs_) {
    if (usage.programs == 0) usage_by_tenant_.erase(tenant);
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": ", max_programs_,
        " programs are registered, the server's limit (--max_registered_programs); delete some "
        "with DeleteProgram"));
  }
  if (bytes < 0 || bytes > max_tenant_bytes_ - usage.bytes) {  // no sum that could wrap
    const int64_t in_use = usage.bytes;
    if (usage.programs == 0) usage_by_tenant_.erase(tenant);
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": the program takes ", bytes, " bytes; with the ", in_use,
        " bytes this tenant's registered programs take, that would pass the limit of ",
        max_tenant_bytes_, " bytes (--tenant_program_bytes); delete some with DeleteProgram"));
  }
  ++usage.programs;
  usage.bytes += bytes;
  std::string id;
  do {
    id = absl::StrFormat("prog-%016x", random_());
  } while (programs_.contains(id));
  programs_[id] = Entry{tenant, std::make_shared<const v1::Program>(std::move(program)), bytes};
  return id;
}

int64_t ProgramStore::TenantBytes(const std::string& tenant) const {
  absl::MutexLock lock(&mu_);
  auto it = usage_by_tenant_.find(tenant);
  return it == usage_by_tenant_.end() ? 0 : it->second.bytes;
}

absl::StatusOr<ProgramPtr> ProgramStore::Find(const std::string& tenant, const std::string& id,
                                              absl::string_view field) const {
  absl::MutexLock lock(&mu_);
  auto it = programs_.find(id);
  if (it == programs_.end() || it->second.tenant != tenant) return NoProgram(field, id);
  return it->second.program;
}

absl::Status ProgramStore::Erase(const std::string& tenant, const std::string& id,
                                 absl::string_view field) {
  ProgramPtr program;  // released after the lock
  int64_t bytes = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = programs_.find(id);
    if (it == programs_.end() || it->second.tenant != tenant) return NoProgram(field, id);
    auto usage = usage_by_tenant_.find(tenant);
    usage->second.bytes -= it->second.bytes;
    if (--usage->second.programs == 0) usage_by_tenant_.erase(usage);
    program = std::move(it->second.program);
    bytes = it->second.bytes;
    programs_.erase(it);
  }
  // The program's memory goes when the last run using it ends (they share it). A large parsed
  // program is many small allocations the allocator would keep; give their pages back to the
  // system, so deleting programs returns memory to the host and not only to the budget.
  const bool last = program.use_count() == 1;
  program.reset();
#ifdef __GLIBC__
  if (last && bytes >= kTrimAfterBytes) malloc_trim(0);
#else
  (void)last;
#endif
  return absl::OkStatus();
}

int64_t ProgramStore::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(programs_.size());
}

}  // namespace distarray
