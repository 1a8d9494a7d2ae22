// Fuzz target: a checkpoint's data.pkl. Any input decodes and walks, or throws tlio::Error; never
// a crash, a hang (every loop is bounded by the input or a cap), or a recursion it controls.
#include <cstddef>
#include <cstdint>

#include "checkpoint/torch_checkpoint.hpp"
#include "tlio/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)tlio::detail::read_data_pickle({reinterpret_cast<const std::byte*>(data), size});
  } catch (const tlio::Error&) {
  }
  return 0;
}
