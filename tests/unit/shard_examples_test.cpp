// data/shard_examples and data/shard_files: every epoch is every shard's every example once, in an order fixed by the
// seed and the epoch; two shards in memory at most while it is read through; shards that do not
// fit the config are refused before training, naming the file and the key.
#include <csignal>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "data/hdf5_shard.h"
#include "data/shard_examples.h"
#include "data/shard_files.h"
#include "data/vocab.h"
#include "refusal.h"

namespace bertc::data {
namespace {

// Shard s holds `sizes[s]` examples, example j of shard s marked by its token at position 1.
std::vector<std::filesystem::path> make_shards(const std::string& name, const std::vector<int>& sizes) {
  const auto dir = std::filesystem::temp_directory_path() / ("bertc-shard-examples-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> files;
  int mark = 10;
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::vector<Example> examples;
    for (int j = 0; j < sizes[s]; ++j) {
      Example e;
      e.tokens = {2, mark++, 3, 5, 3};
      e.segment_ids = {0, 0, 0, 1, 1};
      e.masked_positions = {1};
      e.masked_labels = {e.tokens[1]};
      examples.push_back(e);
    }
    files.push_back(dir / fmt::format("shard-{:05d}.hdf5", s));
    write_shard(files.back(), examples, 8, 2, 0);
  }
  return files;
}

// What a DataError says, or "(accepted)".
std::string refusal(const std::function<void()>& f) { return testing::refusal<DataError>(f); }

TEST(ShardedExamples, EveryEpochIsEveryExampleOnceInASeededOrder) {
  const auto files = make_shards("epochs", {5, 3, 4});
  const auto set = std::make_shared<ShardFiles>(files, 8, 2, 1000, 2);
  ShardedExamples a(set, 7), b(set, 7), other(set, 8);
  EXPECT_EQ(a.size(), 12);
  std::vector<int64_t> first, second, seeded;
  size_t most = 0;
  for (int64_t i = 0; i < 36; ++i) {
    const int64_t mark = a.example(i).tokens[1];
    (i < 12 ? first : i < 24 ? second : seeded).push_back(mark);
    EXPECT_EQ(b.example(i).tokens[1], mark);  // the same seed, the same order
    most = std::max(most, a.shards_in_memory());
  }
  EXPECT_LE(most, 2u);
  for (const auto* epoch : {&first, &second}) {
    std::vector<int64_t> sorted = *epoch;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t k = 0; k < 12; ++k) EXPECT_EQ(sorted[static_cast<size_t>(k)], 10 + k);
  }
  EXPECT_NE(first, second);  // each epoch shuffled anew
  std::vector<int64_t> others;
  for (int64_t i = 0; i < 12; ++i) others.push_back(other.example(i).tokens[1]);
  EXPECT_NE(others, first);
  // A jump (resuming at example 29) gives what reading through gave.
  ShardedExamples resumed(set, 7);
  EXPECT_EQ(resumed.example(29).tokens[1], seeded[29 - 24]);
}

// With rows (examples of 5 tokens, 3 a row in 16 tokens): every epoch is every example once, in
// rows of 3 while a shard has 3 left (pack_rows), the rows shuffled by the seed and the epoch, a
// jump (a resume) giving what reading through gave.
TEST(ShardedExamples, RowsHoldEveryExampleOnceAnEpoch) {
  const auto files = make_shards("rows", {5, 3, 4});
  const auto set = std::make_shared<ShardFiles>(files, 8, 2, 1000, 2);
  const RowCapacity capacity{16, 6, 3};
  ShardedExamples a(set, 7, capacity), b(set, 7, capacity);
  EXPECT_EQ(a.size(), 2 + 1 + 2);  // (5 = 3 + 2, 3, 4 = 3 + 1)
  EXPECT_EQ(a.examples_per_row(), 3);
  EXPECT_THROW(a.example(0), std::logic_error);  // (a source of rows is read by rows)
  std::vector<std::vector<int64_t>> rows;
  for (int64_t i = 0; i < 10; ++i) {
    std::vector<int64_t> marks;
    for (const Example& e : a.row(i)) marks.push_back(e.tokens[1]);
    rows.push_back(marks);
    std::vector<int64_t> again;
    for (const Example& e : b.row(i)) again.push_back(e.tokens[1]);
    EXPECT_EQ(again, marks);  // the same seed, the same rows in the same order
  }
  for (size_t epoch : {0u, 5u}) {
    std::vector<int64_t> marks;
    for (size_t r = epoch; r < epoch + 5; ++r) marks.insert(marks.end(), rows[r].begin(), rows[r].end());
    std::sort(marks.begin(), marks.end());
    for (int64_t k = 0; k < 12; ++k) EXPECT_EQ(marks.at(static_cast<size_t>(k)), 10 + k) << "epoch " << epoch / 5;
  }
  ShardedExamples resumed(set, 7, capacity);
  std::vector<int64_t> jumped;
  for (const Example& e : resumed.row(8)) jumped.push_back(e.tokens[1]);
  EXPECT_EQ(jumped, rows[8]);
}

// Rows a shard records (prepare-data with packing = "pack") are the rows trained, as recorded —
// here two of one example and one of two, where pack_rows would make two rows of two — while they
// fit the run's capacity; rows recorded for a larger one are placed again.
TEST(ShardedExamples, RowsAShardRecordsAreTheRowsTrained) {
  const auto dir = std::filesystem::temp_directory_path() / "bertc-shard-examples-recorded";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<Example> examples;
  for (int j = 0; j < 4; ++j) examples.push_back({{2, 10 + j, 3, 5, 3}, {0, 0, 0, 1, 1}, false, {1}, {10 + j}});
  const RowPlan plan{{16, 6, 3}, {{0}, {1}, {2, 3}}};
  write_shard(dir / "shard-00000.hdf5", examples, 16, 2, 0, std::nullopt, &plan);
  const auto set = std::make_shared<ShardFiles>(std::vector<std::filesystem::path>{dir / "shard-00000.hdf5"}, 16, 2, 1000, 2);
  ShardedExamples recorded(set, 7, RowCapacity{16, 6, 3});
  EXPECT_EQ(recorded.size(), 3);
  std::multiset<size_t> sizes;
  for (int64_t i = 0; i < 3; ++i) sizes.insert(recorded.row(i).size());
  EXPECT_EQ(sizes, (std::multiset<size_t>{1, 1, 2}));
  ShardedExamples placed_again(set, 7, RowCapacity{16, 6, 2});  // (rows of 3 do not fit 2: pack_rows)
  EXPECT_EQ(placed_again.size(), 2);
}

TEST(ShardedExamples, RefusesShardsThatDoNotFitTheConfig) {
  const auto files = make_shards("refusals", {2});
  EXPECT_NE(refusal([&] { ShardFiles(files, 16, 2, 1000, 2); }).find("[train] seq_len is 16: set seq_len = 8"),
            std::string::npos);
  EXPECT_NE(refusal([&] { ShardFiles(files, 8, 3, 1000, 2); }).find("set max_predictions_per_seq = 2"),
            std::string::npos);
  // These shards record no largest token (as NVIDIA's): their values are read and checked before
  // anything trains, not when the shard's turn comes (an epoch later).
  const std::string segments = refusal([&] { ShardFiles(files, 8, 2, 1000, 1); });  // (segment 1: past 1)
  EXPECT_NE(segments.find("dataset 'segment_ids', example 0: segment 1 is not below [model] type_vocab_size 1"),
            std::string::npos)
      << segments;
  const std::string why = refusal([&] { ShardFiles(files, 8, 2, 11, 2); });  // (token 11: past a vocabulary of 11)
  EXPECT_NE(why.find("dataset 'input_ids', example 1: token 11 is not below [model] vocab_size 11: the shard was made "
                     "with another vocabulary"),
            std::string::npos)
      << why;
  // ... and a label past the vocabulary where the tokens are not (a masked token's original).
  Example e;
  e.tokens = {2, 4, 3, 5, 3}, e.segment_ids = {0, 0, 0, 1, 1}, e.masked_positions = {1}, e.masked_labels = {40};
  write_shard(files[0].parent_path() / "label.hdf5", {e}, 8, 2, 0);
  const std::string label = refusal([&] { ShardFiles({files[0].parent_path() / "label.hdf5"}, 8, 2, 11, 2); });
  EXPECT_NE(label.find("dataset 'masked_lm_ids', example 0: token 40 is not below [model] vocab_size 11"),
            std::string::npos)
      << label;
  // A negative label is named as negative (no vocab_size fits it; the shard is damaged).
  e.masked_labels = {-100};
  write_shard(files[0].parent_path() / "negative.hdf5", {e}, 8, 2, 0);
  const std::string negative = refusal([&] { ShardFiles({files[0].parent_path() / "negative.hdf5"}, 8, 2, 11, 2); });
  EXPECT_NE(negative.find("dataset 'masked_lm_ids', example 0: -100 is negative, and ids and segments are 0 or more"),
            std::string::npos)
      << negative;
  // The check hears a stop signal between its blocks.
  try {
    ShardFiles(files, 8, 2, 1000, 2, std::nullopt, {}, [] { return SIGTERM; });
    ADD_FAILURE() << "a stop asked for while shards were checked was not heeded";
  } catch (const Stopped& s) {
    EXPECT_EQ(s.signal(), SIGTERM);
    EXPECT_NE(std::string(s.what()).find("while checking " + files[0].string()), std::string::npos) << s.what();
  }
}

// One shard twice in a set (a copy under another name, a link), and a shard with no masked
// prediction in any example (MLM would learn nothing, its loss read 0), are refused.
TEST(ShardedExamples, RefusesAShardTwiceAndAShardWithoutPredictions) {
  auto files = make_shards("twice", {2, 3});
  const auto dir = files[0].parent_path();
  std::filesystem::copy_file(files[0], dir / "shard-00002.hdf5");
  std::filesystem::copy_file(files[0].string() + ".xxh3", dir / "shard-00002.hdf5.xxh3");
  EXPECT_NE(refusal([&] { ShardFiles({files[0], files[1], dir / "shard-00002.hdf5"}, 8, 2, 1000, 2); })
                .find("shard-00000.hdf5 and " + (dir / "shard-00002.hdf5").string() + " are the same shard (the same checksum)"),
            std::string::npos);
  std::filesystem::create_symlink(files[1], dir / "shard-00003.hdf5");
  EXPECT_NE(refusal([&] { ShardFiles({files[1], dir / "shard-00003.hdf5"}, 8, 2, 1000, 2); }).find("(the same file)"),
            std::string::npos);
  // A set prepare-data made, one of its three shards missing (an interrupted copy); whole, it reads.
  std::vector<std::filesystem::path> set;
  for (int64_t i = 0; i < 3; ++i) {
    set.push_back(dir / fmt::format("set-{}.hdf5", i));
    Example e;
    e.tokens = {2, 10, 3, 5, 3}, e.segment_ids = {0, 0, 0, 1, 1}, e.masked_positions = {1}, e.masked_labels = {10 + i};
    write_shard(set.back(), {e}, 8, 2, 0, ShardRecord{"0123456789abcdef", 1000, -1, 0.15, true, "", "set-a", i, 3});
  }
  EXPECT_NE(refusal([&] { ShardFiles({set[0], set[2]}, 8, 2, 1000, 2); })
                .find("1 of the 3 shards that bertc prepare-data made with " + set[2].string() +
                      " are not here (shard-00001.hdf5)"),
            std::string::npos)
      << refusal([&] { ShardFiles({set[0], set[2]}, 8, 2, 1000, 2); });
  EXPECT_EQ(ShardFiles(set, 8, 2, 1000, 2).shards(), 3u);
  // No predictions: written with none.
  std::vector<Example> bare(3);
  for (Example& e : bare) e.tokens = {2, 10, 3, 5, 3}, e.segment_ids = {0, 0, 0, 1, 1};
  write_shard(dir / "bare.hdf5", bare, 8, 2, 0);
  ShardedExamples none(std::make_shared<ShardFiles>(std::vector{dir / "bare.hdf5"}, 8, 2, 1000, 2), 1);
  EXPECT_NE(refusal([&] { none.example(0); }).find("no example of the shard has a masked prediction"),
            std::string::npos);
}

}  // namespace
}  // namespace bertc::data
