// Tensor-parallel shards: which axis a tensor splits along over the ranks of a stage (by its canonical name), and rank
// r's slice of it, built on the host from the file's bytes.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "model/loaders/mla_weights.h"

namespace cai {

// kRows: the output features ([out, in] rows; the heads of attn_k_b / attn_v_b; each expert's rows of a stacked
// [E, out, in]), the attention heads and MLP columns a rank computes, and the head's vocabulary rows. kCols: the input
// features of the projections that consume them (attn_output, ffn_down*), whose partial sums an all-reduce adds.
// kNone: replicated (norms, the MLA down-projections, the router, the embedding).
enum class ShardAxis { kNone, kRows, kCols };
ShardAxis shard_axis(std::string_view canonical_name);

// Rank `rank` of `n`'s slice of the tensor made of `slabs` (one [rows, cols] view, or a stacked weight's experts in
// order; host memory, FP8 block scales in each view's `scale`) along `axis`; one-dimensional tensors split their only
// axis. The result is stacked like the input ([E, ...] for several slabs). It keeps the file's dtype and FP8 scale
// blocks where the slice boundaries fall on whole quant blocks and 128-wide scale blocks, and is exact F32 otherwise.
// Errors: an axis whose length does not divide by n (invalid_argument naming the tensor and both numbers).
// With copy_bytes false the result has the slice's dtype, shape and scales but no bytes (view.data null).
Result<HostTensor> shard_tensor(const std::string& name, const std::vector<TensorView>& slabs, ShardAxis axis, int rank,
                                int n, bool copy_bytes = true);

}  // namespace cai
