// Rows of several examples train exactly as one example a row (issue 39): the same seven examples
// laid out one a row (7 rows) and up to three a row (3 rows), through the real batch stream and
// the BERT graph of each layout, give the same losses, the same MLM and NSP logits of every
// example's predictions and the same gradient of every parameter — on the reference executor in
// double and in float. Dropout is off: its masks are drawn by position in the row, which differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "data/pretraining_data.h"
#include "data/row_packing.h"
#include "frontend/bert.h"
#include "ir/value_names.h"
#include "passes/attention.h"
#include "passes/autodiff.h"
#include "reference/executor.h"
#include "run_config/config.h"
#include "train/batches.h"
#include "train/step_figures.h"

namespace bertc {
namespace {

constexpr int64_t kSeqLen = 24, kPredictions = 4, kPerRow = 3;

// Seven examples of 5 to 14 tokens ([CLS] A [SEP] B [SEP]), 1 to 3 masked positions each.
std::vector<data::Example> seven_examples() {
  std::vector<data::Example> out;
  for (int64_t n = 0; n < 7; ++n) {
    const int64_t length = 5 + (n * 4) % 10, a = (length - 3) / 2;
    data::Example e;
    for (int64_t i = 0; i < length; ++i) {
      const bool sep = i == a + 1 || i == length - 1;
      e.tokens.push_back(i == 0 ? 2 : sep ? 3 : 5 + (n * 7 + i * 3) % 30);
      e.segment_ids.push_back(i > a + 1);
    }
    for (int64_t m = 0; m < 1 + n % 3 && 1 + 2 * m < length - 1; ++m) {
      e.masked_positions.push_back(1 + 2 * m);
      e.masked_labels.push_back(6 + (n + m * 5) % 30);
    }
    e.is_random_next = n % 2 == 1;
    out.push_back(std::move(e));
  }
  return out;
}

// The examples one a row, or in the given rows of several.
class Examples : public data::ExampleSource {
 public:
  Examples(std::vector<data::Example> examples, std::vector<std::vector<size_t>> rows = {})
      : examples_(std::move(examples)), rows_(std::move(rows)) {}
  int64_t size() const override { return static_cast<int64_t>(rows_.empty() ? examples_.size() : rows_.size()); }
  int64_t shards() const override { return 1; }
  int64_t examples_per_row() const override { return rows_.empty() ? 0 : kPerRow; }
  data::Example example(int64_t i) const override { return examples_.at(static_cast<size_t>(i)); }
  std::vector<data::Example> row(int64_t i) const override {
    if (rows_.empty()) return {example(i)};
    std::vector<data::Example> out;
    for (size_t k : rows_.at(static_cast<size_t>(i))) out.push_back(examples_[k]);
    return out;
  }
  std::string content() const override { return "seven"; }

 private:
  std::vector<data::Example> examples_;
  std::vector<std::vector<size_t>> rows_;
};

// Where each example's predictions and [CLS] went: its rows of mlm_logits and of nsp_logits.
struct Placement {
  std::vector<std::vector<int64_t>> mlm;  // per example
  std::vector<int64_t> nsp;               // per example
};

run_config::Config tiny(bool rows, int64_t batch) {
  run_config::Config c;
  c.name = "rows";
  c.model.vocab_size = 40, c.model.hidden_size = 16, c.model.num_hidden_layers = 2, c.model.num_attention_heads = 2;
  c.model.intermediate_size = 24, c.model.max_position_embeddings = 32;
  c.train.batch_size = batch, c.train.seq_len = kSeqLen, c.train.max_predictions_per_seq = kPredictions;
  c.train.packing = rows ? run_config::Packing::Pack : run_config::Packing::None;
  c.train.packing_max_examples = kPerRow;
  c.compile.dropout = false;  // (dropout's masks follow the row's positions)
  return c;
}

template <typename T>
ir::Environment<T> environment_of(const data::Batch& batch, const ir::Graph& g) {
  support::Environment floats;
  train::bind_batch(batch, floats);
  ir::Environment<T> env;
  for (auto& [name, t] : floats) {
    auto converted = ir::HostTensor<T>::zeros(t.type);
    converted.integer = t.integer;
    for (size_t i = 0; i < t.real.size(); ++i) converted.real[i] = static_cast<T>(t.real[i]);
    env[name] = std::move(converted);
  }
  // The same weights in both layouts: a function of each parameter's name and element.
  for (ir::ValueId p : g.values_of(ir::OpKind::Param)) {
    const ir::Value& v = g.value(p);
    auto t = ir::HostTensor<T>::zeros(v.type);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.real[i] = static_cast<T>(0.3 * std::sin(1.7 * double(i) + 0.37 * double(v.name.size())) +
                                 (v.name.ends_with("LayerNorm.weight") ? 1.0 : 0.0));
    env[v.name] = t;
  }
  return env;
}

template <typename T>
struct Run {
  std::map<std::string, std::vector<T>> values;  // losses, logits and every "<param>.grad"
};

// `fused`: the attention fused first (passes::fuse_attention): for rows, each layer's attention
// op then takes the example ids (blocks = true) and no block_bias is left.
template <typename T>
Run<T> run(bool rows, const data::Batch& batch, bool fused) {
  const run_config::Config c = tiny(rows, batch.batch_size);
  ir::Graph g = frontend::build_bert_pretraining(c.model_settings());
  ir::Environment<T> env = environment_of<T>(batch, g);
  if (fused) {
    EXPECT_EQ(passes::fuse_attention(g), 2u);
    size_t with_blocks = 0;
    for (const ir::Op& op : g.ops()) {
      EXPECT_NE(op.kind, ir::OpKind::BlockBias);
      if (op.kind == ir::OpKind::AttentionQkv) with_blocks += op.attr<bool>("blocks");
    }
    EXPECT_EQ(with_blocks, rows ? 2u : 0u);
  }
  passes::differentiate(g);
  std::vector<std::string> fetch{std::string(ir::names::kLoss), std::string(ir::names::kMlmLoss),
                                 std::string(ir::names::kNspLoss), std::string(ir::names::kMlmLogits),
                                 std::string(ir::names::kNspLogits)};
  for (ir::ValueId p : g.values_of(ir::OpKind::Param)) fetch.push_back(g.value(p).name + ".grad");
  const auto result = reference::Executor<T>(g).run(env, fetch);
  Run<T> out;
  for (const std::string& name : fetch) out.values[name] = result.fetched.at(name).real;
  return out;
}

// Largest difference as a fraction of the larger tensor's largest magnitude.
template <typename T>
double relative_difference(std::span<const T> a, std::span<const T> b) {
  double largest = 0, worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    largest = std::max({largest, std::abs(double(a[i])), std::abs(double(b[i]))});
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  }
  return largest == 0 ? worst : worst / largest;
}

template <typename T>
void expect_same_training(double tolerance, bool fused = false) {
  const std::vector<data::Example> examples = seven_examples();
  // The rows pack_rows places them in (TheRowsAreThePackersRows): three, two and two.
  const std::vector<std::vector<size_t>> rows{{0, 1, 6}, {2, 4}, {3, 5}};
  const data::BatchStream one_a_row(std::make_shared<Examples>(examples), 7, kSeqLen, kPredictions, 0);
  const data::BatchStream several(std::make_shared<Examples>(examples, rows), 3, kSeqLen,
                                  tiny(true, 3).train.row_predictions(), 0);
  const data::Batch padded = one_a_row.batch(0), packed = several.batch(0);
  ASSERT_EQ(packed.examples_per_row, kPerRow);
  // (fewer rows and fewer padding tokens: what the rows are for)
  EXPECT_LT(std::count(packed.attention_mask.begin(), packed.attention_mask.end(), 0),
            std::count(padded.attention_mask.begin(), padded.attention_mask.end(), 0));

  const Run<T> a = run<T>(false, padded, false), b = run<T>(true, packed, fused);
  for (std::string_view loss : {ir::names::kLoss, ir::names::kMlmLoss, ir::names::kNspLoss})
    EXPECT_LE(relative_difference<T>(a.values.at(std::string(loss)), b.values.at(std::string(loss))), tolerance) << loss;

  // Each example's logits: its predictions are rows n*P.. of the padded batch's mlm_logits and the
  // row's slots in order in the packed batch's; its next-sentence logits row n, and slot (r, k).
  const int64_t V = 40, P_row = packed.predictions;
  const auto& mlm_a = a.values.at(std::string(ir::names::kMlmLogits));
  const auto& mlm_b = b.values.at(std::string(ir::names::kMlmLogits));
  const auto& nsp_a = a.values.at(std::string(ir::names::kNspLogits));
  const auto& nsp_b = b.values.at(std::string(ir::names::kNspLogits));
  size_t predictions = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    int64_t slot = 0;
    for (size_t k = 0; k < rows[r].size(); ++k) {
      const size_t n = rows[r][k];
      for (size_t m = 0; m < examples[n].masked_positions.size(); ++m, ++slot, ++predictions) {
        const auto at_a = static_cast<size_t>((int64_t(n) * kPredictions + int64_t(m)) * V);
        const auto at_b = static_cast<size_t>((int64_t(r) * P_row + slot) * V);
        EXPECT_LE(relative_difference<T>({mlm_a.data() + at_a, size_t(V)}, {mlm_b.data() + at_b, size_t(V)}), tolerance)
            << "example " << n << " prediction " << m;
      }
      EXPECT_LE(relative_difference<T>({nsp_a.data() + n * 2, 2}, {nsp_b.data() + (r * kPerRow + k) * 2, 2}), tolerance)
          << "example " << n << " next-sentence logits";
    }
  }
  EXPECT_EQ(predictions, 12u);  // (1 + 2 + 3 + 1 + 2 + 2 + 1 masked positions: every one compared)

  // The key projection's bias has a gradient of exactly zero (softmax ignores a constant added to
  // a row of scores): both layouts hold rounding noise there, checked to be noise against the
  // scale of all gradients rather than compared with each other.
  double scale = 0;
  for (const auto& [name, grad] : a.values)
    if (name.ends_with(".grad"))
      for (T g : grad) scale = std::max(scale, std::abs(double(g)));
  size_t gradients = 0;
  for (const auto& [name, grad] : a.values) {
    if (!name.ends_with(".grad")) continue;
    ++gradients;
    if (name.find("attention.self.key.bias") != std::string::npos) {
      for (const auto* g : {&grad, &b.values.at(name)})
        for (T x : *g) EXPECT_LE(std::abs(double(x)), tolerance * scale) << name << " should vanish";
      continue;
    }
    EXPECT_LE(relative_difference<T>(grad, b.values.at(name)), tolerance) << name;
  }
  EXPECT_EQ(gradients, 46u);  // (every parameter of a 2-layer BERT with its heads)
}

// In double, the two layouts differ only in the order of sums (a row's zeros of other examples'
// keys add nothing; the weights' gradients sum other rows): 1e-12 of a tensor's scale is far
// below any difference of what is computed (a masked key let through moves a logit by 1e-2).
TEST(RowEquivalence, SevenExamplesInThreeRowsTrainAsInSevenDouble) { expect_same_training<double>(1e-12); }

// In float the same sums in other orders differ by a few units in the last place over a
// two-layer step: 1e-6 of a tensor's scale (the bound), 20 float ulps.
TEST(RowEquivalence, SevenExamplesInThreeRowsTrainAsInSevenFloat) { expect_same_training<float>(1e-6); }

// The fused attention of rows (block_bias's ids given to the attention ops, whose kernels skip the
// tiles between examples) against the unfused graph of one example a row: as above, in double.
TEST(RowEquivalence, FusedAttentionOfRowsTrainsAsSevenUnfused) { expect_same_training<double>(1e-12, true); }

// The rows above are what pack_rows makes of these examples' sizes, so the test trains the
// loader's layout, not one of its own.
TEST(RowEquivalence, TheRowsAreThePackersRows) {
  std::vector<data::ExampleSize> sizes;
  for (const data::Example& e : seven_examples())
    sizes.push_back({static_cast<int64_t>(e.tokens.size()), static_cast<int64_t>(e.masked_positions.size())});
  const auto rows = data::pack_rows(sizes, {kSeqLen, tiny(true, 3).train.row_predictions(), kPerRow});
  EXPECT_EQ(rows, (std::vector<std::vector<size_t>>{{0, 1, 6}, {2, 4}, {3, 5}}));
}

// What the rows leave to compute, as the compile report and MFU count it (train::row_fractions):
// the seven examples' tokens, the squares of their lengths, and at 24 positions one 32-wide tile
// pair a row, computed whole; a config of one example a row is not measured.
TEST(RowEquivalence, FractionsOfTheRowsAreTheirExamplesShare) {
  const std::vector<data::Example> examples = seven_examples();
  const Examples several(examples, {{0, 1, 6}, {2, 4}, {3, 5}});
  double tokens = 0, squares = 0;
  for (const data::Example& e : examples) {
    const auto n = static_cast<double>(e.tokens.size());
    tokens += n, squares += n * n;
  }
  const passes::RowFractions f = train::row_fractions(tiny(true, 3), several);
  ASSERT_TRUE(f.measured());
  EXPECT_EQ(f.seq_len, kSeqLen);
  EXPECT_DOUBLE_EQ(f.tokens, tokens / (3 * kSeqLen));
  EXPECT_DOUBLE_EQ(f.scores, squares / (3 * kSeqLen * kSeqLen));
  EXPECT_DOUBLE_EQ(f.tiles, 1.0);
  EXPECT_DOUBLE_EQ(f.examples, 7.0 / 3);
  EXPECT_FALSE(train::row_fractions(tiny(false, 7), Examples(examples)).measured());
  // Two examples of 32 tokens in a row of 64: the 32-wide tiles between them are skipped, half the
  // square, as many scores as the examples' own.
  data::Example half;
  half.tokens.assign(32, 5);
  half.segment_ids.assign(32, 0);
  half.masked_positions = {1};
  half.masked_labels = {6};
  run_config::Config wide = tiny(true, 1);
  wide.train.seq_len = 64;
  const passes::RowFractions h = train::row_fractions(wide, Examples({half, half}, {{0, 1}}));
  EXPECT_DOUBLE_EQ(h.tokens, 1.0);
  EXPECT_DOUBLE_EQ(h.scores, 0.5);
  EXPECT_DOUBLE_EQ(h.tiles, 0.5);
  EXPECT_DOUBLE_EQ(h.examples, 2.0);
}

}  // namespace
}  // namespace bertc
