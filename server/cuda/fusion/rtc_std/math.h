// <math.h> for the runtime compiler: NVRTC declares CUDA's math functions (sqrtf, fmod, ...)
// itself, so this header only has to exist.
#pragma once
