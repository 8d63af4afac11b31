// Fused attention.
//
// Pre:  a verified forward graph (before autodiff).
// Post: every chain matmul(q, k^T) -> mul by a scalar constant -> add a bias -> softmax ->
//       [dropout] -> matmul(., v) whose intermediate values have no other use is one attention op
//       with the same scale, bias, dropout probability and offset (the scale constant is gone
//       where the chain was its only use: no dead op is left). The math and the dropout mask
//       are the same (the reference computes both bit for bit alike); autodiff then gives the
//       attention its own backward (attention_grad) and no [B,h,S,S] tensor is kept for it.
//       Where q, k, v are the three heads-first slices of one permuted [B,S,3,h,d] projection and
//       the context is permuted back to [B,S,h,d] (BERT's self-attention), the op is
//       attention_qkv of the projection itself, replacing the permutes and slices too: its kernels
//       read q, k, v and write the context (and dqkv, backward) in the projection's layout.
//       Where the bias is a block_bias of the i32 [B,S] input example_ids as queries [B,1,S,1]
//       and keys [B,1,1,S] (rows of several examples; the trainer checks that they rise along
//       each row), the op takes block_bias's own bias, the ids
//       and blocks = true: the same probabilities for every query of an example (block_bias's
//       -10000 beside its own example and the op's leaving out both make them exactly 0; a
//       padding query's row, which nothing reads, is spread over the padding alone), no
//       [B,1,S,S] bias, and the block_bias with its ids' casts and reshapes removed once no
//       chain reads them.
// Order: first: before precision (which casts the scale constant) and before autodiff.
#pragma once

#include "ir/graph.h"

namespace bertc::passes {

// Returns the number of attention chains fused.
size_t fuse_attention(ir::Graph& graph);

}  // namespace bertc::passes
