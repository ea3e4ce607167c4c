// The host id: how a client and the daemon tell that they see the same /dev/shm, so that a
// transfer may go through a shared-memory segment instead of the stream. Both sides compute it by
// this one rule (the Python SDK by the same rule, in _shared_memory.py).
#ifndef DISTARRAY_COMMON_HOST_ID_H_
#define DISTARRAY_COMMON_HOST_ID_H_

#include <string>

namespace distarray {

// The host id of a process that reads `boot_id_path` and sees `shm_dir`: 16 lowercase hex digits
// of the 64-bit FNV-1a hash of "<boot_id>:<st_dev>:<st_ino>" (the first line of `boot_id_path`
// without surrounding whitespace; the device and inode of `shm_dir` from stat, in decimal).
// Empty when either cannot be read or the boot id is empty: no shared memory then.
std::string HostIdOf(const std::string& boot_id_path, const std::string& shm_dir);

// HostIdOf the kernel's /proc/sys/kernel/random/boot_id and /dev/shm: what GetServerInfo reports
// as host_id, equal for two processes exactly when they share a kernel and a /dev/shm mount.
std::string ThisHostId();

}  // namespace distarray

#endif  // DISTARRAY_COMMON_HOST_ID_H_
