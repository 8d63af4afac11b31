// The proof that the host's range checks of the batch bound every index a kernel reads by
// (train/batches.h check_indices_are_checked, ir/index_reads.h): it holds for every bundled model
// and fine-tuning head, every integer tensor a kernel reads is accounted for, and programs that
// would read out of bounds — an index from elsewhere, a table smaller than the checked range, a
// scatter's order not an argsort's — are refused naming the op.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "frontend/bert.h"
#include "run_config/config.h"
#include "ir/builder.h"
#include "ir/attention_layout.h"
#include "ir/index_reads.h"
#include "passes/fusion.h"
#include "passes/options.h"
#include "passes/pipeline.h"
#include "train/batches.h"

namespace bertc {
namespace {

run_config::Config example(const std::string& name) {
  return run_config::load_config(std::string(BERTC_SOURCE_DIR "/examples/") + name);
}

std::string refusal(const ir::Graph& g, const run_config::Config& c) {
  try {
    train::check_indices_are_checked(g, c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// Every i32 tensor of rank 1 or more that an op reads is an index it reads by (index_reads), or
// passed on by a value-keeping op or into a fused region: a new op reading by index that
// index_reads does not know fails here. (i64 scalars are dropout seeds, not indices.)
void expect_every_index_accounted(const ir::Graph& g) {
  for (const ir::Op& op : g.ops()) {
    if (op.region) {
      expect_every_index_accounted(op.region.graph());
      continue;
    }
    const auto reads = ir::index_reads(g, op);
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const ir::TensorType& t = g.value(op.operands[i]).type;
      if (t.dtype != ir::DType::I32 || t.shape.empty() || ir::keeps_values(op.kind)) continue;
      const bool read = std::any_of(reads.begin(), reads.end(), [&](const ir::IndexRead& r) { return r.operand == i; });
      const bool order = op.kind == ir::OpKind::ScatterAdd && i == ir::kScatterAddOrder;
      // (an attention op's example ids are compared with each other, never an address)
      const bool compared = op.info().traits.family == ir::KernelFamily::Attention &&
                            ir::attention_layout(g, op).example_ids == std::optional<size_t>(i);
      EXPECT_TRUE(read || order || compared)
          << op.info().name << " operand " << i << " is an i32 tensor index_reads does not know";
    }
  }
}

void expect_proven_on(run_config::Config c, const std::string& what) {
  const passes::TrainingProgram p =
      passes::compile_training(frontend::build_model(frontend::bert_model_definition(), c.model_settings()), c.compile, c.train);
  EXPECT_EQ(refusal(p.step, c), "") << what;
  expect_every_index_accounted(p.step);
  run_config::Config eval = c;
  eval.compile.dropout = false;
  const ir::Graph e = passes::compile_evaluation(frontend::build_model(frontend::bert_model_definition(), eval.model_settings()), eval.compile);
  EXPECT_EQ(refusal(e, eval), "") << what << " (evaluation)";
}

// On each arch's precision and kernels (fp32 on a P40, fp16 on a V100, bf16 on an H200).
void expect_proven(const run_config::Config& config, const std::string& what) {
  for (const char* gpu : {"p40", "v100", "h200"}) {
    run_config::Config c = config;
    c.compile.arch = passes::Arch::parse(gpu);
    c.compile = passes::resolve_options(c.compile, passes::Arch::none());
    expect_proven_on(c, what + " on " + gpu);
  }
}

TEST(IndexReads, EveryBundledModelIndexesByCheckedInputsOnly) {
  for (const char* name : {"bert-tiny.toml", "bert-base.toml", "bert-large.toml"}) {
    run_config::Config c = example(name);
    c.train.batch_size = 2;  // (the graph's shape, not its size, is what is checked)
    expect_proven(c, name);
    c.compile.fusion = false;  // unfused: the gathers outside regions
    expect_proven(c, std::string(name) + " unfused");
  }
}

// Rows of several examples: position ids and [CLS] positions are checked indices, example ids
// are compared only (block_bias unfused, the attention ops' example_ids fused).
TEST(IndexReads, RowsOfSeveralExamplesIndexByCheckedInputsOnly) {
  run_config::Config c = example("bert-tiny.toml");
  c.train.batch_size = 2;
  c.train.packing = run_config::Packing::Pack;
  expect_proven(c, "bert-tiny rows");
  c.compile.fused_attention = false;
  expect_proven(c, "bert-tiny rows, attention unfused");
}

TEST(IndexReads, EveryFineTuningHeadIndexesByCheckedInputsOnly) {
  for (const auto task : {frontend::FinetuneTask::SequenceClassification, frontend::FinetuneTask::Regression,
                          frontend::FinetuneTask::TokenClassification}) {
    run_config::Config c = example("finetune-tiny.toml");
    c.finetune.task = task;
    c.finetune.num_labels = task == frontend::FinetuneTask::Regression ? 1 : 3;
    c.finetune.labels.clear();
    expect_proven(c, std::string(ir::enum_name(task)));
  }
}

// Planted: what the check must refuse.
TEST(IndexReads, IndicesFromElsewhereAreRefused) {
  run_config::Config c = example("bert-tiny.toml");
  {
    ir::Builder b("made_ids");
    auto table = b.param("table", {c.model.vocab_size, 4});
    b.add_output(b.gather(table, b.input("my_ids", ir::DType::I32, {2, 3})));
    const std::string why = refusal(std::move(b).finish(), c);
    EXPECT_NE(why.find("gather reads the table's rows by indices that are the input my_ids, which no check on the host "
                       "bounds"), std::string::npos) << why;
  }
  {
    ir::Builder b("small_table");
    auto table = b.param("table", {c.model.vocab_size - 1, 4});
    b.add_output(b.gather(table, b.input("input_ids", ir::DType::I32, {2, 3})));
    const std::string why = refusal(std::move(b).finish(), c);
    EXPECT_NE(why.find(fmt::format("reads the table's rows ({}) by input_ids, which the host checks only below [model] "
                                   "vocab_size = {}", c.model.vocab_size - 1, c.model.vocab_size)),
              std::string::npos) << why;
  }
  {
    ir::Builder b("computed_ids");
    auto table = b.param("table", {c.model.vocab_size, 4});
    auto ids = b.input("input_ids", ir::DType::I32, {2, 3});
    auto shifted = b.op(ir::OpKind::ArgSort, {ids}, {{"rows", c.model.vocab_size}});  // (an index made on the device)
    b.add_output(b.gather(table, shifted));
    const std::string why = refusal(std::move(b).finish(), c);
    EXPECT_NE(why.find("by indices that are"), std::string::npos) << why;
  }
  {
    ir::Builder b("unsorted_scatter");
    auto ids = b.input("input_ids", ir::DType::I32, {6});
    auto updates = b.input("updates", ir::DType::F32, {6, 4});
    auto order = b.input("my_order", ir::DType::I32, {6});
    b.add_output(b.op(ir::OpKind::ScatterAdd, {updates, ids, order}, {},
                  ir::TensorType{ir::DType::F32, {c.model.vocab_size, 4}}));
    const std::string why = refusal(std::move(b).finish(), c);
    EXPECT_NE(why.find("its order is the input my_order, not an argsort's permutation"), std::string::npos) << why;
  }
}

// Planted through a fused region: the gather's indices reach it as the region's input, and the
// walk must follow that input out to the unchecked value it is (and accept the checked one).
TEST(IndexReads, AnIndexFromElsewhereIsRefusedInsideAFusedRegion) {
  const run_config::Config c = example("bert-tiny.toml");
  for (const char* ids : {"input_ids", "my_ids"}) {
    ir::Builder b("fused_gather");
    auto table = b.param("table", {c.model.vocab_size, 4});
    auto bias = b.param("bias", {4});
    auto gathered = b.gather(table, b.input(ids, ir::DType::I32, {2, 3}));
    b.add_output(gathered + bias);  // (a load with a pointwise op after it: one fused kernel)
    ir::Graph g = std::move(b).finish();
    passes::fuse(g);
    bool fused = false;
    for (const ir::Op& op : g.ops()) fused |= static_cast<bool>(op.region);
    ASSERT_TRUE(fused) << "the test needs the gather inside a fused region";
    const std::string why = refusal(g, c);
    if (std::string(ids) == "input_ids") EXPECT_EQ(why, "");
    else EXPECT_NE(why.find("by indices that are the input my_ids"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace bertc
