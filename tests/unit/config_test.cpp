// Unit tests for config loading: values land in the right fields; bad configs are refused with
// the location, the key and the reason.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "run_config/config.h"

namespace bertc::run_config {
namespace {

std::string error_of(const std::string& toml, std::span<const ExtraKey> extra = {}) {
  try {
    parse_config(toml, "test.toml", extra);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string error_of_file(const std::string& source) {
  try {
    parse_config("", source);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Config, ReadsEverySection) {
  Config c = parse_config(R"(
name = "my-bert"
[model]
hidden_size = 256
num_attention_heads = 4
hidden_dropout_prob = 0
layer_norm_eps = 1e-5
[train]
batch_size = 2
seq_len = 64
max_predictions_per_seq = 10
[compile]
dropout = false
)", "test.toml");
  EXPECT_EQ(c.name, "my-bert");
  EXPECT_EQ(c.model.hidden_size, 256);
  EXPECT_EQ(c.model.head_size(), 64);
  EXPECT_EQ(c.model.hidden_dropout_prob, 0.0);  // an integer is accepted for a number
  EXPECT_EQ(c.model.layer_norm_eps, 1e-5);
  EXPECT_EQ(c.model.vocab_size, 30522);  // default (BERT-base)
  EXPECT_EQ(c.train.batch_size, 2);
  EXPECT_EQ(c.train.max_predictions_per_seq, 10);
  EXPECT_FALSE(c.compile.dropout);
}

TEST(Config, NameDefaultsToTheFileStem) {
  EXPECT_EQ(parse_config("", "configs/bert-small.toml").name, "bert-small");
}

// The name is the run's folder under checkpoints/: one that would leave it, be it, or look like
// another (blank, invisible, reversed) is refused, at the key; any visible name is taken.
TEST(Config, NamesThatAreNoFolderOfTheirOwnAreRefused) {
  for (const char* name : {"", ".", "..", "../x", "a/b", "a\\b", "-rf", ".hidden", " ", "x ", " x", "\\u00a0",
                           "\\u3000", "a\\u200bb", "\\ufeffx", "a\\u202eb", "x\\u0085y", "tab\\there"})
    EXPECT_NE(error_of(fmt::format("name = \"{}\"\n", name)).find("test.toml:1:8: name = "), std::string::npos) << name;
  for (const char* name : {"bert-tiny", "données_2", "模型", "run 3"})
    EXPECT_EQ(parse_config(fmt::format("name = \"{}\"\n", name), "test.toml").name, name);
  // A file's name that would be one is refused too, naming the key to set.
  EXPECT_NE(error_of_file("configs/ .toml").find("the run's name, from the file's name, starts or ends with a space: set "
                                                 "name = "),
            std::string::npos)
      << error_of_file("configs/ .toml");
  // One spelling of a name: "café" with its accent as a character of its own is another folder
  // that looks the same; refused naming the composed spelling to write.
  EXPECT_NE(error_of("name = \"cafe\u0301\"\n").find("not in Unicode's composed form (NFC)"), std::string::npos);
  EXPECT_NE(error_of("name = \"cafe\u0301\"\n").find("write name = \"caf\u00e9\""), std::string::npos)
      << error_of("name = \"cafe\u0301\"\n");
  EXPECT_EQ(parse_config("name = \"caf\u00e9\"\n", "test.toml").name, "caf\u00e9");
  // NUL in a path would end it, naming another file.
  EXPECT_NE(error_of("[train]\ndata = \"corpus.txt\\u0000.junk\"\n").find("[train] data holds a NUL character"),
            std::string::npos);
}

TEST(Config, RefusesUnknownKeysWithASuggestion) {
  EXPECT_EQ(error_of("[model]\nnum_hiden_layers = 3\n"),
            "test.toml:2:1: unknown key 'num_hiden_layers' in [model]; did you mean 'num_hidden_layers'?");
  EXPECT_EQ(error_of("[optimizer]\nlr = 1\n"),
            "test.toml:1:2: unknown top-level key 'optimizer' (expected name, [model], [train], [compile] or [finetune])");
  EXPECT_EQ(error_of("[train]\nzzz = 1\n"), "test.toml:2:1: unknown key 'zzz' in [train]");
}

TEST(Config, RefusesWrongTypesAndRanges) {
  EXPECT_EQ(error_of("[model]\nhidden_size = \"768\"\n"),
            "test.toml:2:15: [model] hidden_size must be an integer, found string '768'");
  EXPECT_EQ(error_of("[model]\nnum_hidden_layers = 0\n"),
            "test.toml:2:21: [model] num_hidden_layers must be positive, found 0");
  EXPECT_EQ(error_of("[model]\nattention_probs_dropout_prob = -0.1\n"),
            "test.toml:2:32: [model] attention_probs_dropout_prob must be a probability in [0, 1), found -0.1");
  EXPECT_EQ(error_of("[compile]\ndropout = 1\n"),
            "test.toml:2:11: [compile] dropout must be true or false, found integer 1");
  EXPECT_EQ(error_of("name = 3\n"), "test.toml:1:8: 'name' must be a string");
}

TEST(Config, RefusesInconsistentShapes) {
  EXPECT_EQ(error_of("[model]\nhidden_size = 768\nnum_attention_heads = 10\n"),
            "test.toml:3:23: [model] hidden_size = 768 is not divisible by num_attention_heads = 10: pick a head "
            "count that divides it (BERT uses hidden_size / 64)");
  EXPECT_NE(error_of("[model]\nhidden_size = 100\n").find("num_attention_heads is not set, so its default applies"),
            std::string::npos);
  EXPECT_NE(error_of("[train]\nseq_len = 513\n").find("exceeds [model] max_position_embeddings = 512"),
            std::string::npos);
  EXPECT_NE(error_of("[train]\nseq_len = 16\nmax_predictions_per_seq = 20\n").find("exceeds seq_len = 16"),
            std::string::npos);
  // Pretraining's examples are sentence pairs: one token type is refused here (it failed at step 1,
  // blaming the data); a fine-tuning config of single sentences may have one.
  EXPECT_NE(error_of("[model]\ntype_vocab_size = 1\n").find("type_vocab_size = 1, and pretraining's examples are "
                                                         "sentence pairs"),
            std::string::npos);
  EXPECT_NO_THROW(parse_config("[model]\ntype_vocab_size = 1\n[finetune]\ntask = \"sequence-classification\"\n"
                               "num_labels = 2\n",
                               "test.toml", {}));
}

// Rows of several examples ([train] packing): what they are given, and what is refused with its fix.
TEST(Config, PackingRowsOfSeveralExamples) {
  const Config c = parse_config("[train]\nseq_len = 128\npacking = \"pack\"\n", "test.toml", {});
  EXPECT_EQ(c.train.examples_per_row(), 3);
  // (BERT masks floor(128 x 0.15) + 3 = 22 of three examples sharing 128 tokens at most, below 3 x 20)
  EXPECT_EQ(c.train.row_predictions(), 22);
  EXPECT_EQ(c.model_settings().batch.examples_per_row, 3);
  EXPECT_EQ(c.model_settings().batch.max_predictions_per_seq, 22);
  const Config none = parse_config("[train]\nseq_len = 128\n", "test.toml", {});
  EXPECT_EQ(none.train.examples_per_row(), 0);
  EXPECT_EQ(none.train.row_predictions(), 20);
  EXPECT_NE(error_of("[train]\npacking = \"yes\"\n").find("packing"), std::string::npos);
  EXPECT_NE(error_of("[train]\nseq_len = 16\nmax_predictions_per_seq = 2\npacking = \"pack\"\n"
                     "packing_max_examples = 4\n")
                .find("seq_len = 16 holds 3 at most; set 3 or fewer"),
            std::string::npos);
  EXPECT_NE(error_of("[train]\npacking = \"pack\"\n[finetune]\ntask = \"sequence-classification\"\n")
                .find("[train] packing = \"pack\" places pretraining examples into rows, and this config fine-tunes"),
            std::string::npos);
}

// 1-bit Adam's and LAMB's settings together: its warm-up with it and not without, AdamW or LAMB, pretraining, no
// fp16 loss scaling; each refusal names the key to change.
TEST(Config, OneBitAdamsSettings) {
  const Config c = parse_config("[train]\ngradient_compression = \"onebit\"\nonebit_warmup_steps = 40\n", "test.toml", {});
  EXPECT_EQ(c.train.gradient_compression, distributed::Compression::OneBit);
  EXPECT_EQ(c.train.onebit_warmup_steps, 40);
  auto has = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  has(error_of("[train]\nsteps = 100\ngradient_compression = \"onebit\"\n"), "needs onebit_warmup_steps");
  has(error_of("[train]\nsteps = 100\ngradient_compression = \"onebit\"\n"), "set onebit_warmup_steps = 20");
  has(error_of("[train]\nonebit_warmup_steps = 5\n"), "is 1-bit Adam's (and LAMB's) warm-up, and gradient_compression is \"none\"");
  // (1-bit LAMB: LAMB's direction is Adam's; Lion's is not)
  EXPECT_EQ(parse_config("[train]\noptimizer = \"lamb\"\ngradient_compression = \"onebit\"\nonebit_warmup_steps = 5\n",
                         "test.toml", {}).train.optimizer.kind,
            ir::OpKind::Lamb);
  has(error_of("[train]\noptimizer = \"lion\"\ngradient_compression = \"onebit\"\nonebit_warmup_steps = 5\n"),
      "is 1-bit Adam and 1-bit LAMB, and the optimizer is lion: set optimizer = \"adamw\" or \"lamb\"");
  has(error_of("[train]\ngradient_compression = \"onebit\"\nonebit_warmup_steps = 5\n[compile]\nprecision = \"fp16\"\n"),
      "with [compile] precision = \"fp16\" (loss scaling) is not supported yet");
  has(error_of("[train]\ngradient_compression = \"onebit\"\nonebit_warmup_steps = 5\n"
               "[finetune]\ntask = \"sequence-classification\"\n"),
      "is built for pretraining, and this config fine-tunes ([finetune]): use gradient_compression = \"none\"");
}

// ZeRO stage 1: 0 or 1; only with fp32 sums over MPI or Gloo, without loss scaling, for pretraining.
TEST(Config, ZeroStageSettings) {
  EXPECT_EQ(parse_config("[train]\nzero_stage = 1\n", "test.toml", {}).train.zero_stage, 1);
  auto has = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  has(error_of("[train]\nzero_stage = 2\n"), "ZeRO stages 2 and 3 (gradients and params sharded too) are not built");
  has(error_of("[train]\nzero_stage = 1\ngradient_compression = \"fp16\"\n"),
      "set gradient_compression = \"none\", or zero_stage = 0");
  has(error_of("[train]\nzero_stage = 1\nallreduce = \"nccl\"\n"), "set allreduce = \"auto\", or zero_stage = 0");
  has(error_of("[train]\nzero_stage = 1\n[compile]\nprecision = \"fp16\"\n"),
      "with precision fp16 (loss scaling; what precision = \"auto\" takes on sm_70 and sm_75) is not built");
  has(error_of("[train]\nzero_stage = 1\n[finetune]\ntask = \"sequence-classification\"\n"),
      "whose ranks each keep the whole optimizer state: set zero_stage = 0");
}

TEST(Config, SyntaxErrorsAreLocated) {
  const std::string msg = error_of("[model]\nhidden_size = = 3\n");
  EXPECT_EQ(msg.rfind("test.toml:2:", 0), 0u) << msg;
  EXPECT_NE(msg.find("TOML syntax error"), std::string::npos) << msg;
}

TEST(Config, ExtraKeysOfACustomModel) {
  const std::vector<ExtraKey> extra = {{"gated_ffn", true, "a bool"}, {"ffn_scale", 2.5, "a number"}};
  Config c = parse_config("[model]\ngated_ffn = false\n", "test.toml", extra);
  EXPECT_FALSE(c.model_settings().extra_value<bool>("gated_ffn"));
  EXPECT_EQ(c.model_settings().extra_value<double>("ffn_scale"), 2.5);  // default
  EXPECT_THROW(c.model_settings().extra_value<int64_t>("gated_ffn"), ConfigError);
  EXPECT_THROW(c.model_settings().extra_value<bool>("undeclared"), ConfigError);
  EXPECT_EQ(error_of("[model]\nffn_scale = \"big\"\n", extra),
            "test.toml:2:13: [model] ffn_scale has the wrong type (string 'big'); a number");
  EXPECT_EQ(error_of("[model]\ngated_fn = true\n", extra),
            "test.toml:2:1: unknown key 'gated_fn' in [model]; did you mean 'gated_ffn'?");
}

TEST(Config, TrainKeysWithChoicesAndPaths) {
  Config c = parse_config("[train]\noptimizer = \"lamb\"\nlr_decay = \"polynomial\"\ndata = \"text\"\n"
                          "vocab = \"/abs/vocab.txt\"\n", "configs/run.toml");
  EXPECT_EQ(c.train.optimizer.kind, ir::OpKind::Lamb);
  EXPECT_EQ(c.train.lr_decay, LrDecay::Polynomial);
  EXPECT_EQ(c.resolve(c.train.data), std::filesystem::path("configs/text"));  // beside the config file
  EXPECT_EQ(c.resolve(c.train.vocab), std::filesystem::path("/abs/vocab.txt"));
  EXPECT_EQ(error_of("[train]\noptimizer = \"sgd\"\n"),
            "test.toml:2:13: [train] optimizer must be one of adamw, lamb, lion, found \"sgd\"");
  EXPECT_EQ(error_of("[train]\nweight_decay = -1\n"), "test.toml:2:16: [train] weight_decay must be >= 0, found -1");
  EXPECT_EQ(error_of("[train]\ngradient_accumulation_steps = 0\n"),
            "test.toml:2:31: [train] gradient_accumulation_steps must be positive, found 0");
  EXPECT_NE(error_of("[model]\nvocab_size = 10\npad_token_id = 10\n").find("pad_token_id = 10 is not below vocab_size"),
            std::string::npos);
}

TEST(Config, MissingFile) {
  try {
    load_config("/nonexistent/bert.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/bert.toml: cannot open config file (does it exist?)");
  }
}

}  // namespace
}  // namespace bertc::run_config
