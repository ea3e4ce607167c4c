#include "server/graph/program_store.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/names.h"

namespace distarray {

namespace {

// One message for unknown and foreign ids, so existence does not leak across tenants.
absl::Status NoProgram(absl::string_view field, absl::string_view id) {
  return absl::NotFoundError(
      absl::StrCat(field, ": no registered program ", QuoteClientString(id)));
}

}  // namespace

absl::StatusOr<std::string> ProgramStore::Add(const std::string& tenant, v1::Program program) {
  absl::MutexLock lock(&mu_);
  int& count = count_by_tenant_[tenant];
  if (count >= max_programs_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "program: ", max_programs_,
        " programs are registered, the server's limit; delete some with DeleteProgram"));
  }
  ++count;
  std::string id = absl::StrFormat("prog-%016x", next_id_++);
  programs_[id] = Entry{tenant, std::make_shared<const v1::Program>(std::move(program))};
  return id;
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
  absl::MutexLock lock(&mu_);
  auto it = programs_.find(id);
  if (it == programs_.end() || it->second.tenant != tenant) return NoProgram(field, id);
  if (auto count = count_by_tenant_.find(tenant); --count->second == 0) {
    count_by_tenant_.erase(count);
  }
  programs_.erase(it);
  return absl::OkStatus();
}

int64_t ProgramStore::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(programs_.size());
}

}  // namespace distarray
