// Deterministic parameter initialization (Philox + Box-Muller).
#include "run_folder/initialize.h"

#include <cmath>
#include <numbers>

#include <xxhash.h>

#include "ir/philox.h"

namespace bertc::run_folder {
namespace {

bool is_layer_norm_weight(const std::string& name) {
  return name.ends_with(".weight") &&
         (name.find("LayerNorm") != std::string::npos || name.find("layer_norm") != std::string::npos);
}

// Standard normal number i of stream `stream`: Box-Muller on two 32-bit Philox words.
double normal(uint64_t seed, uint64_t stream, uint64_t i) {
  const auto r = ir::philox4x32_10({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32),
                                    static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                                   {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  const double u1 = (r[0] + 0.5) / 4294967296.0, u2 = (r[1] + 0.5) / 4294967296.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

void initialize_parameters(const ir::Graph& graph, double stddev, int64_t pad_token_id, uint64_t seed,
                           support::Environment& env) {
  for (ir::ValueId p : graph.values_of(ir::OpKind::Param)) {
    const ir::Value& v = graph.value(p);
    if (env.count(v.name)) continue;
    // One stream per param name: the values do not depend on where passes put the param.
    const uint64_t stream = XXH64(v.name.data(), v.name.size(), 0);
    support::HostTensor t = support::HostTensor::zeros(v.type);
    if (is_layer_norm_weight(v.name)) {
      std::fill(t.real.begin(), t.real.end(), 1.0f);
    } else if (!v.name.ends_with("bias")) {
      for (size_t i = 0; i < t.real.size(); ++i) t.real[i] = static_cast<float>(stddev * normal(seed, stream, i));
      if (v.name == "bert.embeddings.word_embeddings.weight" && pad_token_id >= 0 && pad_token_id < v.type.shape[0]) {
        const int64_t width = v.type.shape[1];
        std::fill_n(t.real.begin() + pad_token_id * width, width, 0.0f);
      }
    }
    env[v.name] = std::move(t);
  }
}

void initialize_states(const ir::Graph& graph, support::Environment& env) {
  for (ir::ValueId s : graph.values_of(ir::OpKind::State)) {
    const ir::Value& v = graph.value(s);
    if (env.count(v.name)) continue;
    support::HostTensor t = support::HostTensor::zeros(v.type);
    std::fill(t.real.begin(), t.real.end(), static_cast<float>(graph.producer(s).attr<double>("init")));
    env[v.name] = std::move(t);
  }
}

}  // namespace bertc::run_folder
