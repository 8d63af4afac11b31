// Fine-tuning task files (data/task_data.h): the BERT pair layout, labels by name or number,
// GLUE-style columns, token tags on first pieces, longest-first cutting, errors naming file and
// line, and the bucketed batches of an epoch.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "data/task_data.h"

namespace bertc::data {
namespace {

// ids: 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK] 5 the 6 cat 7 sat 8 dog 9 ran 10 ##s 11 .
Vocab vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran", "##s", "."},
                            "test");
}

class TaskFiles : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }
  TaskData read(const std::filesystem::path& p, const TaskFormat& f) { return read_task_file(p, f, tokenizer_, vocab_); }
  // The message of the DataError reading `p` throws.
  std::string error(const std::filesystem::path& p, const TaskFormat& f) {
    try {
      read(p, f);
    } catch (const DataError& e) {
      return e.what();
    }
    return "no error";
  }

  std::filesystem::path dir_ = std::filesystem::path(::testing::TempDir()) / "task_data_test";
  Vocab vocab_ = vocab();
  Tokenizer tokenizer_{vocab_, true};
  void SetUp() override { std::filesystem::create_directories(dir_); }
};

TEST_F(TaskFiles, PairsHaveTheBertLayoutAndNamedLabels) {
  TaskFormat f;
  f.text_a = "sentence1", f.text_b = "sentence2", f.label_names = {"no", "yes"};
  const auto p = write("pairs.tsv", "id\tsentence1\tsentence2\tlabel\n7\tThe cat sat.\tthe dogs ran\tyes\n\n8\tcat\tdog\tno\r\n");
  const TaskData d = read(p, f);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.examples[0].ids, (std::vector<int32_t>{2, 5, 6, 7, 11, 3, 5, 8, 10, 9, 3}));
  EXPECT_EQ(d.examples[0].types, (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(d.examples[0].label, 1);
  EXPECT_EQ(d.examples[1].label, 0);
  EXPECT_EQ(d.examples[1].line, 4);  // (the blank line is skipped, its number kept)
}

TEST_F(TaskFiles, ColumnsByNumberWithoutAHeaderAndNumberedLabels) {
  TaskFormat f;
  f.tsv_header = false, f.text_a = "2", f.label = "0", f.num_labels = 3;
  const TaskData d = read(write("cola.tsv", "2\tsrc\tthe cat\n0\tsrc\tdog\n"), f);
  EXPECT_EQ(d.examples[0].label, 2);
  EXPECT_EQ(d.examples[1].ids, (std::vector<int32_t>{2, 8, 3}));
  f.label = "label";
  EXPECT_NE(error(write("cola2.tsv", "0\tx\tcat\n"), f).find("give the column's 0-based number"), std::string::npos);
}

TEST_F(TaskFiles, PairsAreCutLongestFirst) {
  TaskFormat f;
  f.text_a = "a", f.text_b = "b", f.max_len = 8;  // room for 5 tokens of text
  const TaskData d = read(write("cut.tsv", "a\tb\tlabel\nthe cat sat the cat\tthe dog\t1\n"), f);
  // a loses tokens until it is no longer than b: 5+2 -> 4+2 -> 3+2.
  EXPECT_EQ(d.examples[0].ids, (std::vector<int32_t>{2, 5, 6, 7, 3, 5, 8, 3}));
  EXPECT_EQ(d.truncated, 1);
}

TEST_F(TaskFiles, RegressionTargetsAndJsonLines) {
  TaskFormat f;
  f.kind = LabelKind::Real, f.text_a = "s";
  const TaskData d = read(write("sts.jsonl", "{\"s\": \"the cat\", \"label\": 3.5}\n{\"s\": \"dog\", \"label\": -1}\n"), f);
  EXPECT_FLOAT_EQ(d.examples[0].target, 3.5f);
  EXPECT_FLOAT_EQ(d.examples[1].target, -1.0f);
  // Spaces around a number in a TSV cell are a spreadsheet's: read as the number.
  f.text_a = "sentence";
  const TaskData t = read(write("sts.tsv", "sentence\tlabel\nthe cat\t 2.5 \n"), f);
  EXPECT_FLOAT_EQ(t.examples[0].target, 2.5f);
}

TEST_F(TaskFiles, TagsGoToEachWordsFirstPiece) {
  TaskFormat f;
  f.kind = LabelKind::Tags, f.text_a = "tokens", f.label = "tags", f.label_names = {"O", "B-ANIMAL"}, f.num_labels = 2;
  const TaskData d = read(write("ner.jsonl", R"({"tokens": ["The", "dogs", "ran"], "tags": ["O", "B-ANIMAL", 0]})" "\n"), f);
  const TaskExample& e = d.examples[0];
  EXPECT_EQ(e.ids, (std::vector<int32_t>{2, 5, 8, 10, 9, 3}));  // dogs = dog ##s
  EXPECT_EQ(e.tags, (std::vector<int32_t>{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(e.tag_weights, (std::vector<float>{0, 1, 1, 0, 1, 0}));
  EXPECT_NE(error(write("ner.tsv", "tokens\ttags\n"), f).find("reads .jsonl"), std::string::npos);
  EXPECT_NE(error(write("empty.jsonl", R"({"tokens": [], "tags": []})" "\n"), f).find("empty.jsonl:1: no word of the line makes a token"),
            std::string::npos);
  // A word that makes no token would take its tag with it, silently.
  EXPECT_NE(error(write("blank.jsonl", R"({"tokens": ["The", "   "], "tags": ["O", "B-ANIMAL"]})" "\n"), f)
                .find("blank.jsonl:1: word 2 (\"   \") makes no token"),
            std::string::npos);
}

TEST_F(TaskFiles, ErrorsNameTheFileTheLineAndTheFix) {
  TaskFormat f;
  f.label_names = {"no", "yes"};
  const auto missing = write("missing.tsv", "text\tlabel\ncat\tyes\n");
  EXPECT_NE(error(missing, f).find("missing.tsv:1: no column 'sentence' ([finetune] text_a); the header names: 'text', "
                                   "'label'"),
            std::string::npos) << error(missing, f);
  EXPECT_NE(error(write("unknown.tsv", "sentence\tlabel\ncat\tyes\ndog\tmaybe\n"), f)
                .find("unknown.tsv:3: label 'maybe' is not one of [finetune] labels (no, yes)"),
            std::string::npos);
  // A label with a comma: no [finetune] labels can name it (commas part the names), so "add it there"
  // is not advised.
  const std::string comma = error(write("comma.tsv", "sentence\tlabel\ncat\tyes,no\n"), f);
  EXPECT_NE(comma.find("comma.tsv:2: label 'yes,no' is not one of [finetune] labels (no, yes), and holds a comma, which "
                       "parts the names there, so no class can be named so: rename it in the file"),
            std::string::npos) << comma;
  EXPECT_EQ(comma.find("add it there"), std::string::npos) << comma;
  EXPECT_NE(error(write("short.tsv", "sentence\tlabel\ncat\n"), f).find("short.tsv:2: 1 fields"), std::string::npos);
  // A class number out of range, with the labels named: the names are what the config sets (it
  // named num_labels, which it did not).
  EXPECT_NE(error(write("range-named.jsonl", "{\"sentence\": \"cat\", \"label\": 2}\n"), f)
                .find("label 2 is outside 0..1 (the 2 classes [finetune] labels names)"),
            std::string::npos)
      << error(write("range-named.jsonl", "{\"sentence\": \"cat\", \"label\": 2}\n"), f);
  f.label_names.clear();
  EXPECT_NE(error(write("range.tsv", "sentence\tlabel\ncat\t2\n"), f).find("label 2 is outside 0..1"), std::string::npos);
  EXPECT_NE(error(write("name.tsv", "sentence\tlabel\ncat\tyes\n"), f).find("[finetune] labels = "), std::string::npos);
  // A label that is a number but not a whole one of 64 bits is named as the number it is (it said
  // "must be a class number or name, found number").
  for (const char* label : {"1.0", "2.5"})
    EXPECT_NE(error(write("real.jsonl", fmt::format("{{\"sentence\": \"cat\", \"label\": {}}}\n", label)), f)
                  .find(fmt::format("found {}: write the class as a whole number", label)),
              std::string::npos)
        << error(write("real.jsonl", fmt::format("{{\"sentence\": \"cat\", \"label\": {}}}\n", label)), f);
  EXPECT_NE(error(write("bad.jsonl", "{\"sentence\": \"cat\", \"label\": 1}\n{oops\n"), f).find("bad.jsonl:2: not a JSON object"),
            std::string::npos);
  EXPECT_NE(error(write("empty.tsv", "sentence\tlabel\n"), f).find("no examples"), std::string::npos);
  EXPECT_NE(error(write("data.csv", "x"), f).find(".tsv (GLUE-style columns) or .jsonl"), std::string::npos);
  // Empty with a header expected: no examples (not "the file has no header").
  EXPECT_NE(error(write("blank.tsv", "\n\n"), f).find("blank.tsv: no examples in the file (it is empty"),
            std::string::npos) << error(write("blank.tsv", "\n\n"), f);
}

TEST_F(TaskFiles, TextAsEditorsSaveItAndSurprisesRefused) {
  TaskFormat f;
  // A UTF-8 byte-order mark before the header (Windows editors write one) is not part of its first name.
  const TaskData bom = read(write("bom.tsv", "\xef\xbb\xbfsentence\tlabel\ncat\t1\n"), f);
  EXPECT_EQ(bom.examples.size(), 1u);
  // UTF-16 (what Excel's "Unicode text" writes) is refused naming the conversion.
  std::string utf16 = "\xff\xfe";
  for (char c : std::string("sentence\tlabel\ncat\t1\n")) utf16 += std::string{c, '\0'};
  EXPECT_NE(error(write("utf16.tsv", utf16), f).find("text in UTF-16 (a UTF-16 byte-order mark), and bertc reads UTF-8: "
                                                     "convert it (iconv -f UTF-16 -t UTF-8"),
            std::string::npos) << error(write("utf16.tsv", utf16), f);
  // ... to a name the task reader takes (a .tsv stays a .tsv) and not taken (an earlier run's
  // conversion is not written over), which then reads.
  std::filesystem::remove(dir_ / "utf16.utf8.tsv");
  EXPECT_NE(error(write("utf16.tsv", utf16), f).find("utf16.utf8.tsv)"), std::string::npos)
      << error(write("utf16.tsv", utf16), f);
  EXPECT_EQ(read(write("utf16.utf8.tsv", "sentence\tlabel\ncat\t1\n"), f).examples.size(), 1u);
  EXPECT_NE(error(write("utf16.tsv", utf16), f).find("utf16.utf8-1.tsv)"), std::string::npos)
      << error(write("utf16.tsv", utf16), f);
  // A row with more fields than the header (a tab inside a text): refused, not the text cut at the tab.
  EXPECT_NE(error(write("tab.tsv", "label\tsentence\n1\tthe cat\n0\tthe\tdog ran\n"), f)
                .find("tab.tsv:3: 3 fields separated by tabs, and the header has 2: a tab inside a text would cut it"),
            std::string::npos)
      << error(write("tab.tsv", "label\tsentence\n1\tthe cat\n0\tthe\tdog ran\n"), f);
  // An example with no text (an empty field, or only characters the tokenizer drops): refused.
  EXPECT_NE(error(write("notext.tsv", "sentence\tlabel\ncat\t1\n \t0\n"), f)
                .find("notext.tsv:3: the text 'sentence' holds no words"),
            std::string::npos);
  EXPECT_NE(error(write("notext.jsonl", "{\"sentence\": \"\", \"label\": 1}\n"), f)
                .find("notext.jsonl:1: the text 'sentence' holds no words"),
            std::string::npos);
  // Two columns of the name a key reads: which one is meant is not guessed.
  EXPECT_NE(error(write("twice.tsv", "sentence\tlabel\tsentence\ncat\t1\tdog\n"), f)
                .find("twice.tsv:1: the header names two columns 'sentence' (columns 0 and 2, from 0)"),
            std::string::npos);
  // A regression target whose squared error would overflow the float32 loss: refused, not "loss is inf".
  f.kind = LabelKind::Real;
  for (const char* target : {"1e39", "3e20", "-1e16"})
    EXPECT_NE(error(write("huge.tsv", fmt::format("sentence\tlabel\ncat\t{}\n", target)), f)
                  .find(fmt::format("huge.tsv:2: regression target {} is too large for training", target)),
              std::string::npos)
        << target;
  EXPECT_EQ(read(write("fine.tsv", "sentence\tlabel\ncat\t1e15\n"), f).examples.at(0).target, 1e15f);
  // Past a double's range: too large; below its smallest, 0 in both formats (TSV called it too large).
  EXPECT_NE(error(write("huge.tsv", "sentence\tlabel\ncat\t1e999\n"), f).find("huge.tsv:2: regression target 1e999 is too large"),
            std::string::npos);
  EXPECT_EQ(read(write("tiny.tsv", "sentence\tlabel\ncat\t1e-400\n"), f).examples.at(0).target, 0.0f);
  // A written plus sign, as a spreadsheet keeps it, is the number (it was "not a finite number").
  EXPECT_EQ(read(write("plus.tsv", "sentence\tlabel\ncat\t+3\n"), f).examples.at(0).target, 3.0f);
  EXPECT_NE(error(write("plusminus.tsv", "sentence\tlabel\ncat\t+-3\n"), f).find("is not a finite number"),
            std::string::npos);
  EXPECT_EQ(read(write("tiny.jsonl", "{\"sentence\": \"cat\", \"label\": 1e-400}\n"), f).examples.at(0).target, 0.0f);
  // A number no double holds, in a key bertc does not even read: named with its file and line.
  EXPECT_NE(error(write("overflow.jsonl", "{\"sentence\": \"cat\", \"label\": 1}\n{\"sentence\": \"cat\", \"label\": 1, \"x\": 1e999}\n"), f)
                .find("overflow.jsonl:2: [json.exception.out_of_range.406] number overflow parsing '1e999': a number beyond"),
            std::string::npos);
  EXPECT_NE(error(write("huge.jsonl", "{\"sentence\": \"cat\", \"label\": 1e39}\n"), f).find("is too large for training"),
            std::string::npos);
  // A key twice in one object (a parser keeps one of them): which label is meant is not guessed.
  f.kind = LabelKind::Class;
  EXPECT_NE(error(write("twice.jsonl", "{\"sentence\": \"cat\", \"label\": 0, \"label\": 1}\n"), f)
                .find("twice.jsonl:1: the key 'label' is there twice: keep one"),
            std::string::npos);
}

std::vector<TaskExample> examples_of_lengths(const std::vector<size_t>& lengths) {
  std::vector<TaskExample> out;
  for (size_t n : lengths) {
    TaskExample e;
    e.ids.assign(n, 5);
    e.types.assign(n, 0);
    e.label = static_cast<int32_t>(out.size() % 2);
    out.push_back(e);
  }
  return out;
}

// A JSON number where [finetune] labels names numerals ("1,0") is the label of that name, as its
// string is (JSON 1 was the class at position 1, named "0": flipped, silently); a number naming
// none of them is refused; with names that are no numerals a number is still a class position.
TEST_F(TaskFiles, NumbersAreTheLabelsTheyNameWhereLabelsAreNumerals) {
  TaskFormat f;
  f.text_a = "s", f.label_names = {"1", "0"}, f.num_labels = 2;
  const TaskData d = read(write("num.jsonl", "{\"s\": \"the cat\", \"label\": 1}\n{\"s\": \"dog\", \"label\": \"1\"}\n"
                                             "{\"s\": \"dog\", \"label\": 0}\n"),
                          f);
  ASSERT_EQ(d.examples.size(), 3u);
  EXPECT_EQ(d.examples[0].label, 0);  // (the class named "1")
  EXPECT_EQ(d.examples[1].label, 0);
  EXPECT_EQ(d.examples[2].label, 1);
  f.label_names = {"1", "2", "3"}, f.num_labels = 3;
  EXPECT_NE(error(write("zero.jsonl", "{\"s\": \"dog\", \"label\": 0}\n"), f)
                .find("zero.jsonl:1: label 0 is a number, and [finetune] labels names numerals (1, 2, 3) but not 0: write the "
                      "label as one of its names (1, 2, 3)"),
            std::string::npos);
  f.label_names = {"neg", "pos"}, f.num_labels = 2;
  EXPECT_EQ(read(write("pos.jsonl", "{\"s\": \"dog\", \"label\": 1}\n"), f).examples[0].label, 1);
}

TEST(TaskBatches, EveryExampleOnceInTheShortestBucketThatHoldsIt) {
  const std::vector<int64_t> buckets = {4, 8, 16};
  const auto examples = examples_of_lengths({3, 4, 5, 8, 9, 16, 2, 7, 12, 3, 3});
  EXPECT_EQ(bucket_of(4, buckets), 0u);
  EXPECT_EQ(bucket_of(5, buckets), 1u);
  EXPECT_EQ(bucket_of(16, buckets), 2u);
  for (bool shuffle : {false, true}) {
    const auto plan = plan_batches(examples, buckets, 2, 7, 1, shuffle);
    std::multiset<size_t> seen;
    for (const PlannedBatch& b : plan) {
      EXPECT_LE(b.examples.size(), 2u);
      for (size_t i : b.examples) {
        seen.insert(i);
        EXPECT_EQ(b.bucket, bucket_of(static_cast<int64_t>(examples[i].ids.size()), buckets));
      }
    }
    EXPECT_EQ(seen.size(), examples.size());
    EXPECT_EQ(std::set<size_t>(seen.begin(), seen.end()).size(), examples.size());
    // 5 examples fit 4 (3 batches), 3 fit 8 (2), 3 fit 16 (2): the count an epoch's steps are.
    EXPECT_EQ(plan.size(), 7u);
  }
  // The same seed and epoch give the same order; another epoch another.
  auto order = [&](int64_t epoch) {
    std::vector<size_t> all;
    for (const PlannedBatch& b : plan_batches(examples, buckets, 2, 7, epoch, true))
      all.insert(all.end(), b.examples.begin(), b.examples.end());
    return all;
  };
  EXPECT_EQ(order(1), order(1));
  EXPECT_NE(order(1), order(2));
}

// The padding an epoch computes, worked out by hand: lengths 3 4 5 8 9 16 2 7 12 3 3 (72 tokens)
// at batch 2 in buckets 4, 8, 16 are 3 batches of 4, 2 of 8 and 2 of 16 (2 rows each): 24 + 32 +
// 64 = 120 positions; at 16 alone, 6 batches of 2 rows of 16: 192.
TEST(TaskBatches, TheirFillIsCountedWithAndWithoutTheBuckets) {
  const auto examples = examples_of_lengths({3, 4, 5, 8, 9, 16, 2, 7, 12, 3, 3});
  const BatchFill f = batch_fill(examples, {4, 8, 16}, 2);
  EXPECT_EQ(f.tokens, 72);
  EXPECT_EQ(f.positions, 120);
  EXPECT_EQ(f.positions_longest_only, 192);
}

TEST(TaskBatches, ShortBatchesArePaddedWithRowsOfWeightZero) {
  const auto examples = examples_of_lengths({3, 2});
  const TaskBatch b = make_task_batch({&examples[0], &examples[1]}, LabelKind::Class, 3, 4);
  EXPECT_EQ(b.input_ids, (std::vector<int32_t>{5, 5, 5, 0, 5, 5, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(b.attention_mask, (std::vector<int32_t>{1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(b.labels, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(b.weights, (std::vector<float>{1, 1, 0}));
  EXPECT_EQ(b.examples, 2);
}

}  // namespace
}  // namespace bertc::data
