// The C library's heap, set for a daemon that streams messages of a megabyte or more. glibc's
// defaults hand freed memory back to the kernel eagerly (the top of a heap past 128 KiB, adjusted
// as blocks come and go), so each 1 MiB message of a transfer tended to take fresh pages that the
// kernel zeroes on first touch; keeping freed memory raised downloads by 16-26 % on 2xH200
// (docs/performance.md).
#ifndef DISTARRAY_SERVER_DAEMON_HEAP_TUNING_H_
#define DISTARRAY_SERVER_DAEMON_HEAP_TUNING_H_

namespace distarray::daemon {

// Blocks under 32 MiB come from the heap, and up to 1 GiB of freed heap is kept for reuse. Does
// nothing when the environment sets GLIBC_TUNABLES, so an operator's own malloc settings win.
// Call before the servers start.
void TuneHeapForStreaming();

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_HEAP_TUNING_H_
