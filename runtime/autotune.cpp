// Timing generated kernels against cuBLAS per product (see autotune.h).
#include "runtime/autotune.h"

#include <chrono>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/atomic_file.h"
#include "codegen/render.h"

namespace bertc::runtime {
namespace {

using codegen::KernelSpec;
using codegen::ParamKind;

// One product's launch in buffers of its own (zeroed: timings do not depend on the values).
class IsolatedLaunch {
 public:
  IsolatedLaunch(const ir::Graph& graph, const KernelSpec& k, Device& device) : graph_(graph), k_(k), device_(device) {
    for (const codegen::KernelParam& p : k.params) {
      switch (p.kind) {
        case ParamKind::Buffer: values_.push_back(buffer(p.value)); break;
        case ParamKind::Scratch:
        case ParamKind::Workspace: {
          void* b = device.allocate(p.scratch_bytes);
          device.fill(b, 0, p.scratch_bytes);
          values_.push_back(b);
          if (p.kind == ParamKind::Workspace) workspace_ = b;
          break;
        }
        case ParamKind::Table: throw std::logic_error("autotune: a matrix kernel with a pointer table");
      }
    }
    if (k.library && k.library->to_workspace && !workspace_)
      throw std::logic_error("autotune: a cuBLAS record to a workspace the launch lacks");
    for (ir::ValueId v : k.zero_before) buffer(v);
    if (k.library) {
      buffer(k.library->a), buffer(k.library->b);
      if (!k.library->to_workspace) buffer(k.library->c);
    }
    for (void*& v : values_) args_.push_back(&v);
  }

  void issue() {
    for (ir::ValueId v : k_.zero_before) device_.fill(buffers_.at(v), 0, bytes(v));
    if (const auto& g = k_.library)
      device_.gemm(codegen::cublas_args(*g), buffers_.at(g->b), buffers_.at(g->a),
                   g->to_workspace ? workspace_ : buffers_.at(g->c));
    if (!k_.source.empty()) device_.launch(k_, args_.data());
  }

 private:
  size_t bytes(ir::ValueId v) const { return static_cast<size_t>(std::max<int64_t>(graph_.value(v).type.bytes(), 1)); }
  void* buffer(ir::ValueId v) {
    auto [it, fresh] = buffers_.try_emplace(v, nullptr);
    if (fresh) {
      it->second = device_.allocate(bytes(v));
      device_.fill(it->second, 0, bytes(v));
    }
    return it->second;
  }

  const ir::Graph& graph_;
  const KernelSpec& k_;
  Device& device_;
  std::map<ir::ValueId, void*> buffers_;
  std::vector<void*> values_;
  std::vector<void*> args_;
  void* workspace_ = nullptr;
};

double seconds_per_launch(IsolatedLaunch& launch, Device& device, int repeats) {
  launch.issue();  // untimed: first-launch costs
  device.synchronize();
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

nlohmann::json read_cache(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) return nlohmann::json::object();
  std::ifstream in(file);
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (!j.is_object()) throw std::runtime_error("not a JSON object");
    return j;
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: unreadable autotune cache ({}); delete it to measure again",
                                         file.string(), e.what()));
  }
}

}  // namespace

std::map<std::string, std::string> autotune_products(const std::vector<const ir::Graph*>& graphs,
                                                     const codegen::RenderTarget& target, Device& device,
                                                     const std::filesystem::path& cache_file, int repeats,
                                                     std::ostream& log) {
  codegen::RenderTarget generated = target, library = target;
  generated.matmul = "generated", library.matmul = "library";
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
  nlohmann::json cache = read_cache(cache_file);
  nlohmann::json& mine = cache[device.name()];
  std::map<std::string, std::string> choices;
  int measured = 0, cached = 0;
  for (const auto& [key, c] : products) {
    const std::string entry = fmt::format("{} | {} | {}", key, c.generated->name, c.library->name);
    if (mine.contains(entry)) {
      choices[key] = mine[entry].at("choice").get<std::string>();
      ++cached;
      continue;
    }
    device.load({c.generated, c.library});
    IsolatedLaunch gen(*c.graph, *c.generated, device), lib(*c.graph, *c.library, device);
    const double gen_s = seconds_per_launch(gen, device, repeats), lib_s = seconds_per_launch(lib, device, repeats);
    const std::string choice = lib_s < gen_s ? "library" : "generated";
    log << fmt::format("autotune: {}: generated ({}) {:.3f} ms, cuBLAS {:.3f} ms: {}\n", key, c.generated->strategy,
                       gen_s * 1e3, lib_s * 1e3, choice == "library" ? "cuBLAS" : "generated");
    mine[entry] = {{"choice", choice}, {"generated_ms", gen_s * 1e3}, {"library_ms", lib_s * 1e3}};
    choices[key] = choice;
    ++measured;
  }
  if (measured > 0) {
    std::filesystem::create_directories(cache_file.parent_path());
    codegen::write_file_atomically(cache_file, cache.dump(1) + "\n");
  }
  int library_count = 0;
  for (const auto& [key, choice] : choices) library_count += choice == "library";
  log << fmt::format("autotune: {} products ({} measured, {} from {}): {} to cuBLAS, {} generated\n", choices.size(),
                     measured, cached, cache_file.string(), library_count, choices.size() - library_count);
  return choices;
}

}  // namespace bertc::runtime
