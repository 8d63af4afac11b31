// train/micro_batch: --batch-size auto counts cuBLAS's workspace exactly when a product of the
// rendered program runs in cuBLAS, and names that floor only then.
#include <gtest/gtest.h>

#include <sstream>

#include "frontend/bert.h"
#include "run_config/config.h"
#include "train/micro_batch.h"

namespace bertc::train {
namespace {

run_config::Config small_config() {
  run_config::Config c;
  c.name = "micro-batch-test";
  c.model.hidden_size = 64;
  c.model.num_hidden_layers = 1;
  c.model.num_attention_heads = 2;
  c.model.intermediate_size = 256;
  c.model.vocab_size = 100;
  c.train.seq_len = 16;
  c.train.max_predictions_per_seq = 2;
  c.train.batch_size = 4;
  c.compile.precision = passes::Precision::Fp32;  // (auto is resolved by bertc compile, for its GPU)
  return c;
}

passes::TrainingProgram compiled(const run_config::Config& c) {
  return passes::compile_training(frontend::build_model(frontend::bert_model_definition(), c.model_settings()), c.compile, c.train);
}

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(PlannedMemory, CountsCublasOnlyWhereAProductRunsThere) {
  const passes::TrainingProgram p = compiled(small_config());
  const PlannedMemory generated = planned_device_memory(p, {0, passes::MatmulPolicy::Generated, {}, false});
  // auto on a GPU: these products are far below the 2^30 FLOPs that go to cuBLAS
  const PlannedMemory automatic = planned_device_memory(p, {80, passes::MatmulPolicy::Auto, {}, false});
  const PlannedMemory library = planned_device_memory(p, {80, passes::MatmulPolicy::Library, {}, false});
  EXPECT_FALSE(generated.cublas);
  EXPECT_FALSE(automatic.cublas);
  EXPECT_TRUE(library.cublas);
  EXPECT_GT(generated.bytes, 0u);
  EXPECT_LT(generated.bytes, 32 * kMiB);
  EXPECT_LT(automatic.bytes, 32 * kMiB);
  // cuBLAS's 32 MiB and the products' f32 epilogue workspace on top of the same buffers
  EXPECT_GT(library.bytes, generated.bytes + 32 * kMiB);
}

TEST(MicroBatch, NamesTheCublasFloorOnlyWhenCublasIsCounted) {
  const run_config::Config c = small_config();
  const frontend::ModelDefinition bert = frontend::bert_model_definition();
  std::ostringstream log;
  const uint64_t available = 16 * kMiB;  // room for every plan without cuBLAS, not for its workspace
  for (const codegen::RenderTarget& target :
       {codegen::RenderTarget{0, passes::MatmulPolicy::Generated, {}, false},
        codegen::RenderTarget{80, passes::MatmulPolicy::Auto, {}, false}}) {
    const MicroBatch b = choose_micro_batch(bert, c, target, available, log);
    EXPECT_EQ(b.batch_size, 4);
    EXPECT_EQ(b.accumulation, 1);
  }
  try {
    choose_micro_batch(bert, c, {80, passes::MatmulPolicy::Library, {}, false}, available, log);
    ADD_FAILURE() << "a plan with cuBLAS's 32 MiB fitted in 16 MiB";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuBLAS's workspace alone takes 32 MiB, which --matmul generated"),
              std::string::npos)
        << e.what();
  }
  try {  // without cuBLAS, the advice leaves --matmul out
    choose_micro_batch(bert, c, {0, passes::MatmulPolicy::Generated, {}, false}, 1000, log);
    ADD_FAILURE() << "a plan fitted in 1000 bytes";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).find("cuBLAS"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bertc::train
