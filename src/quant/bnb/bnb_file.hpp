// quant/bnb/bnb_file.hpp: bitsandbytes weights in a file: finding and checking them (the layout
// transformers saves for Linear4bit and Linear8bitLt) and loading what dequantization needs.
#pragma once

#include <string>
#include <vector>

#include "quant/bnb/bnb.hpp"
#include "quant/tensor_set.hpp"
#include "tlio/bnb.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

inline constexpr std::string_view kBnbStateInfix = ".quant_state.bitsandbytes__";

/// The dtypes packed 4-bit codes may be stored as (bitsandbytes' quant_storage).
inline bool is_bnb_storage_dtype(Dtype d) {
  return d == Dtype::U8 || d == Dtype::I8 || d == Dtype::F16 || d == Dtype::BF16 ||
         d == Dtype::F32 || d == Dtype::F64;
}

/// The bnb 4-bit weights of `f` (one file or a model's shards), checked (rules BNB-001..004 and
/// "bnb"); orphaned companions (a quant_map without a quant_state) are refused.
std::vector<QuantizedWeight> find_bnb_4bit_weights(const TensorSet& f);
/// The LLM.int8 weights (<p>.weight I8 + <p>.SCB [+ <p>.weight_format]), checked (rule "bnb").
std::vector<QuantizedWeight> find_llm_int8_weights(const TensorSet& f);

/// The quant_state of a 4-bit weight found by find_bnb_4bit_weights.
BnbQuantState bnb_state_of(const TensorSet& f, const QuantizedWeight& w);
/// Its effective absmax (nested ones dequantized, offset added), one float per block.
std::vector<float> bnb_effective_absmax(const TensorSet& f, const QuantizedWeight& w,
                                        const BnbQuantState& state);

}  // namespace tlio::detail
