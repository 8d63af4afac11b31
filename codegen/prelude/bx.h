// The kernel prelude: all that a generated kernel uses. One API, two implementations: the GPU's
// (bx_device.h, compiled by NVRTC with no toolkit header) and the host's (bx_host.h: threads as
// fibers under codegen/host_emulation), so the same kernel source runs on either. bx_*_mma.h hold the
// warp-level matrix instructions (mma.sync, ldmatrix, cp.async); bx_matrix.h builds the matrix
// kernels' tiles on them.
#ifndef BX_H
#define BX_H

#if defined(__CUDACC__)
#include "bx_device.h"
#else
#include "bx_host.h"
#endif
#include "bx_common.h"
#if defined(__CUDACC__)
#include "bx_device_mma.h"
#else
#include "bx_host_mma.h"
#endif
#include "bx_matrix.h"

#endif  // BX_H
