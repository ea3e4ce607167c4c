#include "server/graph/program_store.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/names.h"

namespace distarray {

absl::StatusOr<std::string> ProgramStore::Add(v1::Program program) {
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(programs_.size()) >= max_programs_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "program: ", max_programs_,
        " programs are registered, the server's limit; delete some with DeleteProgram"));
  }
  std::string id = absl::StrFormat("prog-%016x", next_id_++);
  programs_[id] = std::make_shared<const v1::Program>(std::move(program));
  return id;
}

absl::StatusOr<ProgramPtr> ProgramStore::Find(const std::string& id,
                                              absl::string_view field) const {
  absl::MutexLock lock(&mu_);
  auto it = programs_.find(id);
  if (it == programs_.end()) {
    return absl::NotFoundError(
        absl::StrCat(field, ": no registered program ", QuoteClientString(id)));
  }
  return it->second;
}

absl::Status ProgramStore::Erase(const std::string& id, absl::string_view field) {
  absl::MutexLock lock(&mu_);
  if (programs_.erase(id) == 0) {
    return absl::NotFoundError(
        absl::StrCat(field, ": no registered program ", QuoteClientString(id)));
  }
  return absl::OkStatus();
}

int64_t ProgramStore::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(programs_.size());
}

}  // namespace distarray
