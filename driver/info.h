// bertc info: the CUDA driver, GPUs, NVRTC, cuBLAS, MPI, Gloo and NCCL this machine has, or
// what a file or folder holds (a compiled program, a checkpoint, a run or Hugging Face folder).
#pragma once

#include <string>

#include "frontend/model.h"

namespace bertc::driver {

// Prints the description of `path` ("" for the machine) on stdout, as JSON with `json`. Returns
// the exit code.
int info(bool json, const std::string& path, const frontend::ModelDefinition& model);

}  // namespace bertc::driver
