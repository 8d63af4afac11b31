// Unit tests for the tokenizer (cases from BERT's own tokenization tests) and pretraining data.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <fstream>
#include <limits>
#include <filesystem>

#include <set>

#include <fmt/format.h>

#include "data/packed_examples.h"
#include "data/pretraining_data.h"
#include "data/shard_examples.h"
#include "data/text_shards.h"

namespace bertc::data {
namespace {

Vocab small_vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "want", "##want", "##ed", "wa", "un",
                             "runn", "##ing", ",", "low", "lowest", "hello", "the", "cat", "sat", ".", "a", "dog", "ran"},
                            "test-vocab");
}

TEST(Tokenizer, BasicTokenization) {
  const Vocab v = small_vocab();
  EXPECT_EQ(Tokenizer(v, true).basic_tokens(" \tHeLLo!how  \n Are yoU?  "),
            (std::vector<std::string>{"hello", "!", "how", "are", "you", "?"}));
  EXPECT_EQ(Tokenizer(v, false).basic_tokens(" \tHeLLo!how  \n Are yoU?  "),
            (std::vector<std::string>{"HeLLo", "!", "how", "Are", "yoU", "?"}));
  // Accents stripped only when lower-casing; "\u00E9" is é.
  EXPECT_EQ(Tokenizer(v, true).basic_tokens("H\u00E9llo"), std::vector<std::string>{"hello"});
  EXPECT_EQ(Tokenizer(v, false).basic_tokens("H\u00E9llo"), std::vector<std::string>{"H\u00E9llo"});
  // CJK characters become words of their own; control characters vanish.
  EXPECT_EQ(Tokenizer(v, true).basic_tokens("ah\u535A\u63A8zz"), (std::vector<std::string>{"ah", "\u535A", "\u63A8", "zz"}));
  EXPECT_EQ(Tokenizer(v, true).basic_tokens("a\x01" "b\tc"), (std::vector<std::string>{"ab", "c"}));
  // "$" and "`" are ASCII punctuation for BERT though Unicode calls them symbols.
  EXPECT_EQ(Tokenizer(v, true).basic_tokens("a$b`c"), (std::vector<std::string>{"a", "$", "b", "`", "c"}));
  EXPECT_EQ(Tokenizer(v, true).basic_tokens("bad\xff utf8"), (std::vector<std::string>{"bad", "utf8"}));
}

TEST(Tokenizer, WordPieceGreedyLongestMatch) {
  const Vocab v = small_vocab();
  const Tokenizer t(v, true);
  EXPECT_EQ(t.wordpieces("unwanted"), (std::vector<std::string>{"un", "##want", "##ed"}));
  EXPECT_EQ(t.wordpieces("running"), (std::vector<std::string>{"runn", "##ing"}));
  EXPECT_EQ(t.wordpieces("unwantedx"), std::vector<std::string>{"[UNK]"});
  EXPECT_EQ(t.wordpieces(std::string(101, 'a')), std::vector<std::string>{"[UNK]"});  // too long
  EXPECT_EQ(t.encode("UNwant\u00E9d,running"), (std::vector<int64_t>{9, 6, 7, 12, 10, 11}));
}

TEST(Vocab, RefusesIncompleteOrDuplicateVocabularies) {
  EXPECT_THROW(Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]"}, "v"), DataError);
  try {
    Vocab::from_tokens({"[PAD]", "[UNK]", "a", "[CLS]", "[SEP]", "[MASK]", "a"}, "vocab.txt");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "vocab.txt:7: token 'a' appears twice (first on line 3)");
  }
  // Training text given as the vocabulary: named as text by its first line with a space inside (it
  // said "token '' appears twice", of its blank lines).
  try {
    Vocab::from_tokens({"the cat sat", "", "on the mat", ""}, "small.txt");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("small.txt:1: 'the cat sat' holds a space, and a WordPiece vocabulary is one "
                                         "token a line: this is not a vocabulary"),
              std::string::npos)
        << e.what();
  }
  // A special token with spaces around it (an editor's trailing spaces) is named as such.
  try {
    Vocab::from_tokens({"[PAD] ", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}, "vocab.txt");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("vocab.txt:1: the token is '[PAD] ', [PAD] with spaces around it"),
              std::string::npos)
        << e.what();
  }
  // Which vocabulary it is: its tokens in order, wherever they were read from.
  EXPECT_EQ(Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"}, "x").xxh3(),
            Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"}, "y").xxh3());
  EXPECT_NE(Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"}, "x").xxh3(),
            Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "b", "a"}, "x").xxh3());
}

std::vector<Document> documents() {
  const Vocab v = small_vocab();
  const Tokenizer t(v, true);
  std::vector<Document> docs;
  for (int d = 0; d < 20; ++d) {
    Document doc;
    for (int s = 0; s < 6; ++s) doc.push_back(t.encode(s % 2 ? "the cat sat ." : "a dog ran , hello the cat ."));
    docs.push_back(doc);
  }
  return docs;
}

// Examples of up to 32 tokens and 5 predictions: small enough to check by hand.
ExampleOptions short_examples() {
  ExampleOptions o;
  o.max_seq_length = 32;
  o.max_predictions_per_seq = 5;
  return o;
}

// Documents that differ: document d's sentences are ids of its own pattern (words of the vocab).
std::vector<Document> varied_documents() {
  std::vector<Document> docs;
  for (int64_t d = 0; d < 10; ++d) {
    Document doc;
    for (int64_t s = 0; s < 3 + d % 3; ++s) {
      std::vector<int64_t> sentence;
      for (int64_t k = 0; k < 4 + (d + s) % 5; ++k) sentence.push_back(5 + (d * 7 + s * 3 + k) % 18);
      doc.push_back(sentence);
    }
    docs.push_back(doc);
  }
  return docs;
}

TEST(PretrainingData, ExamplesHaveTheBertLayout) {
  const Vocab v = small_vocab();
  ExampleOptions o = short_examples();
  o.dupe_factor = 3;
  const auto examples = create_examples(documents(), v, o);
  ASSERT_GT(examples.size(), 50u);
  int64_t random_next = 0, masked = 0, tokens = 0;
  for (const Example& ex : examples) {
    ASSERT_LE(ex.tokens.size(), 32u);
    EXPECT_EQ(ex.tokens.front(), v.cls());
    EXPECT_EQ(ex.tokens.back(), v.sep());
    // Two structural [SEP]s, never masked (a random replacement may add another at a masked spot).
    std::vector<int64_t> unmasked = ex.tokens;
    for (int64_t p : ex.masked_positions) unmasked[p] = -1;
    EXPECT_EQ(std::count(unmasked.begin(), unmasked.end(), v.sep()), 2);
    const auto first_sep = std::find(unmasked.begin(), unmasked.end(), v.sep()) - unmasked.begin();
    for (size_t i = 0; i < ex.tokens.size(); ++i) EXPECT_EQ(ex.segment_ids[i], i <= size_t(first_sep) ? 0 : 1);
    EXPECT_LE(ex.masked_positions.size(), 5u);
    EXPECT_TRUE(std::is_sorted(ex.masked_positions.begin(), ex.masked_positions.end()));
    for (size_t i = 0; i < ex.masked_positions.size(); ++i) {
      EXPECT_GT(ex.masked_positions[i], 0);
      EXPECT_NE(ex.masked_labels[i], v.sep());
      EXPECT_NE(ex.masked_labels[i], v.cls());
    }
    random_next += ex.is_random_next;
    masked += static_cast<int64_t>(ex.masked_positions.size());
    tokens += static_cast<int64_t>(ex.tokens.size());
  }
  // About half the pairs are random (binomial over > 50 examples: +-20% is > 3 sigma).
  EXPECT_NEAR(double(random_next) / examples.size(), 0.5, 0.2);
  // 15% of tokens, rounded per example and capped at 5: between 10% and 20% overall here.
  EXPECT_GT(double(masked) / tokens, 0.10);
  EXPECT_LT(double(masked) / tokens, 0.20);
}

// A text of long lines (a paragraph, or the whole text, a line) loses most of its tokens to the cut
// that makes pairs fit seq_len: counted and said, with advice, instead of silently; and a sentence
// of 100k tokens is cut in linear time (it took quadratic time, erasing at a vector's front).
TEST(PretrainingData, TokensCutToFitAreCountedAndSaid) {
  const Vocab v = small_vocab();
  std::vector<Document> docs;
  for (int64_t d = 0; d < 4; ++d) docs.push_back({std::vector<int64_t>(d == 0 ? 100000 : 1000, 5 + d)});
  ExampleOptions o = short_examples();
  o.dupe_factor = 1;
  ExampleFigures figures;
  const auto examples = create_examples(docs, v, o, &figures);
  EXPECT_EQ(figures.tokens, 103000);  // (one-sentence documents: each pair's B is another's, not counted)
  EXPECT_GE(figures.tokens_cut, 103000 - static_cast<int64_t>(examples.size()) * 29);  // (29: 32 less 3 marks)
  const std::optional<std::string> said = cut_note(figures, 32, 512);
  ASSERT_TRUE(said);
  EXPECT_NE(said->find(fmt::format("{} of the 103000 tokens put into sentence pairs", figures.tokens_cut)),
            std::string::npos) << *said;
  EXPECT_NE(said->find("put one sentence a line"), std::string::npos) << *said;
  EXPECT_NE(said->find("or raise seq_len (up to max_position_embeddings = 512)"), std::string::npos) << *said;
  // At the model's positions a longer seq_len is refused: not advised.
  const std::optional<std::string> at_most = cut_note(figures, 32, 32);
  ASSERT_TRUE(at_most);
  EXPECT_EQ(at_most->find("raise seq_len"), std::string::npos) << *at_most;
  EXPECT_NE(at_most->find("seq_len is already the model's max_position_embeddings, 32"), std::string::npos) << *at_most;
  // Sentences of a few words, as text should be: a few tokens cut, said without the advice.
  ExampleFigures usual;
  create_examples(varied_documents(), v, short_examples(), &usual);
  EXPECT_GT(usual.tokens, 0);
  EXPECT_LT(usual.tokens_cut * 10, usual.tokens);
  const auto usual_said = cut_note(usual, 32, 512);
  EXPECT_TRUE(!usual_said || usual_said->find("put one sentence a line") == std::string::npos);
  EXPECT_FALSE(cut_note(ExampleFigures{100, 0}, 32, 512));
}

// A vocabulary whose path is not UTF-8 is refused when loaded: checkpoints record the path as
// JSON text, whose write would fail at the first checkpoint, after the steps before it.
TEST(Vocab, APathThatIsNotUtf8IsRefusedWhenLoaded) {
  const auto path = std::filesystem::temp_directory_path() / "bertc-data-test-bad\xffname.vocab";
  std::ofstream(path) << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncat\n";
  try {
    Vocab::load(path);
    ADD_FAILURE() << "a vocabulary path that is not UTF-8 was taken";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("the vocabulary's path is not UTF-8 text"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(PretrainingData, MaskingReplacesAsTheRecipeSays) {
  // With one long sentence pair per example, 80% of masked positions read [MASK], 10% keep the
  // original token and 10% a random one; labels always hold the original.
  const Vocab v = small_vocab();
  ExampleOptions o;
  o.max_seq_length = 64;
  o.max_predictions_per_seq = 20;
  o.dupe_factor = 20;
  int64_t as_mask = 0, total = 0;
  for (const Example& ex : create_examples(documents(), v, o))
    for (size_t i = 0; i < ex.masked_positions.size(); ++i, ++total) as_mask += ex.tokens[ex.masked_positions[i]] == v.mask();
  ASSERT_GT(total, 1000);
  EXPECT_NEAR(double(as_mask) / total, 0.8, 0.04);  // > 3 sigma of a binomial over > 1000 draws
}

TEST(PretrainingData, DeterministicAndBatchedInEpochs) {
  const Vocab v = small_vocab();
  const ExampleOptions o = short_examples();
  const auto a = create_examples(documents(), v, o);
  const auto b = create_examples(documents(), v, o);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tokens, b[i].tokens);
  // A stream over one text shard holds that shard's examples (the shard seed's).
  ExampleOptions shard_options = o;
  shard_options.seed = shard_seed(o.seed, 0);
  const auto expected = create_examples(documents(), v, shard_options);
  const BatchStream stream(std::make_shared<ShardedExamples>(
                               std::make_shared<TextShards>(documents(), v, o, 1, "test-text", "text_shards"), 7),
                           4, 32, 5, v.pad());
  ASSERT_EQ(stream.examples(), static_cast<int64_t>(expected.size()));
  const Batch first = stream.batch(3), again = stream.batch(3);
  EXPECT_EQ(first.input_ids, again.input_ids);
  EXPECT_EQ(first.input_ids.size(), 4u * 32);
  // Padding: ids [PAD], mask 0, prediction weights 0 past each example's real predictions.
  for (int64_t r = 0; r < 4; ++r) {
    const int64_t real = std::count(first.attention_mask.begin() + r * 32, first.attention_mask.begin() + r * 32 + 32, 1);
    for (int64_t i = real; i < 32; ++i) EXPECT_EQ(first.input_ids[r * 32 + i], v.pad());
    const int64_t predicted = std::count(first.masked_lm_weights.begin() + r * 5, first.masked_lm_weights.begin() + r * 5 + 5, 1.0f);
    for (int64_t i = predicted; i < 5; ++i) EXPECT_EQ(first.masked_lm_weights[r * 5 + i], 0.0f);
  }
  // One epoch's full batches are examples of the set, none twice more often than it holds them.
  auto row = [](const std::vector<int64_t>& ids, size_t begin, size_t n) {
    return std::vector<int64_t>(ids.begin() + begin, ids.begin() + begin + n);
  };
  std::multiset<std::vector<int64_t>> all;
  for (const Example& ex : expected) {
    std::vector<int64_t> padded = ex.tokens;
    padded.resize(32, v.pad());
    all.insert(padded);
  }
  const int64_t per_epoch = stream.examples() / 4;
  for (int64_t k = 0; k < per_epoch; ++k) {
    const Batch batch = stream.batch(k);
    for (size_t r = 0; r < 4; ++r) {
      const auto it = all.find(row(batch.input_ids, r * 32, 32));
      ASSERT_NE(it, all.end()) << "micro-batch " << k << " row " << r << " is no example of the set";
      all.erase(it);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(all.size()), stream.examples() - per_epoch * 4);
  // The last micro-batch whose examples' numbers fit is read; past it (or below 0) refused, where
  // k x 4 wrapped to another micro-batch's examples (2^62 was micro-batch 0's).
  EXPECT_EQ(stream.last_micro_batch(), (std::numeric_limits<int64_t>::max() - 3) / 4);
  EXPECT_EQ(stream.batch(stream.last_micro_batch()).input_ids.size(), 4u * 32);
  EXPECT_THROW(stream.batch(stream.last_micro_batch() + 1), DataError);
  EXPECT_THROW(stream.batch(int64_t{1} << 62), DataError);
  EXPECT_THROW(stream.batch(-1), DataError);
  // At batch size 1 the last micro-batch is 2^63 - 1 itself (its one example's number).
  const BatchStream single(std::make_shared<ShardedExamples>(
                               std::make_shared<TextShards>(documents(), v, o, 1, "test-text", "text_shards"), 7),
                           1, 32, 5, v.pad());
  EXPECT_EQ(single.last_micro_batch(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(single.batch(single.last_micro_batch()).input_ids.size(), 32u);
}

TEST(PretrainingData, PackedExamplesAreTheExamplesInOrder) {
  const Vocab v = small_vocab();
  const ExampleOptions o = short_examples();
  const auto plain = create_examples(documents(), v, o);
  const PackedExamples packed = create_packed_examples(documents(), v, o);
  ASSERT_EQ(packed.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    const Example e = packed[i];
    EXPECT_EQ(e.tokens, plain[i].tokens) << i;
    EXPECT_EQ(e.segment_ids, plain[i].segment_ids) << i;
    EXPECT_EQ(e.masked_positions, plain[i].masked_positions) << i;
    EXPECT_EQ(e.masked_labels, plain[i].masked_labels) << i;
    EXPECT_EQ(e.is_random_next, plain[i].is_random_next) << i;
  }
  // Several times smaller than the vectors (4 + 1 bytes a token against 16 and the headers;
  // measured 3.2x here, where examples are short and headers weigh less than in real data).
  uint64_t vector_bytes = 0;
  for (const Example& e : plain)
    vector_bytes += sizeof(Example) + 8 * (e.tokens.size() + e.segment_ids.size() + e.masked_positions.size() +
                                           e.masked_labels.size());
  EXPECT_LT(packed.bytes() * 5 / 2, vector_bytes);
  Example too_big = plain[0];
  too_big.segment_ids[0] = 300;  // not an int8
  PackedExamples refused;
  refused.push_back(plain[1]);
  EXPECT_THROW(refused.push_back(too_big), DataError);
  ASSERT_EQ(refused.size(), 1u);  // the refused example left nothing behind
  refused.push_back(plain[2]);
  EXPECT_EQ(refused[1].tokens, plain[2].tokens);
  EXPECT_EQ(refused[1].segment_ids, plain[2].segment_ids);
}

TEST(TextShards, DocumentDGoesToShardDModNWithTheShardsSeed) {
  const Vocab v = small_vocab();
  const ExampleOptions o = short_examples();
  const std::vector<Document> docs = varied_documents();
  const TextShards shards(docs, v, o, 3, "test-text", "[train] text_shards", 2);
  ASSERT_EQ(shards.shards(), 3u);
  for (size_t s = 0; s < 3; ++s) {
    std::vector<Document> part;
    for (size_t d = s; d < docs.size(); d += 3) part.push_back(docs[d]);
    ExampleOptions so = o;
    so.seed = shard_seed(o.seed, static_cast<int64_t>(s));
    const auto expected = create_examples(part, v, so);
    const PackedExamples made = shards.load(s);
    ASSERT_EQ(shards.examples(s), static_cast<int64_t>(expected.size()));
    ASSERT_EQ(made.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(made[i].tokens, expected[i].tokens) << s << " " << i;
    if (s > 0) {  // (another shard's documents, or seed, would give other examples)
      ExampleOptions other = o;
      other.seed = shard_seed(o.seed, 0);
      EXPECT_NE(create_examples(part, v, other)[0].tokens, made[0].tokens);
    }
  }
  try {
    TextShards(docs, v, o, static_cast<int64_t>(docs.size()) + 1, "test-text", "[train] text_shards");
    ADD_FAILURE() << "more shards than documents accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("set [train] text_shards between 1 and"), std::string::npos) << e.what();
  }
}

// One document: its "random next" sentences could only be its own (half the labels wrong): refused.
TEST(TextShards, OneDocumentIsRefused) {
  const Vocab v = small_vocab();
  try {
    TextShards({varied_documents().front()}, v, short_examples(), 1, "one.txt", "[train] text_shards");
    ADD_FAILURE() << "a text of one document was taken";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("one.txt: 1 document: next-sentence prediction takes its random sentences "
                                         "from another document, and there is none"),
              std::string::npos)
        << e.what();
  }
}

TEST(TextShards, AutomaticShardsFollowTokensAndLeaveDocumentsEach) {
  EXPECT_EQ(TextShards::automatic_shards(varied_documents()), 1);  // a few tokens: one shard
  constexpr int64_t Mi = 1 << 20;
  EXPECT_EQ(TextShards::automatic_shards(1000, 8 * Mi), 4);      // 4 shards of 2 Mi tokens
  EXPECT_EQ(TextShards::automatic_shards(1000, 8 * Mi + 1), 5);  // (a part shard counts)
  // 100 long documents (book files without blank lines): one shard, not 50 of 2 documents each.
  EXPECT_EQ(TextShards::automatic_shards(100, 100 * Mi), 1);
  // 640 of them: 10 shards of 64 documents, though the tokens would make 320.
  EXPECT_EQ(TextShards::automatic_shards(640, 640 * Mi), 10);
}

TEST(TextShards, TrainedThroughShardedExamplesEveryEpochIsEveryExampleOnce) {
  const Vocab v = small_vocab();
  const ExampleOptions o = short_examples();
  const auto shards = std::make_shared<TextShards>(varied_documents(), v, o, 3, "test-text", "[train] text_shards", 2);
  std::multiset<std::vector<int64_t>> all;
  for (size_t s = 0; s < 3; ++s) {
    const PackedExamples made = shards->load(s);
    for (size_t i = 0; i < made.size(); ++i) all.insert(made[i].tokens);
  }
  const ShardedExamples source(shards, 11);
  ASSERT_EQ(source.size(), static_cast<int64_t>(all.size()));
  ASSERT_EQ(source.shards(), 3);
  std::vector<std::vector<int64_t>> first, second;
  size_t most = 0;
  for (int64_t i = 0; i < 2 * source.size(); ++i) {
    (i < source.size() ? first : second).push_back(source.example(i).tokens);
    most = std::max(most, source.shards_in_memory());
  }
  EXPECT_LE(most, 2u);
  for (const auto* epoch : {&first, &second})
    EXPECT_EQ(std::multiset<std::vector<int64_t>>(epoch->begin(), epoch->end()), all);
  EXPECT_NE(first, second);  // each epoch shuffled anew
  // A jump into the second epoch (a resume) gives what reading through gave.
  const ShardedExamples resumed(shards, 11);
  const int64_t at = source.size() + source.size() / 2;
  EXPECT_EQ(resumed.example(at).tokens, second[static_cast<size_t>(at - source.size())]);
}

}  // namespace
}  // namespace bertc::data
