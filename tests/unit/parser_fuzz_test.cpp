// Truncated and mutated IR text through the parser and verifier: every input ends in a graph
// or an ir::Error, never a crash. Built with ASan and UBSan (tests/CMakeLists.txt), so memory and
// arithmetic faults fail the test even where the output would look fine.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "frontend/bert.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/stats.h"
#include "ir/verifier.h"
#include "run_config/config.h"

namespace bertc::ir {
namespace {

std::string tiny_bert_text() {
  run_config::Config c;
  c.name = "fuzz";
  c.model.vocab_size = 64;
  c.model.hidden_size = 16;
  c.model.num_hidden_layers = 1;
  c.model.num_attention_heads = 2;
  c.model.intermediate_size = 32;
  c.train.batch_size = 2;
  c.train.seq_len = 8;
  c.train.max_predictions_per_seq = 2;
  return print(frontend::build_bert_pretraining(c.model_settings()));
}

std::string all_ops_text() {
  std::ifstream in(std::string(BERTC_SOURCE_DIR) + "/tests/lit/roundtrip_all_ops.ir");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Parses and, when that works, verifies, prints and re-parses. Returns true if it was accepted.
bool survives(const std::string& text) {
  try {
    Graph g = parse(text);
    if (!verify(g).empty()) return false;
    graph_stats(g);
    const std::string printed = print(g);
    EXPECT_EQ(print(parse(printed)), printed) << "accepted input does not round-trip:\n" << text;
    return true;
  } catch (const Error&) {
    return false;  // a clean refusal is the expected outcome for most mutants
  }
}

TEST(ParserFuzz, EveryTruncationIsRefusedCleanly) {
  // Printed text, without the lit file's trailing comments: then exactly one proper prefix, the
  // one that drops only the final newline, is still a complete graph.
  for (const std::string& text : {tiny_bert_text(), print(parse(all_ops_text()))}) {
    ASSERT_TRUE(survives(text));
    size_t accepted = 0;
    for (size_t n = 0; n < text.size(); ++n) accepted += survives(text.substr(0, n));
    EXPECT_EQ(accepted, 1u);
  }
}

std::string mutate(std::string text, std::mt19937& rng) {
  static const std::string alphabet = "%@[](){},:=-+.e0123456789 \n/ax_\"\\\x01\xff";
  auto pos = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n)(rng); };
  const int edits = 1 + static_cast<int>(pos(3));
  for (int e = 0; e < edits && !text.empty(); ++e) {
    const size_t at = pos(text.size() - 1);
    switch (pos(6)) {
      case 0: text.erase(at, 1 + pos(8)); break;
      case 1: text.insert(at, 1, alphabet[pos(alphabet.size() - 1)]); break;
      case 2: text[at] = alphabet[pos(alphabet.size() - 1)]; break;
      case 3: text.insert(at, "99999999999999999999"); break;
      case 4: text.insert(at, "4294967296,4294967296,"); break;
      case 5: {  // duplicate a line
        const size_t start = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
        const size_t end = text.find('\n', at);
        text.insert(start, text.substr(start, end == std::string::npos ? std::string::npos : end - start + 1));
        break;
      }
      default: std::swap(text[at], text[pos(text.size() - 1)]); break;
    }
  }
  return text;
}

TEST(ParserFuzz, RandomMutationsAreRefusedOrRoundTrip) {
  std::mt19937 rng(20261129);  // fixed: a failure reproduces
  size_t accepted = 0, total = 0;
  for (const std::string& text : {tiny_bert_text(), all_ops_text()})
    for (int i = 0; i < 4000; ++i, ++total) accepted += survives(mutate(text, rng));
  // Some mutants are harmless (a changed comment, a swapped blank); most must be refused.
  EXPECT_LT(accepted, total / 2);
}

}  // namespace
}  // namespace bertc::ir
