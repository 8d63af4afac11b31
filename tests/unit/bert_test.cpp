// Unit tests for the BERT pretraining graph: Hugging Face parameter names, shapes and counts,
// the batch interface, FLOPs from first principles, and exact text round trips.
#include <gtest/gtest.h>

#include <map>

#include "frontend/bert.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/stats.h"
#include "ir/verifier.h"

namespace bertc::frontend {
namespace {

ModelSettings config_for(int64_t hidden, int64_t layers, int64_t heads, int64_t intermediate) {
  ModelSettings c;
  c.name = "test-bert";
  c.model.hidden_size = hidden;
  c.model.num_hidden_layers = layers;
  c.model.num_attention_heads = heads;
  c.model.intermediate_size = intermediate;
  return c;
}
ModelSettings base() { return config_for(768, 12, 12, 3072); }
ModelSettings large() { return config_for(1024, 24, 16, 4096); }

int64_t parameter_count(const ir::Graph& g) { return ir::graph_stats(g).parameters; }

// Reference figures for BertForPreTraining with its tied decoder (../shared/FACTS.md).
TEST(Bert, ParameterCountsMatchTheReferenceModels) {
  EXPECT_EQ(parameter_count(build_bert_pretraining(base())), 110'106'428);
  EXPECT_EQ(parameter_count(build_bert_pretraining(large())), 336'226'108);
}

// Every parameter of Hugging Face BertForPreTraining (one layer shown; the decoder weight is the
// tied word embedding and so no parameter of its own).
TEST(Bert, ParameterNamesAndShapesAreHuggingFaces) {
  ModelSettings c = config_for(64, 1, 2, 256);
  c.model.vocab_size = 100;
  std::map<std::string, ir::Shape> expected = {
      {"bert.embeddings.word_embeddings.weight", {100, 64}},
      {"bert.embeddings.position_embeddings.weight", {512, 64}},
      {"bert.embeddings.token_type_embeddings.weight", {2, 64}},
      {"bert.embeddings.LayerNorm.weight", {64}},
      {"bert.embeddings.LayerNorm.bias", {64}},
      {"bert.encoder.layer.0.attention.self.query.weight", {64, 64}},
      {"bert.encoder.layer.0.attention.self.query.bias", {64}},
      {"bert.encoder.layer.0.attention.self.key.weight", {64, 64}},
      {"bert.encoder.layer.0.attention.self.key.bias", {64}},
      {"bert.encoder.layer.0.attention.self.value.weight", {64, 64}},
      {"bert.encoder.layer.0.attention.self.value.bias", {64}},
      {"bert.encoder.layer.0.attention.output.dense.weight", {64, 64}},
      {"bert.encoder.layer.0.attention.output.dense.bias", {64}},
      {"bert.encoder.layer.0.attention.output.LayerNorm.weight", {64}},
      {"bert.encoder.layer.0.attention.output.LayerNorm.bias", {64}},
      {"bert.encoder.layer.0.intermediate.dense.weight", {256, 64}},
      {"bert.encoder.layer.0.intermediate.dense.bias", {256}},
      {"bert.encoder.layer.0.output.dense.weight", {64, 256}},
      {"bert.encoder.layer.0.output.dense.bias", {64}},
      {"bert.encoder.layer.0.output.LayerNorm.weight", {64}},
      {"bert.encoder.layer.0.output.LayerNorm.bias", {64}},
      {"bert.pooler.dense.weight", {64, 64}},
      {"bert.pooler.dense.bias", {64}},
      {"cls.predictions.bias", {100}},
      {"cls.predictions.transform.dense.weight", {64, 64}},
      {"cls.predictions.transform.dense.bias", {64}},
      {"cls.predictions.transform.LayerNorm.weight", {64}},
      {"cls.predictions.transform.LayerNorm.bias", {64}},
      {"cls.seq_relationship.weight", {2, 64}},
      {"cls.seq_relationship.bias", {2}},
  };
  ir::Graph g = build_bert_pretraining(c);
  std::map<std::string, ir::Shape> found;
  for (ir::ValueId v : g.values_of(ir::OpKind::Param)) found[g.value(v).name] = g.value(v).type.shape;
  EXPECT_EQ(found, expected);
}

TEST(Bert, BatchInterfaceIsTheOriginalBertFormat) {
  ModelSettings c = base();
  c.batch.batch_size = 4;
  c.batch.seq_len = 64;
  c.batch.max_predictions_per_seq = 10;
  ir::Graph g = build_bert_pretraining(c);
  std::map<std::string, ir::TensorType> inputs;
  for (ir::ValueId v : g.values_of(ir::OpKind::Input)) inputs[g.value(v).name] = g.value(v).type;
  using ir::DType;
  std::map<std::string, ir::TensorType> expected = {
      {"input_ids", {DType::I32, {4, 64}}},          {"token_type_ids", {DType::I32, {4, 64}}},
      {"attention_mask", {DType::I32, {4, 64}}},     {"masked_lm_positions", {DType::I32, {4, 10}}},
      {"masked_lm_ids", {DType::I32, {4, 10}}},      {"masked_lm_weights", {DType::F32, {4, 10}}},
      {"next_sentence_labels", {DType::I32, {4}}},   {"dropout_seed", {DType::I64, {}}},
  };
  EXPECT_EQ(inputs, expected);
  std::vector<std::string> outputs;
  for (ir::ValueId v : g.outputs()) {
    outputs.push_back(g.value(v).name);
    EXPECT_EQ(g.value(v).type, (ir::TensorType{DType::F32, {}}));
  }
  EXPECT_EQ(outputs, (std::vector<std::string>{"loss", "mlm_loss", "nsp_loss"}));
}

TEST(Bert, DropoutOpsFollowTheConfig) {
  ModelSettings c = config_for(128, 3, 2, 512);
  auto count = [](const ir::Graph& g, ir::OpKind k) { return g.values_of(k).size(); };
  ir::Graph with = build_bert_pretraining(c);
  EXPECT_EQ(count(with, ir::OpKind::Dropout), 1u + 3u * 3u);  // embeddings + 3 per layer
  c.dropout = false;
  ir::Graph without = build_bert_pretraining(c);
  EXPECT_EQ(count(without, ir::OpKind::Dropout), 0u);
  EXPECT_FALSE(without.find("dropout_seed").has_value());
}

// 2*M*N*K for every product of the forward pass, counted here from the architecture alone.
TEST(Bert, MatmulFlopsFollowFromTheArchitecture) {
  const ModelSettings c = base();
  const double B = c.batch.batch_size, S = c.batch.seq_len, P = c.batch.max_predictions_per_seq;
  const double H = 768, I = 3072, L = 12, V = 30522;
  const double per_layer = 2 * B * S * H * (3 * H)  // fused QKV
                           + 2 * 2 * B * S * S * H   // QK^T and probs.V over all heads
                           + 2 * B * S * H * H       // attention output
                           + 2 * 2 * B * S * H * I;  // FFN in and out
  const double heads = 2 * B * H * H                 // pooler
                       + 2 * B * H * 2               // NSP
                       + 2 * B * P * H * H           // MLM transform
                       + 2 * B * P * H * V;          // tied decoder
  EXPECT_EQ(ir::graph_stats(build_bert_pretraining(c)).matmul_flops, static_cast<int64_t>(L * per_layer + heads));
}

TEST(Bert, TextRoundTripsExactlyAndBuildsDeterministically) {
  for (const ModelSettings& c : {config_for(128, 2, 2, 512), base(), large()}) {
    const std::string text = ir::print(build_bert_pretraining(c));
    ir::Graph back = ir::parse(text);
    EXPECT_TRUE(ir::verify(back).empty());
    EXPECT_EQ(ir::print(back), text);
    EXPECT_EQ(ir::print(build_bert_pretraining(c)), text);
  }
}

TEST(Bert, ModelDefinitionChecksTheLossOutput) {
  ModelDefinition no_loss{"broken", "outputs no loss", [](const ModelSettings&) {
                            Builder b("g");
                            Tensor x = b.input("x", ir::DType::F32, {2});
                            b.output(x, "not_loss");
                            return std::move(b).finish();
                          }, {}};
  try {
    build_model(no_loss, ModelSettings{});
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_STREQ(e.what(), "model 'broken' must output a scalar f32 value named 'loss' (Builder::output(x, \"loss\"))");
  }
  EXPECT_NO_THROW(build_model(bert_model_definition(), config_for(64, 1, 2, 128)));
}

TEST(Bert, GraphNames) {
  EXPECT_EQ(graph_name_for("bert-base"), "bert_base");
  EXPECT_EQ(graph_name_for("3layer"), "g_3layer");
  EXPECT_EQ(graph_name_for(""), "g_");
}

}  // namespace
}  // namespace bertc::frontend
