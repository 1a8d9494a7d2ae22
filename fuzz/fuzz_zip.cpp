// Fuzz target: a whole checkpoint in memory (zip or legacy): the zip directory, every entry read
// (stored in place, deflated ones inflated), the pickles, names, views and storages. Any input
// reads or throws tlio::Error.
#include <cstddef>
#include <cstdint>

#include "checkpoint/torch_checkpoint.hpp"
#include "checkpoint/zip.hpp"
#include "tlio/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes{reinterpret_cast<const std::byte*>(data), size};
  try {
    const tlio::detail::ZipArchive zip(bytes);
    for (const tlio::detail::ZipEntry& e : zip.entries())
      if (e.size <= (uint64_t{1} << 24)) (void)zip.read(e);  // within the fuzzer's memory limit
  } catch (const tlio::Error&) {
  }
  try {
    (void)tlio::detail::read_checkpoint_bytes(bytes, {});
  } catch (const tlio::Error&) {
  }
  return 0;
}
