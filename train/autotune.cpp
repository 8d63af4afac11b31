// Timing generated kernels against cuBLAS per product (see autotune.h).
#include "train/autotune.h"

#include "codegen/kernel_cache.h"

#include <chrono>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/atomic_file.h"
#include "codegen/render.h"
#include "runtime/plan_executor.h"

namespace bertc::train {
namespace {

using codegen::KernelSpec;
using codegen::ParamKind;

// One product's launch in buffers of its own (zeroed: timings do not depend on the values).
class IsolatedLaunch {
 public:
  IsolatedLaunch(const ir::Graph& graph, const KernelSpec& k, runtime::Device& device) : graph_(graph), k_(k), device_(device) {
    for (const codegen::KernelParam& p : k.params) {
      if (p.kind == ParamKind::Table) throw std::logic_error("autotune: a matrix kernel with a pointer table");
      if (p.kind == ParamKind::Scratch) buffers_.scratch = zeroed(p.scratch_bytes);
      if (p.kind == ParamKind::Workspace) buffers_.workspace = zeroed(p.scratch_bytes);
    }
    if (k.library && k.library->to_workspace && !buffers_.workspace)
      throw std::logic_error("autotune: a cuBLAS record to a workspace the launch lacks");
    buffers_.address = [this](ir::ValueId v) {
      void*& b = values_[v];
      if (!b) b = zeroed(static_cast<size_t>(std::max<int64_t>(graph_.value(v).type.bytes(), 1)));
      return b;
    };
    issue();  // allocates every buffer now, not while timed; also the untimed first launch
  }

  void issue() { runtime::issue_launch(device_, graph_, k_, buffers_); }

 private:
  void* zeroed(size_t bytes) {
    void* b = device_.allocate(bytes, "an autotune trial's buffer");
    device_.fill(b, 0, bytes);
    return b;
  }

  const ir::Graph& graph_;
  const KernelSpec& k_;
  runtime::Device& device_;
  std::map<ir::ValueId, void*> values_;
  runtime::LaunchBuffers buffers_;
};

double seconds_per_launch(IsolatedLaunch& launch, runtime::Device& device, int repeats) {
  device.synchronize();  // after the constructor's untimed first launch
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) launch.issue();
  device.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() / repeats;
}

// The same product in both forms: the generated kernel, and the cuBLAS record with its epilogue.
struct Candidates {
  const ir::Graph* graph = nullptr;
  const KernelSpec* generated = nullptr;
  const KernelSpec* library = nullptr;
};

// The cache's measurements; a cache that is missing or cannot be read (damaged, not JSON, a
// folder) is only a cache: measured again, with a line on `log`.
nlohmann::json read_cache(const std::filesystem::path& file, std::ostream& log) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return nlohmann::json::object();
  try {
    // (The kernel caches' file access: a folder in the file's place is removed, not kept forever.)
    const std::optional<std::string> bytes = codegen::read_cache_entry(file);
    if (!bytes) throw std::runtime_error("not a readable file");
    nlohmann::json j = nlohmann::json::parse(*bytes);
    if (!j.is_object()) throw std::runtime_error("not a JSON object");
    return j;
  } catch (const std::exception& e) {
    log << fmt::format("autotune: {} cannot be read ({}): measuring again\n", file.string(), e.what());
    return nlohmann::json::object();
  }
}

}  // namespace

std::map<std::string, passes::MatmulPolicy> autotune_products(const std::vector<const ir::Graph*>& graphs,
                                                     const codegen::RenderTarget& target, runtime::Device& device,
                                                     const std::filesystem::path& cache_file, int repeats,
                                                     std::ostream& log) {
  codegen::RenderTarget generated = target, library = target;
  generated.matmul = passes::MatmulPolicy::Generated, library.matmul = passes::MatmulPolicy::Library;
  generated.tuned.clear(), library.tuned.clear();
  std::vector<codegen::GraphKernels> rendered;  // kept alive: Candidates point into them
  std::map<std::string, Candidates> products;
  for (const ir::Graph* g : graphs) {
    rendered.push_back(codegen::render_graph(*g, generated));
    rendered.push_back(codegen::render_graph(*g, library));
    const auto& gen = rendered[rendered.size() - 2].kernels;
    const auto& lib = rendered.back().kernels;
    std::map<size_t, const KernelSpec*> library_by_op;
    for (const KernelSpec& k : lib)
      if (k.library) library_by_op[k.op_index] = &k;
    for (const KernelSpec& k : gen) {
      const auto it = library_by_op.find(k.op_index);
      if (k.product.empty() || it == library_by_op.end()) continue;
      products.try_emplace(k.product, Candidates{g, &k, it->second});
    }
  }
  nlohmann::json cache = read_cache(cache_file, log);
  nlohmann::json& mine = cache[device.name()];
  std::map<std::string, passes::MatmulPolicy> choices;
  int measured = 0, cached = 0;
  for (const auto& [key, c] : products) {
    const std::string entry = fmt::format("{} | {} | {}", key, c.generated->name, c.library->name);
    if (mine.is_object() && mine.contains(entry)) {
      const nlohmann::json& saved = mine[entry];
      const auto choice = saved.is_object() && saved.contains("choice") && saved["choice"].is_string()
                              ? ir::enum_from_name<passes::MatmulPolicy>(saved["choice"].get<std::string>())
                              : std::nullopt;
      if (choice && *choice != passes::MatmulPolicy::Auto) {
        choices[key] = *choice;
        ++cached;
        continue;
      }
      log << fmt::format("autotune: {}: entry '{}' holds no choice of generated or library: measuring it again\n",
                         cache_file.string(), entry);
    }
    if (!mine.is_object()) mine = nlohmann::json::object();
    device.load({c.generated, c.library});
    IsolatedLaunch gen(*c.graph, *c.generated, device), lib(*c.graph, *c.library, device);
    const double gen_s = seconds_per_launch(gen, device, repeats), lib_s = seconds_per_launch(lib, device, repeats);
    const passes::MatmulPolicy choice = lib_s < gen_s ? passes::MatmulPolicy::Library : passes::MatmulPolicy::Generated;
    log << fmt::format("autotune: {}: generated ({}) {:.3f} ms, cuBLAS {:.3f} ms: {}\n", key, c.generated->strategy,
                       gen_s * 1e3, lib_s * 1e3, choice == passes::MatmulPolicy::Library ? "cuBLAS" : "generated");
    mine[entry] = {{"choice", ir::enum_name(choice)}, {"generated_ms", gen_s * 1e3}, {"library_ms", lib_s * 1e3}};
    choices[key] = choice;
    ++measured;
  }
  if (measured > 0) {
    try {
      std::filesystem::create_directories(cache_file.parent_path());
      support::write_file_atomically(cache_file, cache.dump(1) + "\n");
    } catch (const std::exception& e) {
      log << fmt::format("autotune: the measurements cannot be kept in {} ({}): the next run measures again\n",
                         cache_file.string(), e.what());
    }
  }
  int library_count = 0;
  for (const auto& [key, choice] : choices) library_count += choice == passes::MatmulPolicy::Library;
  log << fmt::format("autotune: {} products ({} measured, {} from {}): {} to cuBLAS, {} generated\n", choices.size(),
                     measured, cached, cache_file.string(), library_count, choices.size() - library_count);
  return choices;
}

}  // namespace bertc::train
