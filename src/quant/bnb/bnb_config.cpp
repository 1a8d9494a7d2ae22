// quant/bnb/bnb_config.cpp: see bnb_config.hpp.
#include "quant/bnb/bnb_config.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <vector>

#include "common/json_text.hpp"

namespace tlio::detail {

std::string transformers_bnb_config(const BnbConfig& c,
                                    std::span<const std::string> plain_modules) {
  std::vector<std::string> skip;
  for (const std::string& m : plain_modules) skip.push_back(quote_name(m));
  const bool four = c.four_bit.has_value();
  const auto flag = [](bool b) { return b ? "true" : "false"; };
  // Every key BitsAndBytesConfig.to_dict gives, in sorted order; the 4-bit ones keep
  // transformers' defaults in an 8-bit config. llm_int8_threshold must be a JSON float.
  return fmt::format(
      R"({{"_load_in_4bit": {0}, "_load_in_8bit": {1}, "bnb_4bit_compute_dtype": "{2}", )"
      R"("bnb_4bit_quant_storage": "{3}", "bnb_4bit_quant_type": "{4}", "bnb_4bit_use_double_quant": {5}, )"
      R"("llm_int8_enable_fp32_cpu_offload": false, "llm_int8_has_fp16_weight": false, )"
      R"("llm_int8_skip_modules": [{6}], "llm_int8_threshold": 6.0, "load_in_4bit": {0}, )"
      R"("load_in_8bit": {1}, "quant_method": "bitsandbytes"}})",
      flag(four), flag(!four), four ? torch_dtype_name(c.compute) : "float32",
      four ? torch_dtype_name(c.storage) : "uint8", four ? bnb_quant_type_name(*c.four_bit) : "fp4",
      flag(four && c.nested), fmt::join(skip, ", "));
}

}  // namespace tlio::detail
