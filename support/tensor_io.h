// Converting between the reference executor's tensors and stored (safetensors) tensors.
#pragma once

#include <string>

#include "ir/host_tensor.h"
#include "support/safetensors.h"

namespace bertc::support {

using HostTensor = ir::HostTensor<float>;
using Environment = ir::Environment<float>;

// Stored bytes as a tensor of `dtype` (F64/F32/F16/BF16 to any float dtype, integer dtypes to any
// integer dtype); throws SafetensorsError naming `what` when the kinds do not convert.
HostTensor to_host(const StoredTensor& stored, ir::DType dtype, const std::string& what);
// A tensor as stored bytes: real values as F32, integers as I64.
StoredTensor to_stored(const HostTensor& tensor);
// A tensor as the bytes of its own dtype (what kernels read: f16 and bf16 rounded to nearest even).
StoredTensor to_storage(const HostTensor& tensor);

}  // namespace bertc::support
