// The kernel prelude: all that a generated kernel uses. One API, two implementations: the GPU's
// (bx_device.h, compiled by NVRTC with no toolkit header) and the host's (bx_host.h: threads as
// fibers under codegen/host_emulation), so the same kernel source runs on either.
#ifndef BX_H
#define BX_H

#if defined(__CUDACC__)
#include "bx_device.h"
#else
#include "bx_host.h"
#endif
#include "bx_common.h"

#endif  // BX_H
