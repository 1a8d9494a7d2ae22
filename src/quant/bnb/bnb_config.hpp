// quant/bnb/bnb_config.hpp: the quantization_config transformers writes into config.json for a
// model quantized with bitsandbytes (BitsAndBytesConfig.to_dict, keys sorted as save_pretrained
// sorts them), so that from_pretrained takes tlio's folder for the pre-quantized model it is.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "tlio/bnb.hpp"
#include "tlio/dtype.hpp"

namespace tlio::detail {

struct BnbConfig {
  std::optional<BnbQuantType> four_bit;  ///< nf4 or fp4; none: LLM.int8
  bool nested = false;                   ///< double quantization
  Dtype storage = Dtype::U8;             ///< bnb_4bit_quant_storage
  Dtype compute = Dtype::F32;            ///< bnb_4bit_compute_dtype: the model's dtype
};

/// The JSON object. `plain_modules` becomes llm_int8_skip_modules: transformers then leaves
/// exactly those (and the model's fp32 modules) unquantized, rather than its own default guess.
std::string transformers_bnb_config(const BnbConfig& c, std::span<const std::string> plain_modules);

}  // namespace tlio::detail
