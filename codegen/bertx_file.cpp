// The .bertx container (see bertx_file.h).
#include "codegen/bertx_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <utility>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "codegen/render.h"
#include "ir/attention_layout.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "support/atomic_file.h"
#include "support/file_errors.h"
#include "support/options_json.h"

namespace bertc::codegen {
namespace {

using nlohmann::json;

constexpr const char (&kMagic)[8] = support::kBertxMagic;
// The header's layout: 2 since the kernel families have one set of names (matmul_epilogue is
// matmul) and the options are written from their declarations; 3 since kernels take their
// dropout offsets as integer parameters (a format-2 kernel has them in its source); 4 since each
// image carries its main loop's instruction mix; 5 since the IR texts and kernel sources are
// sections after the header (each source once per kernel name, not once per launch): the JSON
// header holds only records, so reading one is quick (fuzz-tiny's header 345 KB -> 88 KB).
constexpr int kBertxVersion = 5;

// A .bertx file whose content is wrong in the way the message says (decode_bertx names the file).
class Damaged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const char* kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::Buffer: return "buffer";
    case ParamKind::Table: return "table";
    case ParamKind::Scratch: return "scratch";
    case ParamKind::Workspace: return "workspace";
    case ParamKind::Integer: return "integer";
  }
  return "?";
}
ParamKind kind_of(const std::string& s) {
  if (s == "buffer") return ParamKind::Buffer;
  if (s == "table") return ParamKind::Table;
  if (s == "scratch") return ParamKind::Scratch;
  if (s == "workspace") return ParamKind::Workspace;
  if (s == "integer") return ParamKind::Integer;
  throw Damaged("unknown parameter kind '" + s + "'");
}

// A whole number of the header as T, `what` naming it: nlohmann's own conversion takes 2.7 as 2 and
// 18446744073709551615 as -1, so a value the encoder never writes (a hand-edited header with its
// checksum refitted) would be used as another.
template <typename T>
T whole(const json& j, std::string_view what) {
  const bool fits = j.is_number_unsigned() ? std::in_range<T>(j.get<uint64_t>())
                                           : j.is_number_integer() && std::in_range<T>(j.get<int64_t>());
  if (!fits)
    throw Damaged(fmt::format("its header's {} is {}, not a whole number from {} to {}", what, j.dump(),
                              std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  return static_cast<T>(j.is_number_unsigned() ? j.get<uint64_t>() : j.get<int64_t>());
}
// Sets `out` to object[key], read as whole() reads it.
template <typename T>
void read_whole(const json& object, const char* key, T& out) {
  out = whole<T>(object.at(key), key);
}

// The bytes after the header: texts and images, each found by {offset, size, xxh3} in the header.
class SectionWriter {
 public:
  json add(std::string_view bytes) {
    json ref = {{"offset", blob_.size()}, {"size", bytes.size()}, {"xxh3", XXH3_64bits(bytes.data(), bytes.size())}};
    blob_ += bytes;
    return ref;
  }
  const std::string& blob() const { return blob_; }

 private:
  std::string blob_;
};

// A section's bytes, checked against its record; `what` names it in the error. `seen` collects
// each section's place, for tiled().
std::string section(std::string_view blob, const json& ref, const std::string& what,
                    std::vector<std::pair<uint64_t, uint64_t>>& seen) {
  const auto offset = whole<uint64_t>(ref.at("offset"), what + "'s offset"),
             n = whole<uint64_t>(ref.at("size"), what + "'s size");
  seen.emplace_back(offset, n);
  if (offset > blob.size() || n > blob.size() - offset) throw Damaged(what + " runs past the end of the file");
  std::string bytes(blob.substr(offset, n));
  if (XXH3_64bits(bytes.data(), bytes.size()) != whole<uint64_t>(ref.at("xxh3"), what + "'s xxh3"))
    throw Damaged(what + "'s checksum does not match");
  return bytes;
}

// Whether the sections cover the bytes after the header exactly, as the encoder lays them out:
// bytes nothing refers to, or two sections sharing bytes, are damage (a file cut and joined).
bool tiled(std::vector<std::pair<uint64_t, uint64_t>> sections, uint64_t blob_size) {
  std::sort(sections.begin(), sections.end());
  uint64_t end = 0;
  for (const auto& [offset, n] : sections) {
    if (offset != end) return false;
    end += n;
  }
  return end == blob_size;
}

json dim_json(const Dim3& d) { return json::array({d.x, d.y, d.z}); }
Dim3 dim_of(const json& j, std::string_view what) {
  if (!j.is_array() || j.size() != 3) throw Damaged(fmt::format("its header's {} is {}, not [x, y, z]", what, j.dump()));
  const Dim3 d{whole<int>(j.at(0), what), whole<int>(j.at(1), what), whole<int>(j.at(2), what)};
  if (d.x < 1 || d.y < 1 || d.z < 1)
    throw Damaged(fmt::format("its header's {} is {}, not [x, y, z] of 1 or more each", what, j.dump()));
  return d;
}

json kernels_json(const GraphKernels& g, const std::vector<std::string>& labels) {
  json kernels = json::array();
  for (const KernelSpec& k : g.kernels) {
    json params = json::array();
    for (const KernelParam& p : k.params) {
      json jp = {{"kind", kind_name(p.kind)}, {"name", p.name}, {"c_type", p.c_type}, {"written", p.written}};
      if (p.kind == ParamKind::Buffer) jp["value"] = labels.at(p.value);
      if (p.kind == ParamKind::Scratch || p.kind == ParamKind::Workspace) jp["scratch_bytes"] = p.scratch_bytes;
      if (p.kind == ParamKind::Integer) jp["integer"] = p.integer;
      if (p.kind == ParamKind::Table) {
        jp["table"] = json::array();
        for (ir::ValueId v : p.table) jp["table"].push_back(labels.at(v));
        jp["table_written"] = p.table_written;
      }
      params.push_back(jp);
    }
    json zero = json::array();
    for (ir::ValueId v : k.zero_before) zero.push_back(labels.at(v));
    json library = nullptr;
    if (const auto& g = k.library)
      library = {{"transpose_a", g->transpose_a}, {"transpose_b", g->transpose_b}, {"m", g->m}, {"n", g->n}, {"k", g->k},
                 {"batch", g->batch}, {"lda", g->lda}, {"ldb", g->ldb}, {"ldc", g->ldc}, {"stride_a", g->stride_a},
                 {"stride_b", g->stride_b}, {"stride_c", g->stride_c}, {"a", labels.at(g->a)}, {"b", labels.at(g->b)},
                 {"to_workspace", g->to_workspace}, {"c", g->to_workspace ? json(nullptr) : json(labels.at(g->c))},
                 {"ab_dtype", ir::dtype_name(g->ab_dtype)}, {"c_dtype", ir::dtype_name(g->c_dtype)}, {"tf32", g->tf32}};
    kernels.push_back({{"name", k.name}, {"family", ir::enum_name(k.family)}, {"strategy", k.strategy}, {"label", k.label}, {"op_index", k.op_index},
                       {"grid", dim_json(k.grid)}, {"block", dim_json(k.block)}, {"cooperative", k.cooperative},
                       {"zero_before", zero}, {"params", params}, {"library", library}});
  }
  return {{"kernels", kernels}};
}

// `sources` by kernel name: a kernel without one is a library product alone (cuBLAS writes its result).
GraphKernels kernels_of(const json& j, const ir::Graph& graph, const std::map<std::string, std::string>& sources) {
  std::map<std::string, ir::ValueId> by_label;
  const std::vector<std::string> labels = ir::value_labels(graph);
  for (ir::ValueId v = 0; v < labels.size(); ++v)
    if (!labels[v].empty()) by_label[labels[v]] = v;
  auto value = [&](const json& label) {
    auto it = by_label.find(label.get<std::string>());
    if (it == by_label.end()) throw Damaged("a kernel refers to " + label.get<std::string>() + ", which the IR lacks");
    return it->second;
  };
  GraphKernels g;
  for (const json& jk : j.at("kernels")) {
    KernelSpec k;
    k.name = jk.at("name");
    const auto family = ir::enum_from_name<ir::KernelFamily>(jk.at("family").get<std::string>());
    if (!family) throw Damaged("kernel " + k.name + " has an unknown family");
    k.family = *family;
    k.strategy = jk.at("strategy");
    k.label = jk.at("label");
    read_whole(jk, "op_index", k.op_index);
    if (k.op_index >= graph.ops().size()) throw Damaged("kernel " + k.name + " runs an op the IR lacks");
    k.grid = dim_of(jk.at("grid"), "grid of kernel " + k.name);
    k.block = dim_of(jk.at("block"), "block of kernel " + k.name);
    k.cooperative = jk.at("cooperative");
    // (as render_attention sets it: from the op, which the file's IR holds)
    if (k.family == ir::KernelFamily::Attention)
      k.work_follows_data = ir::attention_layout(graph, graph.op(k.op_index)).example_ids.has_value();
    for (const json& z : jk.at("zero_before")) k.zero_before.push_back(value(z));
    for (const json& jp : jk.at("params")) {
      KernelParam p;
      p.kind = kind_of(jp.at("kind"));
      p.name = jp.at("name");
      p.c_type = jp.at("c_type");
      p.written = jp.at("written");
      if (p.kind == ParamKind::Buffer) p.value = value(jp.at("value"));
      if (p.kind == ParamKind::Scratch || p.kind == ParamKind::Workspace) read_whole(jp, "scratch_bytes", p.scratch_bytes);
      if (p.kind == ParamKind::Integer) read_whole(jp, "integer", p.integer);
      if (p.kind == ParamKind::Table) {
        for (const json& t : jp.at("table")) p.table.push_back(value(t));
        p.table_written = jp.at("table_written").get<std::vector<bool>>();
      }
      k.params.push_back(std::move(p));
    }
    if (auto it = sources.find(k.name); it != sources.end()) k.source = it->second;
    if (const json& l = jk.at("library"); !l.is_null()) {
      LibraryGemm lib;
      lib.transpose_a = l.at("transpose_a"), lib.transpose_b = l.at("transpose_b");
      for (const auto& [key, field] : {std::pair{"m", &lib.m}, {"n", &lib.n}, {"k", &lib.k}, {"batch", &lib.batch},
                                       {"lda", &lib.lda}, {"ldb", &lib.ldb}, {"ldc", &lib.ldc},
                                       {"stride_a", &lib.stride_a}, {"stride_b", &lib.stride_b},
                                       {"stride_c", &lib.stride_c}})
        read_whole(l, key, *field);
      lib.a = value(l.at("a")), lib.b = value(l.at("b"));
      lib.to_workspace = l.at("to_workspace");
      if (!lib.to_workspace) lib.c = value(l.at("c"));
      auto dtype = [&](const char* key) {
        const auto d = ir::dtype_from_name(l.at(key).get<std::string>());
        if (!d) throw Damaged("kernel " + k.name + " has a library product of unknown dtype");
        return *d;
      };
      lib.ab_dtype = dtype("ab_dtype");
      lib.c_dtype = dtype("c_dtype");
      lib.tf32 = l.at("tf32");
      k.library = lib;
    }
    if (k.source.empty() && !k.library) throw Damaged("kernel " + k.name + " has neither a source nor a library product");
    g.kernels.push_back(std::move(k));
  }
  return g;
}

}  // namespace

std::string encode_bertx(const CompiledProgram& p) {
  const ir::Graph step = ir::parse(p.step_ir), optimizer = ir::parse(p.optimizer_ir);
  SectionWriter sections;
  const json step_ir = sections.add(p.step_ir), optimizer_ir = sections.add(p.optimizer_ir);
  json sources = json::array();
  std::set<std::string> seen;
  for (const GraphKernels* g : {&p.step, &p.optimizer})
    for (const KernelSpec& k : g->kernels)
      if (!k.source.empty() && seen.insert(k.name).second) {
        json ref = sections.add(k.source);
        ref["name"] = k.name;
        sources.push_back(ref);
      }
  json images = json::array();
  for (const auto& [name, g] : p.images) {
    json ref = sections.add(g.image);
    ref.update({{"name", name}, {"ptx", g.ptx}, {"registers", g.ptxas.registers},
                {"shared_bytes", g.ptxas.shared_bytes}, {"stack_bytes", g.ptxas.stack_bytes},
                {"spill_store_bytes", g.ptxas.spill_store_bytes}, {"spill_load_bytes", g.ptxas.spill_load_bytes},
                {"main_loop_math", g.main_loop.math}, {"main_loop_shared_loads", g.main_loop.shared_loads}});
    images.push_back(ref);
  }
  const json header = {{"format", "bertx"},
                       {"version", kBertxVersion},
                       {"model", p.model},
                       {"model_program", p.model_program},
                       {"ranks", p.ranks},
                       {"options", support::options_json(passes::compile_option_specs(), p.options)},
                       {"config", p.config_text}, {"vocab", p.vocab}, {"nvrtc", {{"version", p.nvrtc_version}, {"library", p.nvrtc_library}}},
                       {"step", {{"ir", step_ir}, {"kernels", kernels_json(p.step, ir::value_labels(step))}}},
                       {"optimizer", {{"ir", optimizer_ir}, {"kernels", kernels_json(p.optimizer, ir::value_labels(optimizer))}}},
                       {"sources", sources},
                       {"images", images}};
  const std::string text = header.dump();
  std::string out(kMagic, 8);
  const uint64_t size = text.size(), sum = XXH3_64bits(text.data(), text.size());
  out.append(reinterpret_cast<const char*>(&size), 8);
  out.append(reinterpret_cast<const char*>(&sum), 8);
  return out + text + sections.blob();
}

CompiledProgram decode_bertx(std::string_view bytes, const std::string& source, bool in_executable) {
  auto bad = [&](const std::string& why) {
    return std::runtime_error(fmt::format("{}: not a usable {}: {}. Make it again with bertc compile CONFIG --arch "
                                          "sm_XX {}",
                                          source, in_executable ? "training executable" : ".bertx file", why,
                                          in_executable ? "--executable -o NAME" : "-o FILE.bertx"));
  };
  if (bytes.size() < 24 || std::memcmp(bytes.data(), kMagic, 8) != 0) throw bad("it does not start with the .bertx magic");
  uint64_t size = 0, sum = 0;
  std::memcpy(&size, bytes.data() + 8, 8);
  std::memcpy(&sum, bytes.data() + 16, 8);
  if (size > bytes.size() - 24) throw bad("it is truncated (the header runs past the end)");
  const std::string text(bytes.substr(24, size));
  if (XXH3_64bits(text.data(), text.size()) != sum) throw bad("the header's checksum does not match");
  const std::string_view blob = bytes.substr(24 + size);
  try {
    const json h = json::parse(text);
    if (h.at("format") != "bertx") throw Damaged("its header is not a .bertx header");
    if (h.at("version") != kBertxVersion)
      throw Damaged(fmt::format("it is format {}, written by another bertc version (this one reads format {})",
                                h.at("version").dump(), kBertxVersion));
    CompiledProgram p;
    p.model = h.at("model");
    p.model_program = h.at("model_program");
    read_whole(h, "ranks", p.ranks);
    if (p.ranks < 1) throw Damaged(fmt::format("it is compiled for {} ranks", p.ranks));
    try {
      p.options = support::options_from_json(passes::compile_option_specs(), h.at("options"));
    } catch (const std::runtime_error& e) {
      throw Damaged(std::string("its options are damaged: ") + e.what());
    }
    if (!passes::is_resolved(p.options)) throw Damaged("its options leave the arch or the precision auto");
    p.config_text = h.at("config");
    if (h.contains("vocab")) p.vocab = h.at("vocab").get<std::map<std::string, std::string>>();  // (absent before it was kept)
    p.nvrtc_version = h.at("nvrtc").at("version");
    p.nvrtc_library = h.at("nvrtc").at("library");
    // Every section checked against its checksum before anything is parsed: damage is found
    // at the cost of hashing, whatever part of the file it is in.
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    p.step_ir = section(blob, h.at("step").at("ir"), "the step graph's IR", seen);
    p.optimizer_ir = section(blob, h.at("optimizer").at("ir"), "the optimizer graph's IR", seen);
    std::map<std::string, std::string> sources;
    for (const json& js : h.at("sources")) {
      const std::string name = js.at("name");
      if (!sources.emplace(name, section(blob, js, "kernel " + name + "'s source", seen)).second)
        throw Damaged("kernel " + name + " has two sources");
    }
    for (const json& ji : h.at("images")) {
      GpuImage g;
      g.name = ji.at("name");
      g.image = section(blob, ji, "image " + g.name, seen);
      g.ptx = ji.at("ptx");
      for (const auto& [key, field] : {std::pair{"registers", &g.ptxas.registers}, {"shared_bytes", &g.ptxas.shared_bytes},
                                       {"stack_bytes", &g.ptxas.stack_bytes},
                                       {"spill_store_bytes", &g.ptxas.spill_store_bytes},
                                       {"spill_load_bytes", &g.ptxas.spill_load_bytes},
                                       {"main_loop_math", &g.main_loop.math},
                                       {"main_loop_shared_loads", &g.main_loop.shared_loads}})
        read_whole(ji, key, *field);
      const std::string name = g.name;
      if (!p.images.emplace(name, std::move(g)).second) throw Damaged("image " + name + " is there twice");
    }
    if (!tiled(std::move(seen), blob.size()))
      throw Damaged("its sections do not cover the bytes after the header exactly (bytes nothing refers to, or "
                    "sections sharing bytes)");
    const ir::Graph step = ir::parse(p.step_ir), optimizer = ir::parse(p.optimizer_ir);
    p.step = kernels_of(h.at("step").at("kernels"), step, sources);
    p.optimizer = kernels_of(h.at("optimizer").at("kernels"), optimizer, sources);
    p.step.arena = arena_layout(step);
    p.optimizer.arena = arena_layout(optimizer);
    for (const GraphKernels* g : {&p.step, &p.optimizer})
      for (const KernelSpec& k : g->kernels)
        if (!k.source.empty() && !p.images.count(k.name)) throw Damaged("kernel " + k.name + " has no image");
    return p;
  } catch (const Damaged& e) {
    throw bad(e.what());
  } catch (const json::exception& e) {
    throw bad(std::string("its header is malformed: ") + e.what());
  } catch (const ir::Error& e) {
    throw bad(std::string("its IR does not parse: ") + e.what());
  }
}

bool is_bertx(const std::filesystem::path& path) {
  if (!support::non_regular_kind(path).empty()) return false;  // (a pipe's open would wait; read_bertx says why)
  char start[24] = {};
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const auto end = static_cast<uint64_t>(std::max<std::streamoff>(in.tellg(), 0));
  in.seekg(0);
  if (!in.read(start, sizeof start)) return false;
  if (std::memcmp(start, kMagic, 8) == 0) return true;
  uint64_t size = 0, sum = 0;
  std::memcpy(&size, start + 8, 8);
  std::memcpy(&sum, start + 16, 8);
  if (size == 0 || size > end - 24 || size > (uint64_t{1} << 30)) return false;
  std::string header(size, '\0');
  return in.read(header.data(), static_cast<std::streamsize>(size)) && XXH3_64bits(header.data(), size) == sum;
}

void write_bertx(const std::filesystem::path& path, const CompiledProgram& p) {
  support::write_file_atomically(path, encode_bertx(p));
}

CompiledProgram read_bertx(const std::filesystem::path& path) {
  if (const std::string kind = support::non_regular_kind(path); !kind.empty())
    throw std::runtime_error(fmt::format("{}: {}, not a compiled program: give the .bertx file itself", path.string(), kind));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path.string()));
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return decode_bertx(bytes, path.string());
}

}  // namespace bertc::codegen
