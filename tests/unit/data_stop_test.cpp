// data/stop_check.h: long data work (reading and tokenizing text, counting text shards' examples,
// prepare-data's rounds, bertc vocab's counting and merging) stops where it is when asked, saying
// how far it got, and leaves nothing.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "data/hdf5_shard.h"
#include "data/prepare_shards.h"
#include "data/pretraining_data.h"
#include "data/text_shards.h"
#include "data/vocab_trainer.h"
#include "scratch_folder.h"

namespace bertc::data {
namespace {

Vocab small_vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran", "."},
                            "test-vocab");
}

// `documents` documents of three sentences, a blank line after each: 4 lines a document.
std::filesystem::path text_of(const std::string& name, int documents) {
  const auto path = testing::scratch_in("bertc-data-stop-test", name);
  std::ofstream out(path);
  for (int d = 0; d < documents; ++d) out << "the cat sat .\nthe dog ran .\nthe cat ran .\n\n";
  return path;
}

// Reports `signal` from its call number `from` on (1 first), counting every call.
struct SignalFrom {
  int from, signal;
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  int operator()() const { return ++*calls >= from ? signal : 0; }
};

std::string stopped_at(const std::function<void()>& work, int expected_signal) {
  try {
    work();
  } catch (const Stopped& s) {
    EXPECT_EQ(s.signal(), expected_signal);
    return s.what();
  }
  return "(not stopped)";
}

TEST(DataStop, ReadingTextStopsAtTheLineTheSignalCameAt) {
  const auto text = text_of("read.txt", 10);
  const Vocab v = small_vocab();
  const Tokenizer tokenizer(v, true);
  const SignalFrom stop{7, SIGTERM};
  const std::string said = stopped_at([&] { load_documents(text, tokenizer, {}, stop); }, SIGTERM);
  EXPECT_NE(said.find("while tokenizing " + text.string() + " (line 7)"), std::string::npos) << said;
  EXPECT_EQ(*stop.calls, 7);  // (asked no more once told: the rest of the text was not read)
  EXPECT_EQ(load_documents(text, tokenizer, {}, SignalFrom{1000, SIGTERM}).size(), 10u);  // (not asked: all read)
}

TEST(DataStop, CountingTextShardsStopsBetweenShards) {
  const Vocab v = small_vocab();
  const Tokenizer tokenizer(v, true);
  std::vector<Document> docs = load_documents(text_of("count.txt", 12), tokenizer);
  const SignalFrom stop{2, SIGINT};  // (one thread: the first shard counted, then the signal)
  const std::string said = stopped_at(
      [&] { TextShards(docs, v, ExampleOptions{}, 3, "corpus", "[train] text_shards", 1, stop); }, SIGINT);
  EXPECT_NE(said.find("while counting the examples of corpus (1 of 3 shards counted)"), std::string::npos) << said;
  EXPECT_EQ(TextShards(docs, v, ExampleOptions{}, 3, "corpus", "[train] text_shards", 1, SignalFrom{99, SIGINT})
                .shards(),
            3u);
}

TEST(DataStop, VocabTrainingStopsWhileCountingAndWhileMerging) {
  const auto text = text_of("vocab.txt", 10);  // 30 lines of text, 10 blank
  const Tokenizer tokenizer(small_vocab(), true);
  const SignalFrom counting{5, SIGTERM};
  const std::string said = stopped_at([&] { count_words(text, tokenizer, 1, {}, {}, counting); }, SIGTERM);
  EXPECT_NE(said.find("while counting words ("), std::string::npos) << said;
  EXPECT_EQ(*counting.calls, 5);  // (the rest of the text was not read)
  const auto counts = count_words(text, tokenizer, 1);
  EXPECT_EQ(counts.at("cat"), 20);  // (not asked: every line counted)
  // min_frequency 1: every pair merges, so there are merges to stop between.
  const VocabTrainOptions options{100, 1, 1000};
  const std::string merging = stopped_at([&] { train_wordpiece(counts, options, SignalFrom{1, SIGINT}); }, SIGINT);
  EXPECT_NE(merging.find("while merging ("), std::string::npos) << merging;
  EXPECT_GT(train_wordpiece(counts, options, SignalFrom{1000000, SIGINT}).merges, 0);
}

// prepare-data reads its text (one call a line), then tokenizes the round's documents on its
// threads: a signal then stops the round between documents, not after the whole round.
TEST(DataStop, PrepareDataStopsInsideARoundAndLeavesNothing) {
  if (!hdf5_available()) GTEST_SKIP() << "built without HDF5";
  const int documents = 40;
  PrepareOptions o;
  o.input = text_of("prepare.txt", documents);
  o.output = testing::scratch_in("bertc-data-stop-test", "shards");
  std::filesystem::create_directories(o.output);  // (a folder given: it stays, empty)
  o.shards = 2, o.threads = 1;
  o.examples.max_seq_length = 16;
  const Vocab v = small_vocab();
  const Tokenizer tokenizer(v, true);
  PrepareCallbacks callbacks;
  const SignalFrom stop{4 * documents + 1, SIGHUP};  // (the first call after the last line's)
  callbacks.stop_requested = stop;
  const std::string said = stopped_at([&] { prepare_shards(o, tokenizer, v, callbacks); }, SIGHUP);
  EXPECT_NE(said.find("while tokenizing a round of 40 documents"), std::string::npos) << said;
  EXPECT_LE(*stop.calls, 4 * documents + 2);  // (the worker's call, and the one after the round)
  EXPECT_TRUE(std::filesystem::is_empty(o.output)) << "prepare-data left files behind when stopped";
}

}  // namespace
}  // namespace bertc::data
