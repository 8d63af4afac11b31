// Pretraining examples in the HDF5 layout of NVIDIA DeepLearningExamples' BERT (the shards its
// create_pretraining_data.py writes and its run_pretraining.py reads), through Debian's libhdf5:
//   input_ids            int32 [n, seq]    [CLS] A [SEP] B [SEP], masked, then padding
//   input_mask           int8  [n, seq]    1 for the example's tokens, 0 for padding
//   segment_ids          int8  [n, seq]    0 for A (with [CLS] and its [SEP]), 1 for B
//   masked_lm_positions  int32 [n, preds]  ascending, then 0 (position 0, [CLS], is never masked:
//                                          a reader stops at the first 0)
//   masked_lm_ids        int32 [n, preds]  the original tokens at those positions, then 0
//   next_sentence_labels int8  [n]         1 when B is a random sentence
// each gzip-compressed. Any integer type reads (HDF5 converts); anything else is refused.
// A shard bertc prepare-data made with [train] packing = "pack" also records the rows of several
// examples it placed them in (data/row_packing.h), beside the examples, which stay one a row as
// above (so NVIDIA's readers, and bertc with packing = "none", read it as any shard):
//   example_rows         int32 [rows, K]   each row's examples by their number in the shard, in the
//                                          order they are laid out, then -1 (K: examples a row at most)
// with attributes bertc_row_tokens and bertc_row_predictions, the tokens and masked positions a
// row was given.
// bertc's shards also carry, as attributes of the file's root group, what makes them compatible
// with a run beyond their shapes (ShardRecord): NVIDIA's readers ignore them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "data/packed_examples.h"
#include "data/pretraining_data.h"
#include "data/row_packing.h"
#include "data/stop_check.h"

namespace bertc::data {

// What a shard was made with, beyond its shape (seq_len and predictions): its vocabulary (hash and
// tokens: data/vocab_identity.h), its largest token id, and the settings its masking and tokens
// came from. Attributes bertc_vocab_xxh3, bertc_vocab_tokens, bertc_max_token_id,
// bertc_masked_lm_prob, bertc_do_lower_case, and bertc_vocab_path (where the vocabulary was read
// then: what to train with; absent in shards of the first version of the record), and its place in
// the set prepare-data made (bertc_shard_set, bertc_shard_index, bertc_shard_count: absent in
// older records), so that a folder missing a shard of a set is found, and the text it came from
// (bertc_text_xxh3: absent in older records), so that two sets of one text are found.
struct ShardRecord {
  std::string vocab_xxh3;
  int64_t vocab_tokens = 0;
  int64_t max_token_id = -1;  // of input_ids and masked_lm_ids; write_shard finds it
  double masked_lm_prob = 0;
  bool do_lower_case = true;
  std::string vocab_path;
  std::string set;               // one prepare-data run's shards: an id of its own ("": not recorded)
  int64_t index = -1, count = 0;  // this shard's place in the set, and the set's size
  std::string text;  // the xxh3 of the documents' tokens the set was made of ("": not recorded)
};

struct ShardShape {
  int64_t examples = 0, seq_len = 0, predictions = 0;
  std::optional<ShardRecord> record;  // nullopt: a shard from elsewhere (NVIDIA's), or an older bertc's
  std::optional<RowsPlaced> rows;      // nullopt: examples one a row only
};

// The xxh3 of the shard's bytes, as bertc writes it beside each shard in `path`.xxh3 (16 hex digits):
// a shard's identity however it was copied. Throws DataError when the file cannot be read.
std::string shard_checksum(const std::filesystem::path& path);

// Whether this bertc was built with HDF5 (BERTC_HDF5; the static GPU test build is not).
bool hdf5_available();

// A shard's file that could not be written out (write_shard): the system's error (ENOSPC, EDQUOT,
// EFBIG, EACCES...) and the file's size, for a caller that can say what room its whole work needs.
class ShardWriteFailed : public DataError {
 public:
  ShardWriteFailed(const std::string& what, int error, uint64_t bytes) : DataError(what), error(error), bytes(bytes) {}
  int error;
  uint64_t bytes;
};

// Writes `examples` (each at most seq_len tokens and `predictions` masked positions) as a shard,
// atomically: a temporary beside `path`, renamed over it once complete. `pad_id` fills input_ids
// after each example's tokens; beside it `path`.xxh3, its bytes' checksum; `record` (its
// max_token_id found here) as attributes. The file is made in memory by libhdf5 and written out
// by bertc, so that a write failure (a full disk) is bertc's to handle: libhdf5 never holds a file
// it failed to flush (which crashed it at exit). Throws ShardWriteFailed on a write failure, naming
// the file and the error, and DataError for an example that does not fit.
// `rows`: the rows of several examples they were placed in, recorded beside them (example_rows).
void write_shard(const std::filesystem::path& path, const std::vector<Example>& examples, int64_t seq_len,
                 int64_t predictions, int64_t pad_id, std::optional<ShardRecord> record = std::nullopt,
                 const RowPlan* rows = nullptr);

// The shard's shape, from its datasets' shapes (their data is not read), and its record. Throws DataError naming
// the file, and the dataset, when it is not a shard: its bytes not matching its .xxh3 file (where
// there is one: a shard bertc wrote; checked before libhdf5 opens it), not HDF5 or truncated (HDF5 checks the file's
// length against its header), a dataset missing, not of integers, or of a shape that does not
// agree with the others or is not a shard's.
ShardShape read_shard_shape(const std::filesystem::path& path);

// Every example of the shard; the same refusals as read_shard_shape, and for a dataset whose data
// cannot be read (a damaged file) or holds an impossible value (an input_mask that is not 1s then
// 0s, a masked position outside the example). Reads and writes may come from several threads.
// `rows`, where given, gets the rows of several examples the shard records (none: its rows empty),
// refused as damaged unless every example is in one row exactly and every row fits its capacity.
PackedExamples read_shard(const std::filesystem::path& path, RowPlan* rows = nullptr);

// A value of a shard that a run cannot take: its dataset, example (row) and value.
struct ShardValue {
  std::string dataset;
  int64_t example = -1, value = 0;
};

// The first token id (input_ids, masked_lm_ids) outside [0, vocab_size), segment (segment_ids)
// outside [0, type_vocab_size), or masked position an example holds twice (masked_lm_positions),
// of the shard; nullopt when there is none. Reads those datasets a
// block of rows at a time (the memory of a block, not of the shard), asking `stop` between blocks
// (Stopped). For shards that record no largest token id (NVIDIA's), checked before the first step.
// The refusal of an example's masked position given twice (no BERT shard maker repeats one: its
// token's loss would count twice). `recorded`: a shard of a set bertc prepare-data made, which
// cannot be left out of its set (the rest would be refused as incomplete): put back or made again.
std::string repeated_position(const std::string& where, int64_t example, int64_t position, bool recorded);

std::optional<ShardValue> first_value_outside(const std::filesystem::path& path, int64_t vocab_size,
                                              int64_t type_vocab_size, const StopCheck& stop = {});

}  // namespace bertc::data
