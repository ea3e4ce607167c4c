// How the devices of a recording over several agree on its conditions (graph/recording.h).
#ifndef DISTARRAY_SERVER_CUDA_GRAPH_AGREEMENT_MODE_H_
#define DISTARRAY_SERVER_CUDA_GRAPH_AGREEMENT_MODE_H_

namespace distarray {

// How the devices of a recording over several agree on its conditions.
enum class GraphAgreement {
  kAuto,  // through peer memory where every pair of the devices has peer access, else NCCL
  kPeer,  // through peer memory only: devices without peer access run programs eagerly
  kNccl,  // through an NCCL all-reduce, even where peer access would allow the exchange
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_GRAPH_AGREEMENT_MODE_H_
