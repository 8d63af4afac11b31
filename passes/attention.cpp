// Pattern match of the attention chain and its rewrite into one attention op.
#include "passes/attention.h"

#include <optional>

#include "passes/dce.h"
#include "passes/graph_copy.h"

namespace bertc::passes {
namespace {

using ir::OpKind;

struct Chain {
  ir::ValueId q, k, v, bias;
  std::optional<ir::ValueId> seed;
  double scale, p = 0;
  int64_t offset = 0;
  std::vector<ir::OpId> ops;  // the chain's ops; the last is the second matmul
  // Packed: q, k, v are views of one projection and the context is permuted back to it (see
  // Matcher::pack); the chain's ops then include those layout ops.
  std::optional<ir::ValueId> qkv, out_permute;
};

class Matcher {
 public:
  explicit Matcher(const ir::Graph& g) : g_(g), uses_(g.num_values(), 0) {
    for (const ir::Op& op : g.ops())
      for (ir::ValueId v : op.operands) ++uses_[v];
    for (ir::ValueId v : g.outputs()) ++uses_[v];
    consumer_.assign(g.num_values(), -1);
    for (ir::OpId i = 0; i < g.ops().size(); ++i)
      for (ir::ValueId v : g.ops()[i].operands) consumer_[v] = static_cast<int64_t>(i);
  }

  // The chain through the softmax op `at`, if every link is there and private to it.
  std::optional<Chain> match(ir::OpId at) const {
    const ir::Op& softmax = g_.op(at);
    Chain c;
    const ir::Op* add = producer(softmax.operands[0], OpKind::Add);
    if (!add) return std::nullopt;
    const ir::Op* mul = nullptr;
    for (int side : {0, 1})
      if (!mul && (mul = producer(add->operands[side], OpKind::Mul))) c.bias = add->operands[1 - side];
    if (!mul) return std::nullopt;
    const ir::Op* qk = nullptr;
    ir::ValueId scale_value = 0;
    for (int side : {0, 1}) {
      const ir::Op& scale = g_.producer(mul->operands[1 - side]);
      if (!qk && scale.kind == OpKind::Constant && g_.value(scale.result()).type.rank() == 0 &&
          (qk = producer(mul->operands[side], OpKind::Matmul))) {
        c.scale = scale.attr<double>("value");
        scale_value = scale.result();
      }
    }
    if (!qk || qk->attr<bool>("transpose_a") || !qk->attr<bool>("transpose_b")) return std::nullopt;
    c.q = qk->operands[0];
    c.k = qk->operands[1];
    if (g_.value(c.q).type.rank() != 4) return std::nullopt;
    ir::ValueId probs = softmax.result();
    if (uses_[probs] != 1) return std::nullopt;
    std::vector<ir::OpId> ops = {g_.value(qk->result()).producer, g_.value(mul->result()).producer,
                                 g_.value(add->result()).producer, at};
    // The scale constant goes with the chain when the chain is its only use (the op takes it as an
    // attribute): left, it was a dead op that an unfused plan launched after the updates.
    if (uses_[scale_value] == 1) ops.insert(ops.begin(), g_.value(scale_value).producer);
    const ir::Op* next = only_consumer(probs);
    if (!next) return std::nullopt;
    if (next->kind == OpKind::Dropout) {
      c.seed = next->operands[1];
      c.p = next->attr<double>("p");
      c.offset = next->attr<int64_t>("offset");
      ops.push_back(g_.value(next->result()).producer);
      probs = next->result();
      if (uses_[probs] != 1) return std::nullopt;
      next = only_consumer(probs);
      if (!next) return std::nullopt;
    }
    if (next->kind != OpKind::Matmul || next->operands[0] != probs || next->attr<bool>("transpose_a") ||
        next->attr<bool>("transpose_b"))
      return std::nullopt;
    c.v = next->operands[1];
    ops.push_back(g_.value(next->result()).producer);
    c.ops = ops;
    pack(c);
    return c;
  }

  // The packed form of a chain (what BERT's self-attention builds): q, k, v are
  // reshape(slice(P, axis 0, i, i + 1)) for i = 0, 1, 2 of one P = permute(R, [2,0,3,1,4]) of a
  // projection R [B,S,3,h,d], every link used only there, and the context's one use is
  // permute(context, [0,2,1,3]) to [B,S,h,d]. attention_qkv then reads R as it is and its result
  // replaces that permute's: the layout ops and their copies are gone, forward and backward.
  void pack(Chain& c) const {
    std::vector<ir::OpId> layout;
    std::optional<ir::ValueId> permuted;
    const ir::ValueId heads[3] = {c.q, c.k, c.v};
    for (int64_t i = 0; i < 3; ++i) {
      const ir::Op* reshape = producer(heads[i], OpKind::Reshape);
      const ir::Op* slice = reshape ? producer(reshape->operands[0], OpKind::Slice) : nullptr;
      if (!slice || slice->attr<int64_t>("axis") != 0 || slice->attr<int64_t>("start") != i ||
          slice->attr<int64_t>("end") != i + 1 || (permuted && *permuted != slice->operands[0]))
        return;
      permuted = slice->operands[0];
      layout.push_back(g_.value(reshape->result()).producer);
      layout.push_back(g_.value(slice->result()).producer);
    }
    const ir::Op& permute = g_.producer(*permuted);
    if (permute.kind != OpKind::Permute || uses_[*permuted] != 3 ||
        permute.attr<std::vector<int64_t>>("perm") != std::vector<int64_t>{2, 0, 3, 1, 4})
      return;
    const ir::ValueId context = g_.op(c.ops.back()).result();
    const ir::Op* consumer = only_consumer(context);
    if (!consumer) return;
    const ir::Op& back = *consumer;
    if (back.kind != OpKind::Permute || back.attr<std::vector<int64_t>>("perm") != std::vector<int64_t>{0, 2, 1, 3})
      return;
    layout.push_back(g_.value(*permuted).producer);
    layout.push_back(g_.value(back.result()).producer);
    c.qkv = permute.operands[0];
    c.out_permute = back.result();
    c.ops.insert(c.ops.end() - 1, layout.begin(), layout.end());  // the second matmul stays last
  }

  // The one op reading v, if v has one use and it is not a graph output.
  const ir::Op* only_consumer(ir::ValueId v) const {
    return uses_[v] == 1 && consumer_[v] >= 0 ? &g_.op(static_cast<ir::OpId>(consumer_[v])) : nullptr;
  }

  // The op making v if it is of `kind` and v has no other use.
  const ir::Op* producer(ir::ValueId v, OpKind kind) const {
    const ir::Op& op = g_.producer(v);
    return op.kind == kind && uses_[v] == 1 ? &op : nullptr;
  }

 private:
  const ir::Graph& g_;
  std::vector<int> uses_;
  std::vector<int64_t> consumer_;  // an op reading the value (the only one where uses == 1)
};

// Rows of several examples (frontend::attention_bias with example ids): a bias that block_bias
// made of the i32 [B,S] input example_ids, reshaped to queries [B,1,S,1] and keys [B,1,1,S] (through
// casts and reshapes, which keep its order), is given to the attention op as block_bias's own
// bias and those ids, with blocks = true: no [B,1,S,S] bias is made, and the kernels skip the
// tiles between two examples.
struct Blocks {
  ir::ValueId bias, example_ids;
};

std::optional<Blocks> blocks_of(const ir::Graph& g, ir::ValueId bias) {
  const ir::Op& op = g.producer(bias);
  if (op.kind != OpKind::BlockBias) return std::nullopt;
  auto source = [&](ir::ValueId v) {
    for (const ir::Op* p = &g.producer(v); p->kind == OpKind::Reshape || p->kind == OpKind::Cast; p = &g.producer(v))
      v = p->operands[0];
    return v;
  };
  // (only the batch input example_ids: the trainer checks that its ids rise along each row, which
  // the kernels' tile skipping relies on; any other ids stay a block_bias, right in any order)
  const ir::ValueId ids = source(op.operands[1]);
  const ir::TensorType& type = g.value(ids).type;
  if (ids != source(op.operands[2]) || g.producer(ids).kind != OpKind::Input || g.value(ids).name != "example_ids" ||
      type.dtype != ir::DType::I32 || type.rank() != 2)
    return std::nullopt;
  const int64_t B = type.shape[0], S = type.shape[1];
  if (g.value(op.operands[1]).type.shape != ir::Shape{B, 1, S, 1} ||
      g.value(op.operands[2]).type.shape != ir::Shape{B, 1, 1, S})
    return std::nullopt;
  return Blocks{op.operands[0], ids};
}

}  // namespace

size_t fuse_attention(ir::Graph& graph) {
  const Matcher matcher(graph);
  std::vector<std::optional<Chain>> ending_at(graph.ops().size());
  std::vector<bool> in_chain(graph.ops().size(), false);
  size_t found = 0;
  for (ir::OpId i = 0; i < graph.ops().size(); ++i) {
    if (graph.op(i).kind != OpKind::Softmax) continue;
    auto chain = matcher.match(i);
    if (!chain) continue;
    for (ir::OpId op : chain->ops) in_chain[op] = true;
    ending_at[chain->ops.back()] = chain;
    ++found;
  }
  if (!found) return 0;
  ir::Builder b(graph.name());
  GraphCopy copy(graph, b);
  bool leaves_dead_ops = false;
  for (ir::OpId i = 0; i < graph.ops().size(); ++i) {
    const ir::Op& op = graph.op(i);
    if (!in_chain[i]) {
      copy.copy(op);
      continue;
    }
    if (!ending_at[i]) continue;  // an inner link: the attention op replaces it
    const Chain& c = *ending_at[i];
    const std::optional<Blocks> blocks = blocks_of(graph, c.bias);
    const ir::Tensor bias = copy[blocks ? blocks->bias : c.bias];
    std::vector<ir::Tensor> in;
    if (c.qkv) {
      in = {copy[*c.qkv], bias};
    } else {
      in = {copy[c.q], copy[c.k], copy[c.v], bias};
    }
    if (c.seed) in.push_back(copy[*c.seed]);
    std::vector<ir::NamedAttr> attrs{{"scale", c.scale}, {"p", c.p}, {"offset", c.offset}};
    if (blocks) {
      in.push_back(copy[blocks->example_ids]);
      attrs.push_back({"blocks", true});
      leaves_dead_ops = true;  // (the block_bias and its ids' reshapes, once no chain reads them)
    }
    ir::Builder::OpScope scope(b, op.scope);
    const auto out = b.ops(c.qkv ? OpKind::AttentionQkv : OpKind::Attention, in, attrs);
    const ir::ValueId replaced = c.out_permute ? *c.out_permute : op.result();
    copy.map(replaced, out[0]);
    if (!graph.value(replaced).name.empty()) b.name(out[0], graph.value(replaced).name);
  }
  copy.copy_outputs();
  graph = std::move(b).finish();
  if (leaves_dead_ops) eliminate_dead_code(graph);
  return found;
}

}  // namespace bertc::passes
