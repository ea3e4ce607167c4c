// The daemon's exit codes, one place so main, the docs and the tests agree.
#ifndef DISTARRAY_SERVER_DAEMON_EXIT_CODES_H_
#define DISTARRAY_SERVER_DAEMON_EXIT_CODES_H_

namespace distarray::daemon {

inline constexpr int kExitDevicesFailed = 1;       // the devices reported an error at exit
inline constexpr int kExitBadFlags = 2;            // a bad flag, or an address that cannot be bound
inline constexpr int kExitBackendUnavailable = 3;  // e.g. --backend=cuda without a usable GPU
inline constexpr int kExitDrainTimedOut = 4;       // a call still ran 1 s after the drain time
// Clusters (docs/cluster.md):
inline constexpr int kExitClusterNotFormed = 5;   // no full cluster within the formation timeout
inline constexpr int kExitClusterRefused = 6;     // the leader refused this member (rank, release)
inline constexpr int kExitClusterLeaderLost = 7;  // a member's leader went silent or restarted

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_EXIT_CODES_H_
