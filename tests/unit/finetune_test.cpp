// The fine-tuning graphs (frontend/finetune.h): Hugging Face's head names and shapes, every
// gradient against finite differences in double precision, the loss formulas computed here from
// the logits, and padding rows (weight 0) that change nothing.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/bert.h"
#include "frontend/finetune.h"
#include "gradient_check.h"
#include "ir/value_names.h"
#include "passes/pipeline.h"
#include "run_config/config.h"

namespace bertc::frontend {
namespace {

using testing::Env;

run_config::Config tiny(FinetuneTask task, int64_t labels, int64_t batch = 3) {
  run_config::Config c;
  c.name = "finetune-test";
  c.model.vocab_size = 13, c.model.hidden_size = 8, c.model.num_hidden_layers = 1, c.model.num_attention_heads = 2;
  c.model.intermediate_size = 12, c.model.max_position_embeddings = 16;
  c.train.batch_size = batch, c.train.seq_len = 5;
  c.compile.dropout = false;  // finite differences need the same function at every evaluation
  c.finetune_section = true;
  c.finetune.task = task, c.finetune.num_labels = labels;
  return c;
}

double wobble(const std::string& name, int64_t i) {
  return 0.5 * std::sin(1.3 * static_cast<double>(i) + 0.29 * static_cast<double>(name.size()) + 0.2);
}

ir::HostTensor<double> ints(ir::Shape shape, std::vector<int64_t> values) {
  auto t = ir::HostTensor<double>::zeros({ir::DType::I32, std::move(shape)});
  t.integer = std::move(values);
  return t;
}
ir::HostTensor<double> reals(ir::Shape shape, std::vector<double> values) {
  auto t = ir::HostTensor<double>::zeros({ir::DType::F32, std::move(shape)});
  t.real = std::move(values);
  return t;
}

// Three sequences of 5 tokens (the last two of row 1 padding), labels per task; row weights
// (1 1 1) unless given.
Env batch(FinetuneTask task, std::vector<double> weights = {1, 1, 1}) {
  Env env;
  env["input_ids"] = ints({3, 5}, {2, 5, 7, 3, 0, 2, 9, 3, 0, 0, 2, 4, 4, 11, 3});
  env["token_type_ids"] = ints({3, 5}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1});
  env["attention_mask"] = ints({3, 5}, {1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1});
  const std::string labels(ir::names::kLabels), w(ir::names::kLabelWeights);
  if (task == FinetuneTask::TokenClassification) {
    env[labels] = ints({3, 5}, {0, 2, 1, 0, 0, 0, 1, 0, 0, 0, 0, 2, 2, 1, 0});
    env[w] = reals({3, 5}, {0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0});  // first pieces only
  } else if (task == FinetuneTask::Regression) {
    env[labels] = reals({3}, {0.5, -1.0, 2.0});
    env[w] = reals({3}, std::move(weights));
  } else {
    env[labels] = ints({3}, {1, 0, 2});
    env[w] = reals({3}, std::move(weights));
  }
  return env;
}

TEST(Finetune, HeadsHaveHuggingFacesNamesAndShapes) {
  for (FinetuneTask task : {FinetuneTask::SequenceClassification, FinetuneTask::TokenClassification}) {
    const ir::Graph g = build_finetune_graph(bert_model_definition(), tiny(task, 3).model_settings());
    std::map<std::string, ir::Shape> params;
    for (ir::ValueId p : g.values_of(ir::OpKind::Param)) params[g.value(p).name] = g.value(p).type.shape;
    EXPECT_EQ(params.at("classifier.weight"), (ir::Shape{3, 8}));
    EXPECT_EQ(params.at("classifier.bias"), (ir::Shape{3}));
    EXPECT_EQ(params.count("bert.pooler.dense.weight"), task == FinetuneTask::SequenceClassification ? 1u : 0u);
    EXPECT_EQ(params.count("cls.predictions.bias"), 0u);  // no pretraining heads
    EXPECT_EQ(params.count("bert.encoder.layer.0.attention.self.query.weight"), 1u);
    ASSERT_EQ(g.outputs().size(), 2u);
    const ir::Value& logits = g.value(g.outputs()[1]);
    EXPECT_EQ(logits.type.shape, task == FinetuneTask::TokenClassification ? (ir::Shape{15, 3}) : (ir::Shape{3, 3}));
  }
  const ir::Graph regression = build_finetune_graph(bert_model_definition(), tiny(FinetuneTask::Regression, 1).model_settings());
  EXPECT_EQ(regression.value(regression.outputs()[1]).type.shape, (ir::Shape{3}));
  EXPECT_EQ(regression.value(*regression.find(ir::names::kLabels)).type.dtype, ir::DType::F32);
}

TEST(Finetune, AModelWithoutAnEncoderIsRefusedWithTheFix) {
  ModelDefinition no_encoder = bert_model_definition();
  no_encoder.encoder = {};
  EXPECT_THROW(
      {
        try {
          build_finetune_graph(no_encoder, tiny(FinetuneTask::SequenceClassification, 2).model_settings());
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("Encoder{layer, after}"), std::string::npos) << e.what();
          throw;
        }
      },
      ConfigError);
}

// Each task's gradients, every param element, against central differences (double precision:
// the differences agree to ~1e-9; 1e-6 relative is far below any wrong chain rule).
TEST(Finetune, GradientsMatchFiniteDifferences) {
  for (auto [task, labels] : {std::pair{FinetuneTask::SequenceClassification, int64_t{3}},
                              std::pair{FinetuneTask::Regression, int64_t{1}},
                              std::pair{FinetuneTask::TokenClassification, int64_t{3}}}) {
    SCOPED_TRACE(std::string(ir::enum_name(task)));
    const ir::Graph g = build_finetune_graph(bert_model_definition(), tiny(task, labels).model_settings());
    Env env = batch(task, {1, 0.5, 1});
    testing::fill_params(g, env, wobble);
    testing::expect_gradients_match_fd(g, env, 1e-6, 1e-8, 1e-6);
  }
}

// The losses recomputed here from the graph's logits: cross-entropy averaged over the weights
// (Hugging Face's mean over the labelled rows or tokens), and the mean squared error.
TEST(Finetune, LossesAreTheTasksFormulasOfTheLogits) {
  for (auto [task, labels] : {std::pair{FinetuneTask::SequenceClassification, int64_t{3}},
                              std::pair{FinetuneTask::Regression, int64_t{1}},
                              std::pair{FinetuneTask::TokenClassification, int64_t{3}}}) {
    SCOPED_TRACE(std::string(ir::enum_name(task)));
    const ir::Graph g = build_finetune_graph(bert_model_definition(), tiny(task, labels).model_settings());
    Env env = batch(task, {1, 0, 1});
    testing::fill_params(g, env, wobble);
    const auto r = reference::Executor<double>(g).run(env);
    const std::vector<double>& logits = r.outputs.at(1).real;
    const auto& w = env.at(std::string(ir::names::kLabelWeights)).real;
    const auto& label = env.at(std::string(ir::names::kLabels));
    double sum = 0, weight = 0;
    for (size_t row = 0; row < w.size(); ++row) {
      if (task == FinetuneTask::Regression) {
        const double e = logits[row] - label.real[row];
        sum += w[row] * e * e;
      } else {
        const double* x = logits.data() + row * 3;
        const double lse = std::log(std::exp(x[0]) + std::exp(x[1]) + std::exp(x[2]));
        sum += w[row] * (lse - x[label.integer[row]]);
      }
      weight += w[row];
    }
    EXPECT_NEAR(r.outputs.at(0).real.at(0), sum / weight, 1e-12);
  }
}

// A batch's last rows as padding (weight 0, as an epoch's short last batch): the loss and the
// real rows' logits equal those of the batch without them, bit for bit up to summation order.
TEST(Finetune, PaddingRowsChangeNothing) {
  const ir::Graph three = build_finetune_graph(bert_model_definition(), tiny(FinetuneTask::SequenceClassification, 3).model_settings());
  const ir::Graph one = build_finetune_graph(bert_model_definition(), tiny(FinetuneTask::SequenceClassification, 3, 1).model_settings());
  Env padded = batch(FinetuneTask::SequenceClassification, {1, 0, 0});
  testing::fill_params(three, padded, wobble);
  Env alone;
  for (const auto& [name, t] : padded) {
    if (t.type.shape.empty() || t.type.shape[0] != 3 || name.find('.') != std::string::npos) {
      alone[name] = t;  // params
      continue;
    }
    auto first = t;
    first.type.shape[0] = 1;
    const size_t row = static_cast<size_t>(t.numel() / 3);
    if (t.is_real()) first.real.resize(row);
    else first.integer.resize(row);
    alone[name] = first;
  }
  const auto a = reference::Executor<double>(three).run(padded);
  const auto b = reference::Executor<double>(one).run(alone);
  EXPECT_NEAR(a.outputs.at(0).real.at(0), b.outputs.at(0).real.at(0), 1e-12);
  for (size_t c = 0; c < 3; ++c) EXPECT_NEAR(a.outputs.at(1).real[c], b.outputs.at(1).real[c], 1e-12);
}

// The whole training pipeline on a token-classification graph with fused attention and dropout:
// its autodiff once read a gather's table type through a reference that growing the graph left
// dangling (an error about a rank-0 table, or worse).
TEST(Finetune, TokenClassificationCompilesThroughThePipeline) {
  run_config::Config c = tiny(FinetuneTask::TokenClassification, 3, 2);
  c.model.hidden_size = 32, c.model.intermediate_size = 64, c.model.max_position_embeddings = 64;
  c.train.seq_len = 16;
  c.compile.dropout = true;
  c.compile.fused_attention = true;
  c.compile.precision = passes::Precision::Fp32;
  const passes::TrainingProgram p =
      passes::compile_training(build_finetune_graph(bert_model_definition(), c.model_settings()), c.compile, c.train);
  for (const char* param : {"bert.embeddings.word_embeddings.weight", "classifier.weight"})
    EXPECT_TRUE(p.step.find(ir::names::grad_accumulator_of(param)).has_value()) << param;
}

}  // namespace
}  // namespace bertc::frontend
