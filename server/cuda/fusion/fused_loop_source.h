// The CUDA C++ source of a fused loop's kernel (server/backend/fused_loop.h): the chain computed
// per element with the ufunc functors themselves (server/kernels/ufuncs.h, compiled again by
// NVRTC), so a fused loop computes exactly what its statements compute one kernel at a time.
// Pure string building; the fixed part of the kernel is fused_loop_device.cuh.
#ifndef DISTARRAY_SERVER_CUDA_FUSION_FUSED_LOOP_SOURCE_H_
#define DISTARRAY_SERVER_CUDA_FUSION_FUSED_LOOP_SOURCE_H_

#include <string>

#include "server/backend/fused_loop.h"

namespace distarray::cuda {

inline constexpr char kFusedLoopKernelName[] = "distarray_fused_loop";

// The kernel's source. Buffers are numbered inputs first, then stores, as FusedLoopArgs::buffers
// must hold them. Scalars are written into the source (exactly, as bit patterns), so two loops
// differing only in a constant compile separately: the compile cache keys on the source.
// `aligned`: every buffer starts on 16 bytes, so arrays of one element size move as 16-byte packs.
// `persistent`: one cooperative launch runs up to FusedLoopArgs::iterations_per_launch iterations
// with a grid barrier between them (PersistentNextIteration), for one device alone; else one
// launch is one iteration (FinishIteration).
std::string FusedLoopSource(const FusedLoop& loop, bool aligned = true, bool persistent = false);

inline constexpr char kFusedChainKernelName[] = "distarray_fused_chain";

// A straight-line chain's kernel (FusedChainArgs): each thread computes the chain at its elements,
// loading every input before it stores anything; a chain that ends in a sum adds up its value
// over the elements (FinishChainSum). Launched with whole warps of threads.
std::string FusedChainSource(const FusedLoop& chain);

// The elements one access of the kernel moves (its packs): 16 bytes' worth when every array has
// one element size and `aligned`, else 1.
int FusedLoopPackWidth(const FusedLoop& loop, bool aligned);

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_FUSION_FUSED_LOOP_SOURCE_H_
