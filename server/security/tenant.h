// Tenants: who owns an array, a session or a program. A call's tenant comes from its bearer token
// (token_store.h); without --auth_tokens_file every call runs as kDefaultTenant.
#ifndef DISTARRAY_SERVER_SECURITY_TENANT_H_
#define DISTARRAY_SERVER_SECURITY_TENANT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distarray {

inline constexpr char kDefaultTenant[] = "default";

// A tenant name follows the array-name rule (common/names.h): 1 to 256 bytes of [A-Za-z0-9._-]
// starting with a letter or digit. It never contains '/', which the engine relies on to make
// keys such as "tenant/session" unambiguous. INVALID_ARGUMENT naming `field` otherwise.
absl::Status ValidateTenantName(absl::string_view tenant, absl::string_view field);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SECURITY_TENANT_H_
