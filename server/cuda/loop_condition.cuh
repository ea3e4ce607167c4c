// The decision a WHILE loop's condition makes on the device, shared by the loop condition kernels
// (loop_control.cu) and fused loop bodies, which the runtime compiler builds from source
// (server/cuda/fusion/): one definition of the cap, the cancel word, the counters and the
// agreement across devices for both. Plain C++ with device functions behind __CUDACC__, so host
// code can include it for the types.
#ifndef DISTARRAY_SERVER_CUDA_LOOP_CONDITION_CUH_
#define DISTARRAY_SERVER_CUDA_LOOP_CONDITION_CUH_

#include <cstdint>

namespace distarray::cuda {

// One replay's statistics, in device memory owned by the recorded graph: zeroed by the graph's
// first node, updated by the loop conditions, copied to the host by its last node.
struct GraphCounters {
  unsigned long long iterations;   // loop bodies started, over every loop
  unsigned int hit_iteration_cap;  // a loop stopped at its cap with its flag still true
  unsigned int cancelled;          // the cancel word stopped a loop
  // The device clock (%globaltimer, ns) when a loop condition last read the cancel word.
  unsigned long long last_cancel_read_ns;
};

// A loop condition reads the cancel word, which lives in host memory, when this long has passed
// since the last read (and on a replay's first evaluation): a read is a PCIe round trip on the
// path every iteration waits for, so short bodies share one, while a cancel still stops a loop at
// the first evaluation this long after it is set, however long its body runs.
constexpr unsigned long long kCancelReadIntervalNs = 50'000;

// The most devices one recorded graph spans.
constexpr int kMaxGraphDevices = 8;

// Agreement on a condition across the devices of one recorded graph (docs/graphs.md, "Programs
// over several devices"). Each device runs its own graph with its own conditional nodes; every
// evaluation of a condition is an exchange: each device posts its vote with one 8-byte store into
// every device's inbox (peer memory) and then polls its own inbox, locally, until every device's
// vote of this exchange has arrived. Every device makes the same exchanges in the same order
// (they take the same decisions), so a counter per device numbers them: the epoch, in device
// memory, reset with the whole block before every replay. Two inboxes, by the epoch's parity: a
// device may post exchange e + 1 before a slower one has read e, but not e + 2, which needs the
// slower one's e + 1.
struct AgreementBlock {
  unsigned long long inbox[2][kMaxGraphDevices];  // epoch << 3 | cancel << 2 | voted << 1 | vote
  unsigned long long epoch;                       // this device's last exchange
  unsigned long long aborted;  // this device gave up waiting in this replay: no more waits
};

// Where the devices have no peer access (or the operator asks for it: --graph_agreement=nccl),
// they agree through an NCCL all-reduce instead, captured in each body before the condition
// kernel: a vote kernel writes this device's ballot, the all-reduce sums every device's into its
// tally, and the condition kernel reads the decision from the tally. Summing counts keeps
// abstentions neutral, as in the exchange.
enum BallotField : int { kBallotTrue = 0, kBallotFalse = 1, kBallotCancel = 2, kBallotFields = 3 };
struct NcclBallot {
  int ballot[kBallotFields];  // this device's: one vote (true or false, or none) and its cancel
  int padding0;
  int tally[kBallotFields];  // every device's, summed by the all-reduce
  int padding1;
};

// What one device's condition evaluations need: every device's block (peer addresses), and which
// one is this device's; or, agreeing through NCCL, the tally the all-reduce before the condition
// kernel filled. `devices` <= 1: no exchange.
struct Agreement {
  AgreementBlock* blocks[kMaxGraphDevices];
  const NcclBallot* nccl;  // NCCL agreement: this device's ballot and tally; null: peer memory
  int rank;
  int devices;
};

// The flags a condition evaluation reads on one device: element 0 of each (a bool), the chunks of
// the condition variable there, combined by OR (`any`) or AND. A device with none abstains and
// takes the others' decision.
constexpr int kMaxLocalFlags = 8;
struct LocalFlags {
  const unsigned char* flags[kMaxLocalFlags];
  int count;
  bool any;
};

#ifdef __CUDACC__
// The device clock in nanoseconds.
__device__ __forceinline__ unsigned long long GlobalTimerNs() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// The outcome of one exchange: the condition combined over every device's vote, and whether any
// device saw the cancel word (so all of them stop together).
struct AgreedVote {
  bool flag;
  bool cancel;
};

// One exchange (see AgreementBlock), by one thread. `voted`: whether this device holds part of
// the condition; `any`: votes combine by OR, else AND. While it waits for a peer it reads the
// cancel word every kCancelReadIntervalNs and gives up once it is set: a peer that never comes
// (its graph failed, or it already stopped on a cancel this device has not seen) cannot hang the
// device. Giving up answers {flag: true, cancel: true}, and so does every later exchange of the
// replay on this device: a loop stops and counts the cancel; a branch takes its else body (its
// loops stop at once). The replay's results are dropped: its call fails with the cancel.
__device__ __forceinline__ AgreedVote Agree(const Agreement& agreement, bool voted, bool vote,
                                            bool any, bool cancel,
                                            const volatile unsigned int* cancel_word) {
  if (agreement.devices <= 1) return AgreedVote{vote, cancel};
  if (agreement.nccl != nullptr) {
    // The all-reduce already combined every device's ballot (this one's included). This device's
    // own cancel counts even where the tally lacks it: only when the communicators were revoked
    // after a failure (the all-reduce returned without summing), when the devices no longer need
    // to agree but must stop.
    const volatile NcclBallot* ballot = agreement.nccl;
    const bool cancel = ballot->tally[kBallotCancel] > 0 || ballot->ballot[kBallotCancel] > 0;
    return AgreedVote{any ? ballot->tally[kBallotTrue] > 0 : ballot->tally[kBallotFalse] == 0,
                      cancel};
  }
  AgreementBlock* const mine = agreement.blocks[agreement.rank];
  // After giving up once, the devices are out of step for the rest of the replay: every later
  // evaluation answers a cancel at once instead of waiting 50 µs for a vote that may not come.
  if (mine->aborted != 0) return AgreedVote{true, true};
  const unsigned long long epoch = mine->epoch + 1;
  mine->epoch = epoch;
  const int parity = static_cast<int>(epoch & 1);
  const unsigned long long word =
      epoch << 3 | (cancel ? 4ull : 0ull) | (voted ? 2ull : 0ull) | (vote ? 1ull : 0ull);
  // No fence: the word carries the whole vote, the devices read nothing else of each other's,
  // and a reader waits for the epoch it needs, so the order in which stores arrive is free.
  for (int d = 0; d < agreement.devices; ++d) {
    *static_cast<volatile unsigned long long*>(
        &agreement.blocks[d]->inbox[parity][agreement.rank]) = word;
  }
  bool flag = !any;  // the identity of the combination: abstaining devices change nothing
  bool cancelled = cancel;
  unsigned long long last_read = GlobalTimerNs();
  for (int d = 0; d < agreement.devices; ++d) {
    const volatile unsigned long long* slot = &mine->inbox[parity][d];
    unsigned long long v;
    while (((v = *slot) >> 3) < epoch) {
      const unsigned long long now = GlobalTimerNs();
      if (now - last_read >= kCancelReadIntervalNs) {
        last_read = now;
        if (*cancel_word != 0) {
          mine->aborted = 1;
          return AgreedVote{true, true};
        }
      }
    }
    if ((v & 2) != 0) flag = any ? (flag || (v & 1) != 0) : (flag && (v & 1) != 0);
    cancelled = cancelled || (v & 4) != 0;
  }
  return AgreedVote{flag, cancelled};
}

// Reads the cancel word when kCancelReadIntervalNs has passed since the last read (`last_read_ns`,
// loaded by the caller) and notes the read: whether the word was seen set.
__device__ __forceinline__ bool CancelSeen(unsigned long long last_read_ns,
                                           const volatile unsigned int* cancel_word,
                                           GraphCounters* counters) {
  const unsigned long long now = GlobalTimerNs();
  // The counters start zeroed on every replay, so its first evaluation reads the word.
  if (now - last_read_ns < kCancelReadIntervalNs) return false;
  counters->last_cancel_read_ns = now;
  // Volatile: the host sets the word while the graph runs; a read must fetch it anew.
  return *cancel_word != 0;
}

// This device's vote on a condition: its flags combined.
__device__ __forceinline__ bool LocalVote(const LocalFlags& local) {
  bool vote = !local.any;
  for (int i = 0; i < local.count; ++i) {
    const bool f = local.flags[i][0] != 0;
    vote = local.any ? (vote || f) : (vote && f);
  }
  return vote;
}

// Whether the body runs (again), given the loop's flag on this device: it does when the flag is
// true, the loop has run fewer than `max_iterations` times (`count`) and the cancel word is
// clear. Counts the body it starts; records why a true flag did not start one. One thread calls
// it per evaluation. Every value it reads is loaded first, so an evaluation waits for memory
// once: it is on the path of every iteration (docs/design.md, "Compute"). Across devices
// (`agreement.devices` > 1) the flag and the cancel word are agreed first: `voted` says whether
// this device holds part of the condition, `any` how the parts combine.
__device__ __forceinline__ unsigned int NextIteration(bool voted, bool flag, bool any,
                                                      int64_t* count, int64_t max_iterations,
                                                      const volatile unsigned int* cancel_word,
                                                      GraphCounters* counters,
                                                      const Agreement& agreement) {
  const int64_t done = *count;
  const unsigned long long iterations = counters->iterations;
  const unsigned long long last_read_ns = counters->last_cancel_read_ns;
  const bool alone = agreement.devices <= 1;
  // Alone, a false flag needs nothing else; across devices every device joins every exchange.
  if (alone && !flag) return 0;
  // Agreeing through NCCL, the vote kernel before the all-reduce read the word (CastBallot).
  const bool cancel_seen =
      agreement.nccl == nullptr && CancelSeen(last_read_ns, cancel_word, counters);
  const AgreedVote agreed = Agree(agreement, voted, flag, any, cancel_seen, cancel_word);
  if (!agreed.flag) return 0;
  if (agreed.cancel) {
    counters->cancelled = 1;
    return 0;
  }
  if (done >= max_iterations) {
    counters->hit_iteration_cap = 1;
    return 0;
  }
  *count = done + 1;
  counters->iterations = iterations + 1;
  return 1;
}
#endif  // __CUDACC__

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_LOOP_CONDITION_CUH_
