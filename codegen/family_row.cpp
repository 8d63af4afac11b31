// The row-reduction family: softmax, layer norm, cross-entropy and their gradients over the last
// axis, with the group's pointwise ops before (recomputed in each pass over the row) and after.
// A warp handles a row of up to 512 elements, a block a longer one. Sums across rows (layer-norm
// weight gradients, the mean loss) go through per-worker slots in scratch memory, added up in a
// fixed order by the last block (deterministic: the same bits whatever order blocks run in).
#include <algorithm>
#include <functional>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/family.h"

namespace bertc::codegen {
namespace {

using ir::OpKind;

bool is_row_op(OpKind k) {
  return k == OpKind::Softmax || k == OpKind::LayerNorm || k == OpKind::SoftmaxGrad || k == OpKind::LayerNormGrad ||
         k == OpKind::CrossEntropy || k == OpKind::CrossEntropyGrad;
}

// How threads walk a row: a warp per row or a block per row.
struct RowWalk {
  bool warp;
  int threads;
  int64_t rows, n;
  int per_thread;  // elements of a row each thread handles, at most
  std::string lane() const { return warp ? "lane" : "(bx_i64)bx_tid_x()"; }
  int stride() const { return warp ? 32 : threads; }
  std::string sum(const std::string& v) const { return warp ? fmt::format("bx_warp_sum({})", v) : fmt::format("bx_block_sum({}, red)", v); }
  std::string max(const std::string& v) const { return warp ? fmt::format("bx_warp_max({})", v) : fmt::format("bx_block_max({}, red)", v); }
};

RowWalk walk_for(int64_t rows, int64_t n) {
  RowWalk w;
  w.rows = rows;
  w.n = n;
  w.warp = n <= 512;
  w.threads = w.warp ? 128 : static_cast<int>(std::clamp<int64_t>((n / 4 + 31) / 32 * 32, 128, 1024));
  w.per_thread = static_cast<int>((n + w.stride() - 1) / w.stride());
  return w;
}

// Opens the loop over this thread's elements of the row (`j`), as a counted loop so that
// per-column registers index statically.
void open_columns(Emitter& e, const RowWalk& w) {
  e.open(fmt::format("for (int kk = 0; kk < {}; ++kk)", w.per_thread));
  e.line(fmt::format("const bx_i64 j = {} + (bx_i64)kk * {};", w.lane(), w.stride()));
  e.line(fmt::format("if (j >= {}) break;", w.n));
}

// Workers (warps or blocks) of a kernel that sums across rows: each has its slot of partial sums.
// 256 keeps a grid of 256 blocks of 192..1024 threads (64 of 128 for short rows), enough to fill
// 132 SMs, and the last block's pass over the slots short (256 x 2 x hidden floats).
constexpr int64_t kMaxWorkers = 256;

class RowKernel {
 public:
  RowKernel(const KernelInput& in, Emitter& e) : in_(in), e_(e) {
    for (const ir::Op& op : in.body.ops())
      if (is_row_op(op.kind)) anchors_.push_back(&op);
    if (anchors_.empty()) throw ir::Error("row family: no softmax, layer norm or cross-entropy in the group");
    if (anchors_.size() > 2 || (anchors_.size() == 2 && !(find(OpKind::CrossEntropy) && find(OpKind::CrossEntropyGrad))))
      throw ir::Error("row family: more than one row op, other than a cross-entropy with its gradient");
    const ir::Op& a = *anchors_[0];
    const ir::ValueId domain_value = a.kind == OpKind::CrossEntropyGrad ? a.operands[1] : a.operands[0];
    domain_ = in.body.value(domain_value).type.shape;
    row_shape_ = ir::Shape(domain_.begin(), domain_.end() - 1);
    const int64_t n = domain_.back();
    walk_ = walk_for(n == 0 ? 0 : in.body.value(domain_value).type.numel() / n, n);
    classify_outputs();
  }

  void emit() {
    const RowWalk& w = walk_;
    e_.line("BX_SHARED(float, red, 32);");
    if (w.warp) e_.line("const int lane = bx_tid_x() & 31;");
    if (const ir::Op* g = find(OpKind::LayerNormGrad)) {
      e_.line(fmt::format("float dw_acc[{0}] = {{0}}, db_acc[{0}] = {{0}};", w.per_thread));
      (void)g;
    }
    if (find(OpKind::CrossEntropy) || find(OpKind::CrossEntropyGrad)) emit_label_weights();
    if (find(OpKind::CrossEntropy)) e_.line("float loss_part = 0.0f;");
    const int rows_per_block = w.warp ? w.threads / 32 : 1;
    if (w.warp)
      e_.open(fmt::format("for (bx_i64 row = (bx_i64)bx_bid_x() * {0} + (bx_tid_x() >> 5); row < {1}; "
                          "row += (bx_i64)bx_gdim_x() * {0})",
                          rows_per_block, w.rows));
    else
      e_.open(fmt::format("for (bx_i64 row = bx_bid_x(); row < {}; row += bx_gdim_x())", w.rows));
    rc_ = e_.decompose(row_shape_, "row");
    const ir::Op& a = *anchors_[0];
    switch (a.kind) {
      case OpKind::Softmax: softmax(a); break;
      case OpKind::LayerNorm: layer_norm(a); break;
      case OpKind::SoftmaxGrad: softmax_grad(a); break;
      case OpKind::LayerNormGrad: layer_norm_grad(a); break;
      default: cross_entropy(); break;
    }
    e_.close();
    finish_across_rows();
  }

  const RowWalk& walk() const { return walk_; }
  size_t partial_floats() const { return partial_floats_; }
  bool sums_across_rows() const { return find(OpKind::LayerNormGrad) || find(OpKind::CrossEntropy); }

  // The grid: a block per row (or per 4 rows, a warp each), at most 4096 blocks (a grid-stride
  // loop covers more); at most kMaxWorkers workers when the kernel sums across rows, since the
  // last block adds up every worker's slot alone.
  int blocks() const {
    const int64_t rows_per_block = walk_.warp ? walk_.threads / 32 : 1;
    const int64_t cap = sums_across_rows() ? kMaxWorkers / rows_per_block : 4096;
    return static_cast<int>(std::clamp<int64_t>((walk_.rows + rows_per_block - 1) / rows_per_block, 1, cap));
  }
  int64_t workers() const { return blocks() * (walk_.warp ? walk_.threads / 32 : 1); }

 private:
  const ir::Op* find(OpKind k) const {
    for (const ir::Op* a : anchors_)
      if (a->kind == k) return a;
    return nullptr;
  }

  // Outputs of the row's shape are written in the last pass; the layer-norm weight gradients and
  // the loss (and what is computed from them) after all rows; other outputs that broadcast to
  // the row's shape (a weight cast to f16, say) in the last pass, by the threads at their origin.
  void classify_outputs() {
    const auto& outputs = in_.body.outputs();
    const ir::Op* lng = find(OpKind::LayerNormGrad);
    const ir::Op* loss = find(OpKind::CrossEntropy);
    for (size_t k = 0; k < outputs.size(); ++k) {
      const ir::ValueId v = outputs[k];
      const ir::Shape& s = in_.body.value(v).type.shape;
      const bool after_rows = (lng && (depends_on(v, lng->results[1]) || depends_on(v, lng->results[2]))) ||
                              (loss && depends_on(v, loss->results[0]));
      if (s == domain_ && !after_rows) row_outputs_.push_back(k);
      else if (after_rows && ((lng && s == ir::Shape{domain_.back()}) || (loss && s.empty()))) final_outputs_.push_back(k);
      else if (!after_rows && broadcasts_to_domain(s)) broadcast_outputs_.push_back(k);
      else throw ir::Error(fmt::format("row family: output {} has a shape the kernel cannot write", k));
    }
  }
  bool depends_on(ir::ValueId v, ir::ValueId on) const {
    if (v == on) return true;
    for (ir::ValueId u : in_.body.producer(v).operands)
      if (depends_on(u, on)) return true;
    return false;
  }
  bool broadcasts_to_domain(const ir::Shape& s) const {
    if (s.size() > domain_.size()) return false;
    for (size_t j = 0; j < s.size(); ++j)
      if (s[j] != 1 && s[j] != domain_[j + domain_.size() - s.size()]) return false;
    return true;
  }
  // Writes the broadcast outputs at the current (row, j) where their broadcast coordinates are 0.
  void write_broadcast_outputs() {
    const Coords at = at_j();
    for (size_t k : broadcast_outputs_) {
      const ir::Shape& s = in_.body.value(in_.body.outputs()[k]).type.shape;
      Coords c;
      std::vector<std::string> guard;
      for (size_t d = 0; d < domain_.size(); ++d) {
        const bool present = d + s.size() >= domain_.size();
        const bool kept = present && s[d + s.size() - domain_.size()] == domain_[d];
        if (kept) c.push_back(at[d]);
        else guard.push_back(at[d] + " == 0");
        if (present && !kept) c.push_back("0");
      }
      e_.open(fmt::format("if ({})", guard.empty() ? std::string("true") : fmt::format("{}", fmt::join(guard, " && "))));
      store_output(e_, k, c);
      e_.close();
    }
  }

  Coords at_j() const {
    Coords c = rc_;
    c.push_back("j");
    return c;
  }
  std::string x(ir::ValueId v) { return e_.at(v, at_j()); }
  std::string rounded(ir::ValueId v, const std::string& expr) {
    const ir::DType d = in_.body.value(v).type.dtype;
    return d == ir::DType::F16 ? "bx_round_f16(" + expr + ")" : d == ir::DType::BF16 ? "bx_round_bf16(" + expr + ")" : expr;
  }
  void write_row_outputs() {
    for (size_t k : row_outputs_) store_output(e_, k, at_j());
    write_broadcast_outputs();
  }
  // sum over the row of `term(j)`, into a fresh local
  std::string row_sum(const std::function<std::string()>& term) {
    const std::string acc = e_.fresh("acc");
    e_.line(fmt::format("float {} = 0.0f;", acc));
    open_columns(e_, walk_);
    e_.line(fmt::format("{} += {};", acc, term()));
    e_.close();
    return e_.local("float", walk_.sum(acc));
  }
  std::string row_max(const std::function<std::string()>& term) {
    const std::string acc = e_.fresh("acc");
    e_.line(fmt::format("float {} = -bx_inf();", acc));
    open_columns(e_, walk_);
    e_.line(fmt::format("{0} = bx_fmax({0}, {1});", acc, term()));
    e_.close();
    return e_.local("float", walk_.max(acc));
  }
  std::string n() const { return float_literal(static_cast<double>(walk_.n)); }

  // y = exp(x - lse), lse = max + log(sum(exp(x - max))): the reference's formula.
  void softmax(const ir::Op& a) {
    const ir::ValueId v = a.operands[0];
    const std::string m = row_max([&] { return x(v); });
    const std::string s = row_sum([&] { return fmt::format("bx_exp({} - {})", x(v), m); });
    const std::string lse = e_.local("float", fmt::format("{} + bx_log({})", m, s));
    open_columns(e_, walk_);
    e_.bind(a.results[0], at_j(), e_.local("float", rounded(a.results[0], fmt::format("bx_exp({} - {})", x(v), lse))));
    write_row_outputs();
    e_.close();
  }

  // Mean, then the biased variance around it (two passes, as the reference), rstd = 1/sqrt(var + eps).
  std::pair<std::string, std::string> moments(ir::ValueId v, double eps) {
    const std::string mean = e_.local("float", row_sum([&] { return x(v); }) + " / " + n());
    const std::string var = row_sum([&] {
      const std::string d = e_.local("float", fmt::format("{} - {}", x(v), mean));
      return fmt::format("{0} * {0}", d);
    });
    const std::string rstd = e_.local("float", fmt::format("1.0f / bx_sqrt({} / {} + {})", var, n(), float_literal(eps)));
    return {mean, rstd};
  }

  void layer_norm(const ir::Op& a) {
    const auto [mean, rstd] = moments(a.operands[0], a.attr<double>("eps"));
    open_columns(e_, walk_);
    const std::string w = e_.at(a.operands[1], {"j"}), b = e_.at(a.operands[2], {"j"});
    e_.bind(a.results[0], at_j(),
            e_.local("float", rounded(a.results[0], fmt::format("({} - {}) * {} * {} + {}", x(a.operands[0]), mean, rstd, w, b))));
    write_row_outputs();
    e_.close();
  }

  void softmax_grad(const ir::Op& a) {
    const std::string dot = row_sum([&] { return fmt::format("{} * {}", x(a.operands[0]), x(a.operands[1])); });
    open_columns(e_, walk_);
    e_.bind(a.results[0], at_j(),
            e_.local("float", rounded(a.results[0], fmt::format("{} * ({} - {})", x(a.operands[1]), x(a.operands[0]), dot))));
    write_row_outputs();
    e_.close();
  }

  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight; the weight and bias
  // gradients sum dy * xhat and dy over rows in per-column registers.
  void layer_norm_grad(const ir::Op& a) {
    const ir::ValueId dy = a.operands[0], xv = a.operands[1], wv = a.operands[2];
    const auto [mean, rstd] = moments(xv, a.attr<double>("eps"));
    auto xhat = [&] { return e_.local("float", fmt::format("({} - {}) * {}", x(xv), mean, rstd)); };
    auto g = [&] { return e_.local("float", fmt::format("{} * {}", x(dy), e_.at(wv, {"j"}))); };
    const std::string sg = e_.fresh("acc"), sgx = e_.fresh("acc");
    e_.line(fmt::format("float {} = 0.0f, {} = 0.0f;", sg, sgx));
    open_columns(e_, walk_);
    {
      const std::string h = xhat(), gg = g();
      e_.line(fmt::format("{} += {};", sg, gg));
      e_.line(fmt::format("{} += {} * {};", sgx, gg, h));
      e_.line(fmt::format("dw_acc[kk] += {} * {};", x(dy), h));
      e_.line(fmt::format("db_acc[kk] += {};", x(dy)));
    }
    e_.close();
    const std::string mean_g = e_.local("float", walk_.sum(sg) + " / " + n());
    const std::string mean_gx = e_.local("float", walk_.sum(sgx) + " / " + n());
    open_columns(e_, walk_);
    {
      const std::string h = xhat(), gg = g();
      e_.bind(a.results[0], at_j(),
              e_.local("float", rounded(a.results[0], fmt::format("{} * ({} - {} - {} * {})", rstd, gg, mean_g, h, mean_gx))));
      write_row_outputs();
    }
    e_.close();
  }

  // The weight every row counts with and their total over all rows, which each warp or block
  // sums for itself (the labels are few next to the logits).
  void emit_label_weights() {
    const ir::Op& a = *anchors_[0];
    const size_t labels_at = a.kind == OpKind::CrossEntropyGrad ? 2 : 1;
    labels_ = a.operands[labels_at];
    if (a.operands.size() > labels_at + 1) weights_ = a.operands[labels_at + 1];
    ignore_ = a.attr<int64_t>("ignore_index");
    e_.line("float wsum = 0.0f;");
    e_.open(fmt::format("for (bx_i64 r = {}; r < {}; r += {})", walk_.warp ? "(bx_i64)(bx_tid_x() & 31)" : "(bx_i64)bx_tid_x()",
                        walk_.rows, walk_.stride()));
    const Coords rr = e_.decompose(row_shape_, "r");
    e_.line(fmt::format("wsum += {};", row_weight(rr)));
    e_.close();
    e_.line(fmt::format("const float total_weight = {};", walk_.sum("wsum")));
    e_.line("const float inv_weight = total_weight != 0.0f ? 1.0f / total_weight : 0.0f;");
  }
  std::string row_weight(const Coords& row) {
    const std::string label = e_.at(*labels_, row);
    const std::string w = weights_ ? e_.at(*weights_, row) : "1.0f";
    return e_.local("float", fmt::format("({} != {} && {} != 0.0f) ? {} : 0.0f", label, ignore_, w, w));
  }

  void cross_entropy() {
    const ir::Op* loss = find(OpKind::CrossEntropy);
    const ir::Op* grad = find(OpKind::CrossEntropyGrad);
    const ir::ValueId logits = loss ? loss->operands[0] : grad->operands[1];
    const std::string w = row_weight(rc_), label = e_.at(*labels_, rc_);
    const std::string m = row_max([&] { return x(logits); });
    const std::string s = row_sum([&] { return fmt::format("bx_exp({} - {})", x(logits), m); });
    const std::string lse = e_.local("float", fmt::format("{} + bx_log({})", m, s));
    if (loss) {
      e_.open(fmt::format("if ({} == 0 && {} != 0.0f)", walk_.lane(), w));
      Coords at_label = rc_;
      at_label.push_back(label);
      e_.line(fmt::format("loss_part += {} * ({} - {}) * inv_weight;", w, lse, e_.at(logits, at_label)));
      e_.close();
    }
    if (grad || !row_outputs_.empty() || !broadcast_outputs_.empty()) {
      const std::string scale = grad ? e_.local("float", fmt::format("{} * {} * inv_weight", e_.at(grad->operands[0], {}), w)) : "";
      open_columns(e_, walk_);
      if (grad)
        e_.bind(grad->results[0], at_j(),
                e_.local("float", rounded(grad->results[0], fmt::format("{} * (bx_exp({} - {}) - (j == {} ? 1.0f : 0.0f))",
                                                                        scale, x(logits), lse, label))));
      write_row_outputs();
      e_.close();
    }
  }

  // Sums across rows, in an order fixed by the grid alone, so that every run gives the same bits
  // whatever order blocks run in: each worker (a warp, or a block when a block walks a row)
  // stores its partial sums in a slot of its own in scratch, and the last block to arrive adds the
  // slots up in worker order. (Float atomics from every block would be faster and differ in
  // the last bits from run to run.)
  void finish_across_rows() {
    const ir::Op* lng = find(OpKind::LayerNormGrad);
    const ir::Op* loss = find(OpKind::CrossEntropy);
    if (!lng && !loss) return;
    const int64_t n = walk_.n;
    const size_t per_worker = lng ? static_cast<size_t>(2 * n) : 1;
    const std::string worker = walk_.warp ? fmt::format("((bx_i64)bx_bid_x() * {} + (bx_tid_x() >> 5))", walk_.threads / 32)
                                          : std::string("(bx_i64)bx_bid_x()");
    partial_floats_ = per_worker * static_cast<size_t>(workers());
    if (lng) {
      open_columns(e_, walk_);
      e_.line(fmt::format("partials[{} * {} + j] = dw_acc[kk];", worker, per_worker));
      e_.line(fmt::format("partials[{} * {} + {} + j] = db_acc[kk];", worker, per_worker, n));
      e_.close();
    } else {
      e_.line(fmt::format("if ({} == 0) partials[{}] = loss_part;", walk_.lane(), worker));
    }
    emit_last_block(e_, 0, [&] {
      if (lng) {
        e_.open(fmt::format("for (bx_i64 j = bx_tid_x(); j < {}; j += bx_bdim_x())", n));
        e_.line("float dw = 0.0f, db = 0.0f;");
        e_.open(fmt::format("for (bx_i64 w = 0; w < {}; ++w)", workers()));
        e_.line(fmt::format("dw += bx_volatile_load(partials + w * {} + j);", per_worker));
        e_.line(fmt::format("db += bx_volatile_load(partials + w * {} + {} + j);", per_worker, n));
        e_.close();
        e_.bind(lng->results[1], {"j"}, e_.local("float", rounded(lng->results[1], "dw")));
        e_.bind(lng->results[2], {"j"}, e_.local("float", rounded(lng->results[2], "db")));
        for (size_t k : final_outputs_) store_output(e_, k, {"j"});
        e_.close();
      } else {
        e_.open("if (bx_tid_x() == 0)");
        e_.line("float total = 0.0f;");
        e_.line(fmt::format("for (bx_i64 w = 0; w < {}; ++w) total += bx_volatile_load(partials + w);", workers()));
        e_.bind(loss->results[0], {}, e_.local("float", rounded(loss->results[0], "total")));
        for (size_t k : final_outputs_) store_output(e_, k, {});
        e_.close();
      }
    });
  }

  const KernelInput& in_;
  Emitter& e_;
  std::vector<const ir::Op*> anchors_;
  ir::Shape domain_, row_shape_;
  RowWalk walk_;
  Coords rc_;
  std::vector<size_t> row_outputs_, final_outputs_, broadcast_outputs_;
  std::optional<ir::ValueId> labels_, weights_;
  int64_t ignore_ = -100;
  size_t partial_floats_ = 0;  // in the workspace: every worker's partial sums
};

}  // namespace

KernelSpec render_row(const KernelInput& in) {
  Emitter e(in.body, input_names(in));
  RowKernel row(in, e);
  row.emit();
  KernelSpec k;
  k.params = buffer_params(in);
  if (row.partial_floats() > 0) {
    k.params.push_back(workspace_param("partials", 4 * row.partial_floats()));
    k.params.push_back(scratch_param(0));  // the counter of blocks done
  }
  k.source = kernel_text(k.params, e.take());
  k.block = {row.walk().threads};
  k.grid = {row.blocks()};
  k.cooperative = true;
  return k;
}

}  // namespace bertc::codegen
