// bertc prepare-data: text (one sentence a line, a blank line between documents; a file or a
// folder of .txt and .txt.gz files) into N self-contained HDF5 shards in NVIDIA's layout
// (data/hdf5_shard.h), in two streaming passes with memory bounded by an option:
//   1. the text is read in rounds of documents, tokenized on every core, and document d's
//      sentences appended to shard d mod N's scratch file (token ids) — the text is read once;
//   2. each shard's documents become examples by today's rules (create_examples: the random next
//      sentence from the same shard), seeded by the seed and the shard's number, and are written
//      out; as many shards at once as the memory bound and the cores allow.
// The shards depend on the text, the vocabulary, the options and N, never on the threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "data/pretraining_data.h"
#include "data/row_packing.h"
#include "data/stop_check.h"
#include "data/tokenizer.h"

namespace bertc::data {

struct PrepareOptions {
  std::filesystem::path input, output;  // output: a folder with no shards in it
  int64_t shards = 16;
  ExampleOptions examples;
  uint64_t memory_bytes = uint64_t{1} << 30;
  int threads = 0;  // 0: every core
  // Rows of several examples ([train] packing = "pack"): each shard's examples placed by
  // pack_rows and the rows recorded beside them (data/hdf5_shard.h example_rows).
  std::optional<RowCapacity> rows;
};

struct PrepareProgress {
  int pass = 1;                        // 1: tokenizing, 2: writing shards
  uint64_t bytes_read = 0, bytes_total = 0;
  int64_t documents = 0, tokens = 0;   // so far (pass 1)
  int64_t shards_done = 0, shards = 0, examples = 0;  // pass 2
  double seconds = 0;
};

struct PrepareReport {
  int64_t documents = 0, sentences = 0, tokens = 0, examples = 0;
  int64_t rows = 0;  // rows of several examples the shards record (PrepareOptions::rows; else 0)
  int64_t largest_shard_examples = 0;
  ExampleFigures figures;  // tokens cut to fit seq_len
  uint64_t planned_peak_bytes = 0;  // the estimate the passes kept under memory_bytes
  int shards_at_once = 0;
  double seconds = 0;
};

// What a run tells, and asks, of its caller; each may be empty.
struct PrepareCallbacks {
  std::function<void(const PrepareProgress&)> progress;  // from both passes, about twice a second
  std::function<void(const std::string&)> note;          // what is worth saying of the input (data/text_input.h)
  StopCheck stop_requested;                              // a signal asking the run to stop, or 0
};

// Throws DataError (naming the file, or the option to change) for missing input, an output folder
// that already holds shards, too few documents for N shards, or shards too large for the memory
// bound; Stopped (data/stop_check.h), saying where it was, when asked to stop. A run that does not finish
// leaves no shard, no scratch, no lock, and no folder it made.
PrepareReport prepare_shards(const PrepareOptions& options, const Tokenizer& tokenizer, const Vocab& vocab,
                             const PrepareCallbacks& callbacks = {});

// The shard files of a folder (shard-NNNNN.hdf5, and any other *.hdf5 / *.h5): shorter names first,
// then in name order (shard-99999 before shard-100000). Throws DataError for an entry named as a
// shard that is not a file (a folder, a broken link), and for a checksum (.xxh3) whose shard is
// missing: either would leave examples out without a word.
// `left_out`, when given, gets the names of the other entries, which are not read (hidden ones, a
// file of another extension, a folder), so that the caller can say them.
std::vector<std::filesystem::path> shard_files(const std::filesystem::path& folder,
                                               std::vector<std::string>* left_out = nullptr);

// Throws DataError when a bertc prepare-data is writing into `folder` now (its .prepare-lock is
// held): its shards are not all there yet, and training on them would read a part.
void refuse_folder_being_prepared(const std::filesystem::path& folder);

}  // namespace bertc::data
