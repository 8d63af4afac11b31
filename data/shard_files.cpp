// HDF5 shards checked against the config, read whole when their turn comes (see shard_files.h).
#include "data/shard_files.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xxhash.h>

#include "data/hdf5_shard.h"
#include "support/shell_word.h"

namespace bertc::data {

namespace {

// A recorded shard against the run: its vocabulary, largest token and making.
void check_record(const std::filesystem::path& f, const ShardRecord& r, int64_t vocab_size,
                  const std::optional<ShardExpectation>& expected) {
  const std::string again = "prepare the shards again with this run's settings from the text they came from (bertc "
                            "prepare-data CONFIG --input TEXT -o NEW_DIR)";
  if (r.max_token_id >= vocab_size)
    throw DataError(fmt::format("{}: holds token id {}, and [model] vocab_size is {}: shards of a larger vocabulary "
                                "({} tokens); train with that vocabulary and a vocab_size of {} or more, or {}",
                                f.string(), r.max_token_id, vocab_size, r.vocab_tokens, r.vocab_tokens, again));
  if (!expected) return;
  // (Both ways named with their files: which one works depends on what fixes the run's vocabulary,
  // --vocab or a model it starts from.)
  require_same_vocab(expected->vocab, {r.vocab_xxh3, r.vocab_tokens, r.vocab_path}, "shard " + f.string(),
                     fmt::format("prepare the shards again with this run's vocabulary from the text they came from "
                                 "(bertc prepare-data CONFIG --input TEXT --vocab {} -o NEW_DIR), or train with the "
                                 "shards' ({}) where the run may choose "
                                 "(--vocab)",
                                 support::shell_word(expected->vocab.path),
                                 r.vocab_path.empty() ? "its path is not recorded" : r.vocab_path));
  if (r.masked_lm_prob != expected->masked_lm_prob)
    // ({}: the shortest text that reads back as the same double; {:g}'s six digits said 0.15 for
    // 0.1500001, and "set masked_lm_prob = 0.15" changed nothing)
    throw DataError(fmt::format("{}: prepared with masked_lm_prob = {}, and [train] masked_lm_prob is {} (a shard's "
                                "masks are made when it is prepared): set masked_lm_prob = {}, or {}",
                                f.string(), r.masked_lm_prob, expected->masked_lm_prob, r.masked_lm_prob, again));
  if (r.do_lower_case != expected->do_lower_case)
    throw DataError(fmt::format("{}: prepared with do_lower_case = {}, and [train] do_lower_case is {}: set "
                                "do_lower_case = {}, or {}",
                                f.string(), r.do_lower_case, expected->do_lower_case, r.do_lower_case, again));
}

// What makes shards of one folder belong together: shape and record.
std::string kind_of(const ShardShape& s) {
  std::string kind = fmt::format("seq_len {}, {} predictions", s.seq_len, s.predictions);
  if (!s.record) return kind + ", no record of their vocabulary";
  const ShardRecord& r = *s.record;
  return kind + fmt::format(", vocabulary of {} tokens (xxh3 {}), masked_lm_prob {:g}, do_lower_case {}", r.vocab_tokens,
                            r.vocab_xxh3, r.masked_lm_prob, r.do_lower_case);
}

// Refuses shards of several kinds in one set, naming each kind with a shard of it: training on
// them would mix vocabularies or shapes (found before the first step, not an epoch in).
void refuse_mixed(const std::vector<std::filesystem::path>& files, const std::vector<ShardShape>& shapes) {
  std::map<std::string, std::vector<size_t>> kinds;
  for (size_t i = 0; i < shapes.size(); ++i) kinds[kind_of(shapes[i])].push_back(i);
  if (kinds.size() < 2) return;
  std::vector<std::string> listed, whole;
  for (const auto& [kind, members] : kinds) {
    listed.push_back(fmt::format("{} shard(s) of {} (such as {})", members.size(), kind, files[members.front()].string()));
    // (a kind whose sets prepare-data made are all here: moving the others out leaves a set that
    // trains; a part of a set left alone is refused next as incomplete, so that fix is said only
    // where it holds)
    std::map<std::string, std::pair<int64_t, std::set<int64_t>>> sets;
    for (size_t i : members)
      if (const auto& r = shapes[i].record; r && !r->set.empty()) sets[r->set].first = r->count, sets[r->set].second.insert(r->index);
    if (std::all_of(sets.begin(), sets.end(), [](const auto& set) {
          return static_cast<int64_t>(set.second.second.size()) == set.second.first;
        }))
      whole.push_back(files[members.front()].string());
  }
  throw DataError(fmt::format(
      "the shards are of {} kinds, prepared differently: {}. A run trains on shards of one kind: {}", kinds.size(),
      fmt::join(listed, "; "),
      whole.empty()
          ? "no kind here is a whole set of prepare-data's, so give --data the folder prepare-data wrote one kind "
            "into (its -o), or prepare the shards again (bertc prepare-data CONFIG --input TEXT -o NEW_DIR)"
          : fmt::format("keep the kind of {} (a whole set) and move the others out of the folder, or give --data "
                        "the folder prepare-data wrote one kind into (its -o)",
                        fmt::join(whole, " or "))));
}

// Refuses one shard twice in a set (a copy under another name, a link to another shard): its
// examples would be trained on twice as often as the rest's, without a word. Found by the file
// itself, by equal checksums (bertc's shards carry one beside them), or by the same place in the
// same set (a copy made without its checksum).
void refuse_duplicates(const std::vector<std::filesystem::path>& files, const std::vector<ShardShape>& shapes) {
  std::map<std::string, std::filesystem::path> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::filesystem::path& f = files[i];
    std::error_code ec;
    std::vector<std::string> keys = {"file " + std::filesystem::canonical(f, ec).string()};
    std::ifstream sum(f.string() + ".xxh3");
    if (std::string text; sum >> text) keys.push_back("checksum " + text);
    if (const auto& r = shapes[i].record; r && !r->set.empty())
      keys.push_back(fmt::format("record (shard {} of the {} bertc prepare-data made as set {})", r->index, r->count,
                                 r->set));
    for (const std::string& key : keys)
      if (const auto [it, fresh] = seen.emplace(key, f); !fresh) {
        const std::string kind = key.substr(0, key.find(' '));  // (a record is said whole: which set, which place)
        throw DataError(fmt::format("{} and {} are the same shard (the same {}): its examples would be trained on "
                                    "twice as often as the others'; remove one of them from the folder",
                                    it->second.string(), f.string(), kind == "record" ? key : kind));
      }
  }
}

// Refuses a set prepare-data made that lacks some of its shards (an interrupted copy, a lost file):
// its examples would be left out without a word. Sets are told apart by their id, so a folder may
// hold several whole sets.
void refuse_incomplete_sets(const std::vector<std::filesystem::path>& files, const std::vector<ShardShape>& shapes) {
  struct Set {
    int64_t count = 0;
    std::set<int64_t> present;
    std::filesystem::path example;
  };
  std::map<std::string, Set> sets;
  for (size_t i = 0; i < shapes.size(); ++i)
    if (shapes[i].record && !shapes[i].record->set.empty()) {
      const bool first = !sets.count(shapes[i].record->set);
      Set& set = sets[shapes[i].record->set];
      // (One shard's count against its set's: the set is complete only by the count all agree on.)
      if (!first && shapes[i].record->count != set.count)
        throw DataError(fmt::format("{} and {}: shards of one set that bertc prepare-data made together, and their "
                                    "records disagree on its size ({} and {} shards): one record is damaged (edited "
                                    "since it was made); make the shards again from their text (bertc prepare-data "
                                    "CONFIG --input TEXT -o NEW_DIR)",
                                    set.example.string(), files[i].string(), set.count, shapes[i].record->count));
      set.count = shapes[i].record->count;
      set.present.insert(shapes[i].record->index);
      set.example = files[i];
    }
  for (const auto& [id, set] : sets) {
    std::vector<std::string> missing;
    for (int64_t i = 0; i < set.count && missing.size() < 6; ++i)
      if (!set.present.count(i)) missing.push_back(missing.size() == 5 ? "..." : fmt::format("shard-{:05d}.hdf5", i));
    if (missing.empty()) continue;
    // (one shard given of a set whose others sit beside it: the folder is what to give; "copy them
    // back" sent the user looking for files that were there)
    if (files.size() == 1) {
      std::error_code ec;
      int64_t beside = 0;
      for (const auto& entry : std::filesystem::directory_iterator(files[0].parent_path(), ec))
        beside += entry.path() != files[0] && entry.path().extension() == ".hdf5";
      const std::string folder = files[0].parent_path().empty() ? "." : files[0].parent_path().string();
      if (beside > 0)
        throw DataError(fmt::format("{}: one shard of a set of {} that bertc prepare-data made, and {} more .hdf5 "
                                    "file(s) are beside it: train on the set, --data {} (the folder)",
                                    files[0].string(), set.count, beside, support::shell_word(folder)));
    }
    throw DataError(fmt::format(
        "{} of the {} shards that bertc prepare-data made with {} are not here ({}): their examples would be left "
        "out (a copy that did not finish? a name starting with '.', which is not read?). Copy them back beside the "
        "others, under any name not taken (a set's shards are found by their record, not their names); to train on "
        "part of some text on purpose, prepare that part as shards of its own (bertc prepare-data CONFIG --input PART "
        "-o NEW_DIR)",
        set.count - static_cast<int64_t>(set.present.size()), set.count, set.example.string(),
        fmt::join(missing, ", ")));
  }
}

// What a shard adds to the run's content identity (recorded in checkpoints, compared on resume):
// its checksum, from its .xxh3 or, for a shard prepare-data made that was copied without it, computed
// from its bytes, so that the same shards are the same data however they were copied. A shard from
// elsewhere (no record, never a checksum) is known by its size: hashing NVIDIA's gigabytes at every
// start would cost more than it proves.
std::string content_key(const std::filesystem::path& f, const ShardShape& s) {
  std::ifstream sum(f.string() + ".xxh3");
  if (std::string checksum; sum >> checksum) return checksum;
  if (s.record) return shard_checksum(f);
  std::error_code ec;
  return fmt::format("size {}", std::filesystem::file_size(f, ec));
}

// Refuses two sets prepare-data made from the same text (other --shards, seed or masking): the
// text's examples would be trained on twice, without a word.
void refuse_one_text_twice(const std::vector<std::filesystem::path>& files, const std::vector<ShardShape>& shapes) {
  std::map<std::string, std::pair<std::string, std::filesystem::path>> set_of_text;  // text -> (set, a shard of it)
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& r = shapes[i].record;
    if (!r || r->text.empty()) continue;
    const auto [it, fresh] = set_of_text.emplace(r->text, std::pair{r->set, files[i]});
    if (!fresh && it->second.first != r->set)
      throw DataError(fmt::format("{} and {} are shards of two sets bertc prepare-data made from the same text (sets "
                                  "{} and {}): its examples would be trained on twice; keep one set in the folder",
                                  it->second.second.string(), files[i].string(), it->second.first, r->set));
  }
}

}  // namespace

ShardFiles::ShardFiles(std::vector<std::filesystem::path> files, int64_t seq_len, int64_t predictions,
                       int64_t vocab_size, int64_t type_vocab_size, const std::optional<ShardExpectation>& expected,
                       const std::function<void(const std::string&)>& progress, const StopCheck& stop)
    : files_(std::move(files)), vocab_size_(vocab_size), type_vocab_size_(type_vocab_size), token_bound_(vocab_size) {
  if (expected && expected->vocab.tokens > 0) {
    run_vocab_ = expected->vocab;
    token_bound_ = std::min(vocab_size, expected->vocab.tokens);
  }
  if (files_.empty()) throw DataError("no shards to train on");
  std::vector<ShardShape> shapes;
  for (const auto& f : files_) shapes.push_back(read_shard_shape(f));
  refuse_mixed(files_, shapes);
  refuse_duplicates(files_, shapes);
  refuse_incomplete_sets(files_, shapes);
  refuse_one_text_twice(files_, shapes);
  size_t unrecorded = 0, unchecked = 0;
  for (size_t i = 0; i < files_.size(); ++i) {
    const std::filesystem::path& f = files_[i];
    const ShardShape& s = shapes[i];
    if (s.seq_len != seq_len && s.predictions != predictions)  // (both at once: one fix, not two in turn)
      throw DataError(fmt::format("{}: its examples are of {} tokens with {} predictions, and [train] seq_len is {} and "
                                  "max_predictions_per_seq {}: set seq_len = {} and max_predictions_per_seq = {} (or "
                                  "prepare shards of the config's)",
                                  f.string(), s.seq_len, s.predictions, seq_len, predictions, s.seq_len,
                                  s.predictions));
    if (s.seq_len != seq_len)
      throw DataError(fmt::format("{}: its examples are of {} tokens, and [train] seq_len is {}: set seq_len = {} (or "
                                  "prepare shards of {})",
                                  f.string(), s.seq_len, seq_len, s.seq_len, seq_len));
    if (s.predictions != predictions)
      throw DataError(fmt::format("{}: its examples have {} predictions, and [train] max_predictions_per_seq is {}: "
                                  "set max_predictions_per_seq = {}",
                                  f.string(), s.predictions, predictions, s.predictions));
    if (s.examples == 0) throw DataError(fmt::format("{}: the shard holds no examples", f.string()));
    if (s.record) check_record(f, *s.record, vocab_size, expected);
    else ++unrecorded;
    recorded_max_.push_back(s.record ? std::optional<int64_t>(s.record->max_token_id) : std::nullopt);
    std::error_code ec;
    if (s.record && !std::filesystem::exists(f.string() + ".xxh3", ec)) ++unchecked;
    counts_.push_back(s.examples);
    rows_.push_back(s.rows);
    content_ += content_key(f, s) + ";";
  }
  content_ = fmt::format("{:016x}", XXH3_64bits(content_.data(), content_.size()));
  if (unrecorded > 0) check_unrecorded(shapes, progress, stop);
  if (unchecked > 0) {
    read_unchecked(shapes, unchecked, progress, stop);
    notes_.push_back(fmt::format("{} of the {} shards were made by bertc prepare-data and have no checksum beside them "
                                 "(SHARD.xxh3: copied without it?): they were read whole before the first step, and "
                                 "held no damage that shows; copy the .xxh3 files with them, which check a shard in "
                                 "one pass",
                                 unchecked, files_.size()));
  }
}

void ShardFiles::check_unrecorded(const std::vector<ShardShape>& shapes,
                                  const std::function<void(const std::string&)>& progress, const StopCheck& stop) {
  size_t total = 0, done = 0;
  for (const ShardShape& s : shapes) total += !s.record;
  if (progress)
    progress(fmt::format("checking the token ids of {} shard(s) that record none (not made by this bertc's "
                         "prepare-data: NVIDIA's, or an older bertc's) before the first step",
                         total));
  const auto began = std::chrono::steady_clock::now();
  auto last_said = began;
  for (size_t i = 0; i < files_.size(); ++i) {
    if (shapes[i].record) continue;
    if (const auto outside = first_value_outside(files_[i], token_bound_, type_vocab_size_, stop))
      throw DataError(outside_message(files_[i].string(), *outside));
    ++done;
    if (progress && std::chrono::steady_clock::now() - last_said > std::chrono::seconds(2)) {
      last_said = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(last_said - began).count();
      progress(fmt::format("checked {} of {} shards ({:.0f} s; about {:.0f} s to go)", done, total, seconds,
                           seconds / static_cast<double>(done) * static_cast<double>(total - done)));
    }
  }
  if (progress)
    progress(fmt::format("checked {} shard(s) in {:.1f} s: their token ids and segments fit the model", total,
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()));
}

void ShardFiles::read_unchecked(const std::vector<ShardShape>& shapes, size_t count,
                                const std::function<void(const std::string&)>& progress, const StopCheck& stop) {
  if (progress)
    progress(fmt::format("reading the {} shard(s) without a checksum whole before the first step (damage in one was "
                         "found only when its turn came, mid-run)",
                         count));
  std::error_code ec;
  for (size_t i = 0; i < files_.size(); ++i) {
    if (!shapes[i].record || std::filesystem::exists(files_[i].string() + ".xxh3", ec)) continue;
    if (const int signal = stop_asked(stop)) throw Stopped(signal, "while reading the shards before the first step");
    try {
      (void)load(i);
    } catch (const DataError& e) {
      // (Leaving it out is no way on: its set would be short of it, which is refused.)
      throw DataError(fmt::format("{} — this shard has no .xxh3 beside it to have caught the damage: put back a good "
                                  "copy of it (with its .xxh3), or make the shards again from their text (bertc "
                                  "prepare-data CONFIG --input TEXT -o NEW_DIR) and train on those",
                                  e.what()));
    }
  }
}

std::string ShardFiles::outside_message(const std::string& where, const ShardValue& v) const {
  // (first_value_outside reads only shards without a record: NVIDIA's, which may be moved out)
  if (v.dataset == "masked_lm_positions") return repeated_position(where, v.example, v.value, /*recorded=*/false);
  if (v.value < 0)  // (no model size fits a negative id: the shard is damaged, or not NVIDIA's layout)
    return fmt::format("{}: dataset '{}', example {}: {} is negative, and ids and segments are 0 or more: the shard is "
                       "damaged or made by a tool of another layout; move it out of the folder, or make it again "
                       "(bertc prepare-data)",
                       where, v.dataset, v.example, v.value);
  if (v.dataset == "segment_ids")
    return fmt::format("{}: dataset 'segment_ids', example {}: segment {} is not below [model] type_vocab_size {}: "
                       "the shard was made for another model; move it out of the folder (or make it again with "
                       "bertc prepare-data)",
                       where, v.example, v.value, type_vocab_size_);
  if (v.value < vocab_size_ && run_vocab_)  // (a vocab_size padded past the vocabulary: rows no token has)
    return fmt::format("{}: dataset '{}', example {}: token {} is past the run's vocabulary {} (ids 0 to {}), though "
                       "below [model] vocab_size {}: no token of it has that id, so the shard was made with another "
                       "vocabulary (or is damaged); move it out of the folder, or make it again with this run's "
                       "vocabulary (bertc prepare-data)",
                       where, v.dataset, v.example, v.value, run_vocab_->describe(), run_vocab_->tokens - 1,
                       vocab_size_);
  return fmt::format("{}: dataset '{}', example {}: token {} is not below [model] vocab_size {}: the shard was made "
                     "with another vocabulary (or is damaged); move it out of the folder, or make it again with this "
                     "run's vocabulary (bertc prepare-data)",
                     where, v.dataset, v.example, v.value, vocab_size_);
}

void ShardFiles::check_token(size_t shard, const char* dataset, int64_t example, int64_t token) const {
  const std::string where = files_[shard].string();
  // (A recorded shard holds what its record says: more means its data or its record was edited.)
  if (recorded_max_[shard] && token > *recorded_max_[shard])
    throw DataError(fmt::format("{}: dataset '{}', example {}: token {} is past the largest the shard records "
                                "(bertc_max_token_id {}): the shard is damaged (its data or its record changed since "
                                "bertc prepare-data made it); put back a good copy of it (with its .xxh3), or make the "
                                "set again from its text (bertc prepare-data CONFIG --input TEXT -o NEW_DIR) and train "
                                "on that (one shard moved out, the rest of its set is refused as incomplete)",
                                where, dataset, example, token, *recorded_max_[shard]));
  if (token < 0 || token >= token_bound_) throw DataError(outside_message(where, {dataset, example, token}));
}

PackedExamples ShardFiles::load(size_t shard) const {
  RowPlan rows;
  return load_with_rows(shard, rows);
}

PackedExamples ShardFiles::load_with_rows(size_t shard, RowPlan& rows) const {
  PackedExamples examples = read_shard(files_[shard], &rows);
  const std::string where = files_[shard].string();
  // Scanned flat against one limit (the run's, and a recorded shard's own); only a refusal looks
  // for the example and which limit it passed.
  const int64_t limit = recorded_max_[shard] ? std::min(token_bound_, *recorded_max_[shard] + 1) : token_bound_;
  const std::vector<int32_t>& tokens = examples.all_tokens();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= limit)
      check_token(shard, "input_ids", static_cast<int64_t>(examples.example_of_token(i)), tokens[i]);
  const std::vector<int8_t>& segments = examples.all_segments();
  for (size_t i = 0; i < segments.size(); ++i)
    if (segments[i] < 0 || segments[i] >= type_vocab_size_)
      throw DataError(outside_message(where, {"segment_ids", static_cast<int64_t>(examples.example_of_token(i)), segments[i]}));
  const std::vector<int32_t>& labels = examples.all_labels();
  if (labels.empty())  // (MLM would learn nothing from it, and its loss would read 0)
    throw DataError(fmt::format("{}: no example of the shard has a masked prediction (masked_lm_positions all 0: "
                                "NVIDIA's reader ends an example's positions at the first 0): the shard was made "
                                "wrong; make it again (bertc prepare-data), or move it out of the folder",
                                where));
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= limit)
      check_token(shard, "masked_lm_ids", static_cast<int64_t>(examples.example_of_prediction(i)), labels[i]);
  return examples;
}

}  // namespace bertc::data
