// Fuzz harness of the safetensors readers (support/safetensors.h, run_folder/checkpoint.h): each input
// decoded with its checksums checked and every tensor converted, then read as a checkpoint of the
// test config's model and optimizer (what --resume reads) and as weights to start from (--init).
#include "frontend/bert.h"
#include "run_config/config.h"
#include "passes/pipeline.h"
#include "support/safetensors.h"
#include "support/tensor_io.h"
#include "tests/fuzz/harness.h"
#include "run_folder/checkpoint.h"
#include "run_folder/resume.h"

namespace {

using namespace bertc;

// The model of the seeds: tests/lit/Inputs/test-tiny.toml (tests/fuzz/make_seeds.py trains it).
struct TestModel {
  ir::Graph graph;
  run_folder::TensorManifest manifest;
  TestModel() {
    run_config::Config c = run_config::load_config(std::string(BERTC_SOURCE_DIR) + "/tests/lit/Inputs/test-tiny.toml");
    c.compile = passes::resolve_options(c.compile, passes::Arch::none());
    graph = frontend::build_bert_pretraining(c.model_settings());
    manifest = run_folder::manifest_of(passes::compile_training(frontend::build_bert_pretraining(c.model_settings()), c.compile, c.train));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const TestModel model;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz::accepted("safetensors", "fuzz.safetensors", [&] {
    const support::Safetensors file = support::decode_safetensors(bytes, "fuzz.safetensors");
    run_folder::verify_checksums(file, "fuzz.safetensors");
    for (const auto& [name, stored] : file.tensors) support::to_host(stored, stored.dtype, "fuzz.safetensors: " + name);
  });
  const std::filesystem::path path = fuzz::scratch_file(bytes, "fuzz.safetensors");
  fuzz::accepted("checkpoint", path.string(), [&] {
    support::Environment env;
    run_folder::load_checkpoint(path, model.manifest, env);
  });
  fuzz::accepted("--init weights", path.string(), [&] {
    support::Environment env;
    run_folder::load_pretrained(path, model.graph, env);
  });
  return 0;
}
