#include "server/security/tenant.h"

#include "absl/strings/str_cat.h"
#include "common/names.h"

namespace distarray {

absl::Status ValidateTenantName(absl::string_view tenant, absl::string_view field) {
  if (tenant.empty())
    return absl::InvalidArgumentError(absl::StrCat(field, ": a tenant is required"));
  return ValidateName(tenant, field);
}

}  // namespace distarray
