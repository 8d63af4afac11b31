// The passes by name, in pipeline order, and the textual pipeline bertc-opt takes. Adding a pass:
// its file pair, one entry below, and its options in options.def (docs/ARCHITECTURE.md).
#include "passes/registry.h"

#include <cctype>
#include <functional>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "ir/value_names.h"
#include "ir/verifier.h"
#include "passes/accumulate.h"
#include "passes/annotate_costs.h"
#include "passes/attention.h"
#include "passes/autodiff.h"
#include "passes/dce.h"
#include "passes/fusion.h"
#include "passes/lower_lamb.h"
#include "passes/memory_plan.h"
#include "passes/optimizer.h"
#include "passes/precision.h"
#include "passes/schedule.h"

namespace bertc::passes {
namespace {

using support::OptionValue;
namespace names = ir::names;

// What earlier passes of the pipeline left in a graph, read from the graph itself, so that a pass
// given a graph of the wrong stage (bertc-opt lets one try) says so instead of doing nothing or
// failing deep inside.
struct Stage {
  bool gradients = false;     // autodiff has run: <param>.grad outputs
  bool accumulators = false;  // accumulate has run: <param>.grad_acc states
  bool optimizer = false;     // the optimizer graph
  bool fused = false;         // fusion has run
  // precision has run with a reduced mode: some value is stored in a float narrower than f32
  // (the frontend makes every float f32; mode=fp32 changes nothing)
  std::optional<ir::DType> reduced;
};

Stage stage_of(const ir::Graph& g) {
  Stage s;
  for (ir::ValueId v : g.outputs()) s.gradients |= g.value(v).name.ends_with(names::kGradSuffix);
  for (ir::ValueId v : g.values_of(ir::OpKind::State))
    s.accumulators |= g.value(v).name.ends_with(names::kGradAccumulatorSuffix);
  s.optimizer = is_optimizer_graph(g);
  s.fused = !g.values_of(ir::OpKind::Fused).empty();
  s.gradients |= s.accumulators && !s.optimizer;
  for (size_t v = 0; v < g.num_values() && !s.reduced; ++v)
    if (const ir::DType t = g.value(static_cast<ir::ValueId>(v)).type.dtype; ir::is_float(t) && ir::dtype_bytes(t) < 4) s.reduced = t;
  return s;
}

// Throws when `graph` is not of a stage `pass` runs on; `problem` says which and the fix.
void refuse_if(bool wrong_stage, std::string_view pass, std::string_view problem) {
  if (wrong_stage) throw ir::Error(fmt::format("{}: {}", pass, problem));
}

// The passes up to autodiff rewrite the forward graph, which the backward is then made from.
void require_forward(const ir::Graph& g, std::string_view pass) {
  const Stage s = stage_of(g);
  refuse_if(s.optimizer, pass, "the input is an optimizer graph; give it the forward graph (stage 01-frontend)");
  refuse_if(s.gradients, pass, "the input has a backward already; this pass runs before autodiff");
}

const PassInfo kPasses[] = {
    // bertc-opt only.
    {"verify", "check SSA order, attributes and every op's shape rule", PipelineGraphs::None, false, nullptr,
     [](ir::Graph& g, PassContext&) { ir::verify_or_throw(g); }},
    {"dce", "remove ops no output depends on", PipelineGraphs::None, false, nullptr,
     [](ir::Graph& g, PassContext&) { eliminate_dead_code(g); }},
    {"memory-plan", "print the arena plan (analysis; the graph is unchanged) to stderr", PipelineGraphs::None, false, nullptr,
     [](ir::Graph& g, PassContext&) {
       const std::string plan = describe(plan_memory(g));  // (planned before a word: a refusal reads whole)
       std::cerr << "// memory plan: " << plan << "\n";
     }},
    {"annotate-costs", "set each fused op's FLOPs, bytes and roofline time on the arch as attributes",
     PipelineGraphs::None, false, nullptr,
     [](ir::Graph& g, PassContext& c) {
       // (fusion leaves a lone op alone: "run fusion first" was said of a graph fusion had run on)
       refuse_if(!stage_of(g).fused, "annotate-costs",
                 "the input has no fused ops to annotate: it annotates the kernels fusion makes of chains of ops "
                 "(--passes=fusion,annotate-costs); a graph whose ops fusion leaves alone, a lone matmul, has none");
       annotate_costs(g, c.options.compile.arch.gpu(), c.options.compile.precision);
     }},
    // The training pipeline, in order.
    {"attention", "fuse matmul, scale, bias, softmax, dropout, matmul chains into attention ops", PipelineGraphs::Step, true,
     [](const PassOptions& o) { return o.compile.fused_attention; },
     [](ir::Graph& g, PassContext&) {
       require_forward(g, "attention");
       fuse_attention(g);
     }},
    {"precision", "store activations in fp16 or bf16 (fp32 master weights; fp16 with loss scaling)",
     PipelineGraphs::Step, true, nullptr,
     [](ir::Graph& g, PassContext& c) {
       if (c.options.compile.precision == Precision::Auto)
         throw ir::Error(fmt::format("precision needs a mode: precision{{mode=bf16}} ({}; auto is the target GPU's "
                                     "choice, made by bertc compile)",
                                     ir::enum_choice_list<Precision>()));
       require_forward(g, "precision");
       // (a second mode cast the first's values again: a graph of f16 and bf16 at once, rounded twice)
       if (const auto dtype = stage_of(g).reduced)
         throw ir::Error(fmt::format("precision: the input stores values in {} already: precision has run; give it "
                                     "the graph before precision (stage 02-attention)",
                                     ir::dtype_name(*dtype)));
       apply_precision(g, c.options.compile.precision);
     }},
    {"autodiff", "append d loss / d param as outputs <param>.grad", PipelineGraphs::Step, false, nullptr,
     [](ir::Graph& g, PassContext&) {
       require_forward(g, "autodiff");
       differentiate(g);
     }},
    {"accumulate", "sum <param>.grad into states <param>.grad_acc", PipelineGraphs::Step, false, nullptr,
     [](ir::Graph& g, PassContext&) {
       const Stage s = stage_of(g);
       refuse_if(s.optimizer, "accumulate", "the input is an optimizer graph; give it the step graph (stage autodiff)");
       refuse_if(s.accumulators, "accumulate", "the input has <param>.grad_acc states already: accumulate has run");
       accumulate_gradients(g);
     }},
    {"optimizer", "replace the step graph by its optimizer step graph (clipping, AdamW or LAMB, updates)",
     PipelineGraphs::MakesOptimizer, false, nullptr,
     [](ir::Graph& g, PassContext& c) {
       const Stage s = stage_of(g);
       refuse_if(s.optimizer, "optimizer", "the input is an optimizer graph already; give it the step graph (stage accumulate)");
       refuse_if(!s.accumulators, "optimizer", "the input has no <param>.grad_acc states; run accumulate first");
       g = build_optimizer_graph(g, c.options.optimizer);
     }},
    {"lower-lamb", "replace lamb ops by their moments, per-tensor norms and update (kernels render those)",
     PipelineGraphs::Optimizer, false, [](const PassOptions& o) { return o.optimizer.optimizer.kind == ir::OpKind::Lamb; },
     [](ir::Graph& g, PassContext&) {
       refuse_if(!stage_of(g).optimizer, "lower-lamb", "the input is not an optimizer graph; run optimizer first");
       refuse_if(stage_of(g).fused, "lower-lamb", "the input is fused already; lower-lamb runs before fusion");
       lower_lamb(g);
     }},
    {"recompute", "drop activations the backward keeps and recompute them there", PipelineGraphs::Step, false, nullptr,
     [](ir::Graph& g, PassContext& c) {
       refuse_if(c.options.compile.recompute != RecomputePolicy::Auto && c.options.compile.memory_budget != 0,
                 "recompute", "budget is read only by policy=auto");
       const Stage s = stage_of(g);
       refuse_if(s.optimizer || !s.gradients, "recompute", "the input has no backward to recompute for; give it the step graph");
       refuse_if(s.fused, "recompute", "the input is fused already; recompute runs before fusion");
       c.recompute = recompute(g, c.options.compile.recompute, c.options.compile.memory_budget);
     }},
    {"fusion", "group ops into fused kernels (one launch each)", PipelineGraphs::StepAndOptimizer, true,
     [](const PassOptions& o) { return o.compile.fusion; },
     [](ir::Graph& g, PassContext&) {
       refuse_if(stage_of(g).fused, "fusion", "the input is fused already: fusion has run");
       fuse(g);
     }},
    {"schedule", "run ops that depend only on params and inputs just before their first use",
     PipelineGraphs::StepAndOptimizer, true, nullptr, [](ir::Graph& g, PassContext&) { schedule_for_memory(g); }},
};

// One option a pass reads: a compile or optimizer option under its pass key.
struct PassKey {
  std::string_view key, doc;
  support::ValueKind kind;
  std::vector<std::string> choices;
  std::function<OptionValue(const PassOptions&)> get;
  std::function<std::optional<std::string>(PassOptions&, const OptionValue&)> set;
};

template <typename S, typename Part>
void add_keys(std::vector<PassKey>& out, std::string_view pass, const std::vector<support::OptionSpec<S>>& specs,
              Part part) {
  for (const support::OptionSpec<S>& s : specs)
    if (const auto key = s.key_in(pass))
      out.push_back({*key, s.doc, s.kind, s.choices, [s, part](const PassOptions& o) { return s.get(part(o)); },
                     [s, part](PassOptions& o, const OptionValue& v) { return s.set(part(o), v); }});
}

std::vector<PassKey> keys_of(const PassInfo& pass) {
  std::vector<PassKey> keys;
  add_keys(keys, pass.name, compile_option_specs(), [](auto& o) -> auto& { return o.compile; });
  add_keys(keys, pass.name, optimizer_option_specs(), [](auto& o) -> auto& { return o.optimizer; });
  return keys;
}

std::string pass_names() {
  std::vector<std::string_view> names;
  for (const PassInfo& p : kPasses) names.push_back(p.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// A cursor over the pipeline text; errors name the column.
class PipelineParser {
 public:
  explicit PipelineParser(std::string_view text) : text_(text) {}

  std::vector<PassInvocation> parse() {
    std::vector<PassInvocation> out;
    if (text_.empty()) return out;
    for (;;) {
      out.push_back(element());
      skip_spaces();
      if (at_end()) return out;
      expect(',');
    }
  }

 private:
  PassInvocation element() {
    skip_spaces();
    const size_t at = pos_;
    const std::string name = word();
    if (name.empty()) fail(at, "expected a pass name");
    PassInvocation inv;
    inv.pass = find_pass(name);
    if (!inv.pass) fail(at, fmt::format("unknown pass '{}' (passes: {})", name, pass_names()));
    skip_spaces();
    if (at_end() || peek() != '{') return inv;
    ++pos_;
    const std::vector<PassKey> keys = keys_of(*inv.pass);
    std::set<std::string> given;
    for (;;) {
      skip_spaces();
      if (at_end()) fail(pos_, fmt::format("'{{' of {} is not closed by '}}'", name));
      if (peek() == '}') break;
      if (peek() == ',') fail(pos_, fmt::format("the options of {} are separated by spaces, not commas", name));
      const size_t key_at = pos_;
      const std::string key = word();
      if (key.empty()) fail(key_at, "expected an option: key=value");
      const PassKey* k = nullptr;
      for (const PassKey& candidate : keys)
        if (candidate.key == key) k = &candidate;
      if (!k) fail(key_at, unknown_key(name, key, keys));
      if (!given.insert(key).second) fail(key_at, fmt::format("{}{{{}}} is given twice", name, key));
      expect('=');
      const size_t value_at = pos_;
      std::string text;
      while (!at_end() && !is_space(peek()) && peek() != '}' && peek() != ',') text += text_[pos_++];
      const auto value = support::value_from_text(k->kind, text);
      if (!value) fail(value_at, fmt::format("{}{{{}=...}} {}", name, key, support::why_no_value(k->kind, text)));
      if (auto problem = k->set(inv.options, *value)) fail(value_at, fmt::format("{}{{{}}} {}", name, key, *problem));
    }
    ++pos_;
    return inv;
  }

  static std::string unknown_key(const std::string& pass, const std::string& key, const std::vector<PassKey>& keys) {
    if (keys.empty()) return fmt::format("pass {} takes no options, found '{}'", pass, key);
    std::vector<std::string_view> names;
    for (const PassKey& k : keys) names.push_back(k.key);
    return fmt::format("pass {} has no option '{}' (it takes: {})", pass, key, fmt::join(names, ", "));
  }

  std::string word() {
    std::string w;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-'))
      w += text_[pos_++];
    return w;
  }
  static bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
  void skip_spaces() {
    while (!at_end() && is_space(peek())) ++pos_;
  }
  void expect(char c) {
    if (at_end() || peek() != c) fail(pos_, fmt::format("expected '{}'", c));
    ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  [[noreturn]] void fail(size_t at, const std::string& message) const {
    throw ir::Error(fmt::format("pass pipeline '{}', column {}: {}", text_, at + 1, message));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::span<const PassInfo> registered_passes() { return kPasses; }

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo& p : kPasses)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<PassInvocation> parse_pipeline(std::string_view text) { return PipelineParser(text).parse(); }

std::string invocation_text(const PassInfo& pass, const PassOptions& options) {
  std::vector<std::string> parts;
  for (const PassKey& k : keys_of(pass)) parts.push_back(fmt::format("{}={}", k.key, support::value_text(k.get(options))));
  return parts.empty() ? std::string(pass.name) : fmt::format("{}{{{}}}", pass.name, fmt::join(parts, " "));
}

namespace {

// A table cell: '|' would end it, and <param> would be read as an HTML tag.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) out += c == '|' ? "\\|" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return out;
}

std::string pass_table() {
  std::string out = "| pass | graphs | what it does | options |\n| --- | --- | --- | --- |\n";
  for (const PassInfo& p : kPasses) {
    std::vector<std::string> keys;
    for (const PassKey& k : keys_of(p)) keys.push_back(fmt::format("`{}`", k.key));
    out += fmt::format("| `{}` | {} | {} | {} |\n", p.name, ir::enum_name(p.graphs), cell(p.summary), fmt::join(keys, ", "));
  }
  return out;
}

std::string compile_option_table() {
  std::string out =
      "| key | flag | values | default | what it sets | as a pass option |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const support::OptionSpec<CompileOptions>& s : compile_option_specs()) {
    const std::string values = s.choices.empty() ? std::string(support::kind_description(s.kind))
                                                 : fmt::format("{}", fmt::join(s.choices, ", "));
    std::vector<std::string> readers;
    for (const PassInfo& p : kPasses)
      if (const auto name = s.key_in(p.name)) readers.push_back(fmt::format("`{}{{{}}}`", p.name, *name));
    out += fmt::format("| `{}` | `{}` | {} | {} | {} | {} |\n", s.key, s.flag(), cell(values),
                       s.default_text.empty() ? "none" : fmt::format("`{}`", s.default_text), cell(s.doc),
                       readers.empty() ? "-" : fmt::format("{}", fmt::join(readers, ", ")));
  }
  return out;
}

}  // namespace

std::string markdown_tables() { return pass_table() + "\n" + compile_option_table(); }

std::string pass_options_help(const PassInfo& pass) {
  std::string out;
  const PassOptions defaults;
  for (const PassKey& k : keys_of(pass)) {
    const std::string value = k.choices.empty() ? std::string(support::kind_description(k.kind))
                                                : fmt::format("{}", fmt::join(k.choices, "|"));
    out += fmt::format("\n      {}=<{}>  {} (default {})", k.key, value, k.doc, support::value_text(k.get(defaults)));
  }
  return out;
}

}  // namespace bertc::passes
