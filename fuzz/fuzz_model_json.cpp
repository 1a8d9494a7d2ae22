// fuzz_model_json: config.json and model.safetensors.index.json text from a stranger, and the
// edits a folder rewrite makes to config.json (whose results must be valid JSON again).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/json_doc.hpp"
#include "common/json_members.hpp"
#include "model/shard_index.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)tlio::parse_model_config(text, "config.json");
  } catch (const tlio::Error&) {
  }
  try {
    tlio::detail::ShardIndex index = tlio::detail::parse_shard_index(text, "index.json");
    (void)tlio::detail::shard_index_json(index);
  } catch (const tlio::Error&) {
  }
  try {
    const std::string removed = tlio::detail::set_json_member(
        text, "quantization_config", std::nullopt, "config.json", tlio::Rule::model);
    const std::string set = tlio::detail::set_json_member(removed, "torch_dtype", "\"bfloat16\"",
                                                          "config.json", tlio::Rule::model);
    // Valid JSON in, valid JSON out: an edit that breaks the document is a bug.
    try {
      const tlio::detail::JsonDoc check(set, "config.json", tlio::Rule::model);
    } catch (const tlio::Error&) {
      __builtin_trap();
    }
  } catch (const tlio::Error&) {
  }
  try {
    (void)tlio::parse_size(text);
  } catch (const tlio::Error&) {
  }
  return 0;
}
