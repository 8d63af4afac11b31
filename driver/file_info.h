// bertc info on what training makes and reads, other than a compiled program: a checkpoint, a
// run folder, a Hugging Face model folder, weights or a micro-batch (safetensors).
#pragma once

#include <ostream>
#include <string>

namespace bertc::driver {

// Writes what the folder `path` holds to `out` (--json: the records whole): a run folder's
// checkpoints and its newest one's record (its checksums verified), or a Hugging Face model
// folder's config.json and its weights' record. Throws std::invalid_argument for another folder,
// naming what info reads.
void describe_folder(const std::string& path, bool json, std::ostream& out);

// Writes what the safetensors file `path` is and records: a bertc checkpoint's record (its
// checksums verified first: a damaged file is no record to show), or another safetensors file's
// kind (Hugging Face weights, bertc export's, a micro-batch) with its vocabulary record. Throws
// std::invalid_argument for a file that is not safetensors, naming what it is where its first
// bytes say.
void describe_safetensors(const std::string& path, bool json, std::ostream& out);

}  // namespace bertc::driver
