// fuzz_model_json: config.json and model.safetensors.index.json text from a stranger.
#include <cstddef>
#include <cstdint>
#include <string_view>

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
    (void)tlio::parse_size(text);
  } catch (const tlio::Error&) {
  }
  return 0;
}
