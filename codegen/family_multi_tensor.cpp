// The multi-tensor family: the optimizer step for every parameter in one kernel (the gradient
// norm and overflow check in one, the updates in another). The group's work splits into
// segments, one per tensor (or set of same-sized tensors computed together); blocks take chunks
// of segments. Segments whose code is the same up to which tensors they touch share it: the
// tensors come from a pointer table (kernel parameters would overflow their 4 KB), each segment
// finding its own at a base offset. Sums over tensors are deterministic: each block stores its
// partial sum in a slot of its own, and the last block adds each sum's slots up in a fixed order.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/family.h"

namespace bertc::codegen {
namespace {

using ir::OpKind;

constexpr int kThreads = 256;
constexpr int64_t kChunk = kThreads * 16;  // elements per block

bool is_reduction(const ir::Graph& g, const ir::Op& op) {
  if (op.kind == OpKind::AllFinite) return true;
  // (Not max: the scratch starts at zero, which is a sum's identity only.)
  return (op.kind == OpKind::ReduceSum || op.kind == OpKind::ReduceMean) && g.value(op.result()).type.numel() == 1;
}

struct Task {
  enum Kind { Accumulate, Check, Write } kind;
  ir::ValueId value;  // what is summed, checked or written
  size_t index;       // Accumulate: the reduction (slot); Check: the all_finite op (slot); Write: the output
};

struct Segment {
  int64_t n = 0;
  std::set<ir::ValueId> tensors;  // the tensor inputs its values read
  std::set<ir::ValueId> scalars;  // the scalar inputs its values read (make_table)
  std::vector<Task> tasks;
  std::vector<size_t> locals;     // table entries of its own, from `base` on
  size_t base = 0, first_block = 0, template_id = 0;
  size_t first_slot = 0;  // its blocks' partial sums: its sum a of block j at partials[first_slot + a * blocks + j]
  size_t blocks() const { return static_cast<size_t>(std::max<int64_t>(1, (n + kChunk - 1) / kChunk)); }
};

class MultiTensorKernel {
 public:
  explicit MultiTensorKernel(const KernelInput& in) : in_(in), body_(in.body), inputs_(body_.values_of(OpKind::Input)) {
    for (const ir::Op& op : body_.ops())
      if (op.kind == OpKind::Lamb)
        throw ir::Error("multi-tensor family: a lamb op needs its per-tensor norms before its update: lower it first "
                        "(the lower-lamb pass, which the pipeline runs)");
    depends_.resize(body_.num_values());
    for (const ir::Op& op : body_.ops()) {
      std::set<ir::ValueId> d;
      for (ir::ValueId v : op.operands) d.insert(depends_[v].begin(), depends_[v].end());
      if (op.kind == OpKind::Input && body_.value(op.result()).type.numel() > 1) d.insert(op.result());
      for (ir::ValueId r : op.results) depends_[r] = is_reduction(body_, op) ? std::set<ir::ValueId>{} : d;
      if (is_reduction(body_, op)) reductions_.push_back(&op);
    }
    make_segments();
    make_table();
  }

  std::string emit() {
    std::vector<std::string> templates;
    std::map<std::string, size_t> seen;
    for (Segment& s : segments_) {
      const std::string t = segment_code(s);
      auto [it, fresh] = seen.try_emplace(t, templates.size());
      if (fresh) templates.push_back(t);
      s.template_id = it->second;
    }
    // Constant tables: each segment's first block, size, table base, first slot and template.
    auto column = [&](auto field) {
      std::vector<std::string> v;
      for (const Segment& s : segments_) v.push_back(fmt::format("{}", field(s)));
      return fmt::format("{}", fmt::join(v, ", "));
    };
    tables_ = fmt::format(
        "BX_CONSTANT int BX_NAME_first[] = {{{}}};\nBX_CONSTANT bx_i64 BX_NAME_n[] = {{{}}};\n"
        "BX_CONSTANT int BX_NAME_base[] = {{{}}};\nBX_CONSTANT int BX_NAME_slot[] = {{{}}};\n"
        "BX_CONSTANT int BX_NAME_template[] = {{{}}};\n",
        column([](const Segment& s) { return s.first_block; }), column([](const Segment& s) { return s.n; }),
        column([](const Segment& s) { return s.base; }), column([](const Segment& s) { return s.first_slot; }),
        column([](const Segment& s) { return s.template_id; }));
    std::string body;
    body += fmt::format(
        "  // This block's segment: the last whose first block is not after it.\n"
        "  const int b = bx_bid_x();\n"
        "  int lo = 0, hi = {};\n"
        "  while (lo < hi) {{\n"
        "    const int mid = (lo + hi + 1) / 2;\n"
        "    if (BX_NAME_first[mid] <= b) lo = mid; else hi = mid - 1;\n"
        "  }}\n"
        "  const bx_i64 n = BX_NAME_n[lo];\n"
        "  const int sb = BX_NAME_base[lo], ss = BX_NAME_slot[lo];\n"
        "  const bx_i64 chunk = b - BX_NAME_first[lo], chunks = n > {} ? (n + {}) / {} : 1;\n"
        "  const bx_i64 begin = chunk * {};\n"
        "  const bx_i64 end = begin + {} < n ? begin + {} : n;\n",
        segments_.size() - 1, kChunk, kChunk - 1, kChunk, kChunk, kChunk, kChunk);
    if (cooperative_) body += "  BX_SHARED(float, red, 32);\n";
    body += "  switch (BX_NAME_template[lo]) {\n";
    for (size_t t = 0; t < templates.size(); ++t) body += fmt::format("    case {}: {{\n{}      break;\n    }}\n", t, templates[t]);
    body += "  }\n";
    body += final_code();
    return body;
  }

  std::vector<KernelParam> params() const {
    KernelParam table;
    table.kind = ParamKind::Table;
    table.name = "tb";
    table.c_type = "void* const*";
    for (const Entry& e : table_) {
      table.table.push_back(e.outer);
      table.table_written.push_back(e.written);
    }
    std::vector<KernelParam> p = {table};
    if (partial_floats_ > 0) p.push_back(workspace_param("partials", 4 * partial_floats_));
    if (!reductions_.empty()) p.push_back(scratch_param(slots_));
    return p;
  }
  const std::string& tables() const { return tables_; }
  int blocks() const { return static_cast<int>(blocks_); }
  bool cooperative() const { return cooperative_; }

 private:
  struct Entry {
    ir::ValueId outer;  // the value in the outer graph
    bool written;
    ir::DType dtype;
  };

  bool scalar(ir::ValueId v) const { return body_.value(v).type.numel() == 1; }

  // One segment per (size, tensors read): what one pass over same-indexed elements computes.
  void make_segments() {
    std::map<std::pair<int64_t, std::set<ir::ValueId>>, size_t> by_key;
    auto add = [&](Task t) {
      const std::pair<int64_t, std::set<ir::ValueId>> key{body_.value(t.value).type.numel(), depends_[t.value]};
      auto [it, fresh] = by_key.try_emplace(key, segments_.size());
      if (fresh) segments_.push_back({key.first, key.second, {}, {}, {}, 0, 0, 0, 0});
      segments_[it->second].tasks.push_back(t);
    };
    for (size_t r = 0; r < reductions_.size(); ++r) {
      const ir::Op& op = *reductions_[r];
      if (op.kind == OpKind::AllFinite) {
        for (ir::ValueId v : op.operands) add({Task::Check, v, r});
      } else {
        add({Task::Accumulate, op.operands[0], r});
      }
    }
    const auto& outputs = body_.outputs();
    // A write that reads no tensor (the zeroed gradient accumulators) joins the segment reading the
    // tensor it replaces, if any: the memory plan may put it in that tensor's place, and then only
    // the same thread, reading first, may overwrite the element (another block could run first).
    std::vector<size_t> constant_writes;
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (scalar(outputs[k])) continue;
      if (depends_[outputs[k]].empty() && replaced_input(k)) constant_writes.push_back(k);
      else add({Task::Write, outputs[k], k});
    }
    for (size_t k : constant_writes) {
      const ir::ValueId input = *replaced_input(k);
      auto reader = std::find_if(segments_.begin(), segments_.end(), [&](const Segment& s) {
        return s.n == body_.value(outputs[k]).type.numel() && s.tensors.count(input);
      });
      if (reader != segments_.end()) reader->tasks.push_back({Task::Write, outputs[k], k});
      else add({Task::Write, outputs[k], k});
    }
    merge_readers_of_replaced_inputs();
    // Slots: a sum's partials in the workspace, one per block of its segment, from slot_of_ on (a
    // segment's own sums from its first slot); one count per all_finite in scratch, which blocks
    // add into (counts of non-finite elements are exact in any order).
    slot_of_.assign(reductions_.size(), 0);
    for (Segment& s : segments_) {
      s.first_slot = partial_floats_;
      for (const Task& t : s.tasks)
        if (t.kind == Task::Accumulate) {
          slot_of_[t.index] = partial_floats_;
          partials_of_.emplace(t.index, s.blocks());
          partial_floats_ += s.blocks();
        }
    }
    for (size_t r = 0; r < reductions_.size(); ++r)
      if (reductions_[r]->kind == OpKind::AllFinite) slot_of_[r] = slots_++;
    size_t block = 0;
    for (Segment& s : segments_) {
      s.first_block = block;
      block += s.blocks();
    }
    blocks_ = block;
    for (const Segment& s : segments_)
      for (const Task& t : s.tasks) cooperative_ = cooperative_ || t.kind != Task::Write;
    cooperative_ = cooperative_ || !reductions_.empty();
  }

  // An output written in place of an input (the next value of a state, stored in its buffer) must
  // be written by the thread that reads that input's element, after it has: a segment reading the
  // input joins the writer's (LAMB's moments and the direction read from the same old moments
  // would otherwise be segments of their own, in other blocks, racing).
  void merge_readers_of_replaced_inputs() {
    const auto& outputs = body_.outputs();
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t w = 0; w < segments_.size() && !merged; ++w)
        for (const Task& t : segments_[w].tasks) {
          if (t.kind != Task::Write || scalar(outputs[t.index])) continue;
          const std::optional<ir::ValueId> replaced = replaced_input(t.index);
          if (!replaced) continue;
          for (size_t r = 0; r < segments_.size(); ++r)
            if (r != w && segments_[r].tensors.count(*replaced)) {
              Segment& into = segments_[w];
              into.tensors.insert(segments_[r].tensors.begin(), segments_[r].tensors.end());
              into.tasks.insert(into.tasks.end(), segments_[r].tasks.begin(), segments_[r].tasks.end());
              segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(r));
              merged = true;
              break;
            }
          if (merged) break;
        }
    }
  }

  // The region input whose op operand output k becomes the next value of (an update in the graph).
  std::optional<ir::ValueId> replaced_input(size_t k) const {
    const ir::ValueId result = in_.op.results.at(k);
    for (const ir::Op& op : in_.graph.ops())
      if (op.kind == OpKind::Update && op.operands[1] == result)
        for (size_t j = 0; j < in_.op.operands.size(); ++j)
          if (in_.op.operands[j] == op.operands[0]) return inputs_.at(j);
    return std::nullopt;
  }

  // The scalar inputs that the values `roots` are computed from (not through a reduction: its
  // result is a sum the final code binds, not an expression of its inputs).
  std::set<ir::ValueId> scalar_inputs_of(std::vector<ir::ValueId> roots) const {
    std::set<ir::ValueId> out, seen;
    while (!roots.empty()) {
      const ir::ValueId v = roots.back();
      roots.pop_back();
      if (!seen.insert(v).second) continue;
      const ir::Op& op = body_.producer(v);
      if (op.kind == OpKind::Input && scalar(v)) out.insert(v);
      if (!is_reduction(body_, op)) roots.insert(roots.end(), op.operands.begin(), op.operands.end());
    }
    return out;
  }

  // The table: global entries (scalars that the final code or several segments read) then each
  // segment's own: its tensors, and the scalars only it reads. A tensor that several segments read
  // (LAMB's gradients: its moments and its norm) has an entry in each, as has a scalar of one
  // tensor (LAMB's two norms of it), so that segments' code is the same up to `sb`: global entries
  // for those made every segment's code its own (412 cases in bert-base's LAMB norm kernel,
  // minutes of NVRTC per arch).
  void make_table() {
    const auto& outputs = body_.outputs();
    std::vector<ir::ValueId> final_roots;
    for (ir::ValueId v : outputs)
      if (scalar(v)) final_roots.push_back(v);
    const std::set<ir::ValueId> read_by_final = scalar_inputs_of(final_roots);
    std::map<ir::ValueId, int> readers;
    for (Segment& s : segments_) {
      std::vector<ir::ValueId> roots;
      for (const Task& t : s.tasks) roots.push_back(t.value);
      s.scalars = scalar_inputs_of(roots);
      for (ir::ValueId v : s.scalars) ++readers[v];
    }
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (scalar(inputs_[i]) && (read_by_final.count(inputs_[i]) || readers[inputs_[i]] != 1))
        global_input_[i] = add_entry(in_.op.operands[i], false, inputs_[i]);
    for (size_t k = 0; k < outputs.size(); ++k)
      if (scalar(outputs[k])) global_output_[k] = add_entry(in_.op.results[k], true, outputs[k]);
    for (Segment& s : segments_) {
      s.base = table_.size();
      for (size_t i = 0; i < inputs_.size(); ++i)
        if ((s.tensors.count(inputs_[i]) || s.scalars.count(inputs_[i])) && !global_input_.count(i)) {
          local_input_[{&s, i}] = table_.size() - s.base;
          add_entry(in_.op.operands[i], false, inputs_[i]);
        }
      for (const Task& t : s.tasks)
        if (t.kind == Task::Write) {
          local_output_[{&s, t.index}] = table_.size() - s.base;
          add_entry(in_.op.results[t.index], true, outputs[t.index]);
        }
    }
  }
  size_t add_entry(ir::ValueId outer, bool written, ir::ValueId inner) {
    table_.push_back({outer, written, body_.value(inner).type.dtype});
    return table_.size() - 1;
  }
  std::string entry_expr(const std::string& type, bool constant, const std::string& index) const {
    return fmt::format("(({}{}*)tb[{}])", constant ? "const " : "", type, index);
  }

  std::vector<std::string> input_names(const Segment* s) const {
    std::vector<std::string> names;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const std::string type = storage_type(body_.value(inputs_[i]).type.dtype);
      if (auto g = global_input_.find(i); g != global_input_.end()) names.push_back(entry_expr(type, true, std::to_string(g->second)));
      else if (auto l = s ? local_input_.find({s, i}) : local_input_.end(); l != local_input_.end())
        names.push_back(entry_expr(type, true, fmt::format("sb + {}", l->second)));
      else names.push_back("not_available_here");  // another segment's tensor: a compile error if ever used
    }
    return names;
  }

  // One pass over this block's chunk of the segment, then its sums into scratch.
  std::string segment_code(const Segment& s) {
    Emitter e(body_, input_names(&s));
    e.flat(s.n, "i");
    std::vector<std::string> accs;
    for (const Task& t : s.tasks)
      if (t.kind != Task::Write) {
        accs.push_back(e.fresh("acc"));
        e.line(fmt::format("float {} = 0.0f;", accs.back()));
      }
    e.open("for (bx_i64 i = begin + bx_tid_x(); i < end; i += bx_bdim_x())");
    // Every value first, then the stores: an output may be written in place of an input.
    std::vector<std::string> values;
    for (const Task& t : s.tasks) values.push_back(e.at(t.value, {}));
    size_t a = 0;
    for (size_t k = 0; k < s.tasks.size(); ++k) {
      const Task& t = s.tasks[k];
      const std::string& v = values[k];
      if (t.kind == Task::Write) {
        const std::string type = storage_type(body_.value(t.value).type.dtype);
        e.line(fmt::format("bx_st({}, i, {});", entry_expr(type, false, fmt::format("sb + {}", local_output_.at({&s, t.index}))), v));
      } else if (t.kind == Task::Check) {
        e.line(fmt::format("{} += bx_isfinite({}) ? 0.0f : 1.0f;", accs[a++], v));
      } else {
        e.line(fmt::format("{} += {};", accs[a++], v));
      }
    }
    e.close();
    a = 0;
    size_t own = 0;  // this segment's sums so far
    for (const Task& t : s.tasks) {
      if (t.kind == Task::Write) continue;
      const std::string total = e.local("float", fmt::format("bx_block_sum({}, red)", accs[a++]));
      // A sum's partial in this block's slot (relative to the segment's first slot, so that segments
      // share code); the overflow check's count is shared by every segment.
      if (t.kind == Task::Accumulate)
        e.line(fmt::format("if (bx_tid_x() == 0) partials[ss + {} * chunks + chunk] = {};", own++, total));
      else
        e.line(fmt::format("if (bx_tid_x() == 0) bx_atomic_add(scratch + {}, {});", slot_of_[t.index], total));
    }
    return e.take();
  }

  // Each sum over its partials, a warp per sum: lane l adds partials l, l + 32, ... in order, then
  // the warp's lanes in a fixed tree, into `totals` (shared).
  void add_up_partials(Emitter& e) {
    std::vector<size_t> start, count;
    for (const auto& [r, partials] : partials_of_) {
      total_of_[r] = start.size();
      start.push_back(slot_of_[r]);
      count.push_back(partials);
    }
    if (start.empty()) return;
    tables_ += fmt::format("BX_CONSTANT int BX_NAME_partials_at[] = {{{}}};\nBX_CONSTANT int BX_NAME_partials[] = {{{}}};\n",
                           fmt::join(start, ", "), fmt::join(count, ", "));
    e.line(fmt::format("BX_SHARED(float, totals, {});", start.size()));
    e.open(fmt::format("for (int q = bx_tid_x() >> 5; q < {}; q += bx_bdim_x() >> 5)", start.size()));
    e.line("float sum = 0.0f;");
    e.line("for (int i = bx_tid_x() & 31; i < BX_NAME_partials[q]; i += 32) sum += bx_volatile_load(partials + BX_NAME_partials_at[q] + i);");
    e.line("sum = bx_warp_sum(sum);");
    e.line("if ((bx_tid_x() & 31) == 0) totals[q] = sum;");
    e.close();
    e.line("bx_sync();");
  }

  // The scalar results: after every block's sums (the last block), or at once by block 0.
  std::string final_code() {
    Emitter e(body_, input_names(nullptr));
    const auto& outputs = body_.outputs();
    auto scalars = [&] {
      add_up_partials(e);
      e.open("if (bx_tid_x() == 0)");
      // A sum that is itself an output is stored at once: LAMB's norm kernel has two per tensor,
      // which held all at once until the stores at the end would spill registers.
      std::set<size_t> stored;
      auto store = [&](size_t k) {
        const Coords zero(body_.value(outputs[k]).type.shape.size(), "0");
        const std::string type = storage_type(body_.value(outputs[k]).type.dtype);
        e.line(fmt::format("bx_st({}, 0, {});", entry_expr(type, false, std::to_string(global_output_.at(k))), e.at(outputs[k], zero)));
        stored.insert(k);
      };
      for (size_t r = 0; r < reductions_.size(); ++r) {
        const ir::Op& op = *reductions_[r];
        const std::string sum = op.kind == OpKind::AllFinite ? fmt::format("bx_volatile_load(scratch + {})", slot_of_[r])
                                                             : fmt::format("totals[{}]", total_of_.at(r));
        std::string value = op.kind == OpKind::AllFinite ? fmt::format("({} == 0.0f ? 1.0f : 0.0f)", sum) : sum;
        if (op.kind == OpKind::ReduceMean)
          value = fmt::format("{} / {}", sum, float_literal(static_cast<double>(body_.value(op.operands[0]).type.numel())));
        e.bind(op.result(), Coords(body_.value(op.result()).type.shape.size(), "0"), e.local("float", value));
        for (size_t k = 0; k < outputs.size(); ++k)
          if (outputs[k] == op.result() && op.kind != OpKind::AllFinite) store(k);
      }
      for (size_t k = 0; k < outputs.size(); ++k) {
        if (!scalar(outputs[k]) || stored.count(k)) continue;
        store(k);
      }
      for (size_t r = 0; r < reductions_.size(); ++r)  // the counts; partials are overwritten
        if (reductions_[r]->kind == OpKind::AllFinite) e.line(fmt::format("scratch[{}] = 0.0f;", slot_of_[r]));
      e.close();
    };
    if (!reductions_.empty()) {
      emit_last_block(e, slots_, scalars);
    } else if (!global_output_.empty()) {
      e.open("if (bx_bid_x() == 0)");
      scalars();
      e.close();
    }
    return e.take();
  }

  const KernelInput& in_;
  const ir::Graph& body_;
  std::vector<ir::ValueId> inputs_;
  std::vector<std::set<ir::ValueId>> depends_;
  std::vector<const ir::Op*> reductions_;
  std::vector<Segment> segments_;
  std::vector<size_t> slot_of_;
  std::map<size_t, size_t> partials_of_;  // per sum (reduction): its partials, one per block of its segment
  std::map<size_t, size_t> total_of_;     // per sum: its entry in `totals`
  size_t slots_ = 0, blocks_ = 0;  // slots_: the counts in scratch
  size_t partial_floats_ = 0;      // the partial sums in the workspace
  bool cooperative_ = false;
  std::vector<Entry> table_;
  std::map<size_t, size_t> global_input_, global_output_;
  std::map<std::pair<const Segment*, size_t>, size_t> local_input_, local_output_;
  std::string tables_;
};

}  // namespace

KernelSpec render_multi_tensor(const KernelInput& in) {
  MultiTensorKernel m(in);
  const std::string body = m.emit();
  KernelSpec k;
  k.params = m.params();
  k.source = m.tables() + kernel_text(k.params, body);
  k.block = {kThreads};
  k.grid = {std::max(1, m.blocks())};
  k.cooperative = m.cooperative();
  return k;
}

}  // namespace bertc::codegen
