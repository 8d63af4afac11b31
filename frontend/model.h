// What a model program provides: a named function from a model's settings to a training graph.
//
// A model definition file (see examples/prenorm_bert/) ends with
//   BERTC_MODEL(bertc::frontend::ModelDefinition{"my-bert", "what it is", build_my_bert, {extra keys}})
// and is linked with the bertc driver by the CMake function bertc_add_model(); the result is a
// program with the subcommands of `bertc` for that model.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "frontend/model_settings.h"
#include "ir/builder.h"
#include "ir/graph.h"

namespace bertc::frontend {

// The DSL a model definition is written in (ir/builder.h), under the names model code uses.
using ir::Builder;
using ir::DType;
using ir::Shape;
using ir::Tensor;

// What varies between BERT-like models: the encoder layer (called in scope
// bert.encoder.layer.N with the layer input and the attention bias) and an optional step after
// the last layer (a pre-layer-norm stack's final norm, say).
using EncoderLayer = std::function<Tensor(Builder& b, const ModelSettings& c, Tensor x, Tensor attention_bias)>;
using AfterEncoder = std::function<Tensor(Builder& b, const ModelSettings& c, Tensor x)>;
struct Encoder {
  EncoderLayer layer;  // empty: the model has none to fine-tune
  AfterEncoder after;  // optional
};

// A [model] key that a custom model definition adds.
struct ExtraKey {
  std::string name;
  ConfigValue default_value;  // also fixes the key's type
  std::string doc;
};

struct ModelDefinition {
  std::string name;
  std::string description;
  // Builds the forward graph with its losses; outputs must include a scalar named "loss".
  std::function<ir::Graph(const ModelSettings&)> build;
  // [model] keys this model accepts beyond the BERT ones.
  std::vector<ExtraKey> extra_keys;
  // Its encoder, which bertc finetune puts a task head on (frontend/finetune.h).
  Encoder encoder = {};
};

// Defined once per program by BERTC_MODEL; the driver calls it.
ModelDefinition model_definition();

// Builds the graph for `settings` (its fine-tuning graph when it names a task head: finetune.h),
// verifies it and checks that it outputs a scalar "loss".
ir::Graph build_model(const ModelDefinition& definition, const ModelSettings& settings);

// "bert-base" -> "bert_base": a graph name printable as @name.
std::string graph_name_for(const std::string& config_name);

}  // namespace bertc::frontend

#define BERTC_MODEL(...) \
  ::bertc::frontend::ModelDefinition bertc::frontend::model_definition() { return __VA_ARGS__; }
