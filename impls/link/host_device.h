// The one qualifier that lets a function be device code under nvcc and plain host code under the
// C++ compiler: what link/ shares with the cuda transport's kernels (checksum_body.h).
#pragma once

#if defined(__CUDACC__)
#define COLLCHECK_HOST_DEVICE __host__ __device__
#else
#define COLLCHECK_HOST_DEVICE
#endif
