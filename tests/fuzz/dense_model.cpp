// The smallest model bertc compiles into a whole training program (embedding lookup, one dense
// layer, GELU, a mean as the loss): its .bertx seeds the .bertx fuzz test. The full model's
// .bertx is 1.5 MB, most of it kernel sources in the JSON header, which takes ~45 ms to parse
// under ASan; this one's header is small enough to fuzz a million times.
#include "frontend/bert.h"

namespace {

using namespace bertc::frontend;

bertc::ir::Graph build_dense(const ModelSettings& c) {
  Builder b(graph_name_for(c.name));
  const BertInputs in = add_pretraining_inputs(b, c.batch);
  const Tensor table = b.param("embeddings.weight", {c.model.vocab_size, c.model.hidden_size});
  const Tensor hidden = gelu(dense(b, b.gather(table, in.input_ids), c.model.hidden_size, "dense"));
  b.output(b.reduce_mean(hidden, {0, 1, 2}), "loss");
  return std::move(b).finish();
}

}  // namespace

BERTC_MODEL(ModelDefinition{"fuzz-dense", "an embedding, one dense layer and a mean: the fuzz tests' smallest program",
                            build_dense, {}})
