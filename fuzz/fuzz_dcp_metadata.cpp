// Fuzz target: a DCP folder's .metadata. Any input decodes and is checked (chunks tiling their
// tensors, storages matched), or throws tlio::Error; never a crash, a hang or an allocation
// sized by the input before its checks.
#include <cstddef>
#include <cstdint>

#include "checkpoint/dcp_metadata.hpp"
#include "tlio/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)tlio::detail::parse_dcp_metadata({reinterpret_cast<const std::byte*>(data), size});
  } catch (const tlio::Error&) {
  }
  return 0;
}
