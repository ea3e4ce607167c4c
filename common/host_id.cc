#include "common/host_id.h"

#include <sys/stat.h>

#include <cstdint>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace distarray {

std::string HostIdOf(const std::string& boot_id_path, const std::string& shm_dir) {
  std::ifstream boot_id_file(boot_id_path);
  std::string boot_id;
  if (!std::getline(boot_id_file, boot_id)) return "";
  boot_id = std::string(absl::StripAsciiWhitespace(boot_id));
  struct stat st;
  if (boot_id.empty() || stat(shm_dir.c_str(), &st) != 0) return "";
  const std::string key = absl::StrCat(boot_id, ":", static_cast<uint64_t>(st.st_dev), ":",
                                       static_cast<uint64_t>(st.st_ino));
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a, 64 bits
  for (unsigned char c : key) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return absl::StrFormat("%016x", hash);
}

std::string ThisHostId() { return HostIdOf("/proc/sys/kernel/random/boot_id", "/dev/shm"); }

}  // namespace distarray
