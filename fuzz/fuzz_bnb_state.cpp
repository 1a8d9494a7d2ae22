// Fuzz target: the bitsandbytes quant_state JSON. Any input either parses or throws tlio::Error;
// what parses is written back the way bnb writes it, and that text must parse to the same state
// (nested_offset exactly: the Python repr round-trips every double).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "quant/bnb/bnb.hpp"
#include "tlio/bnb.hpp"
#include "tlio/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tlio::detail::BnbQuantState st;
  try {
    st = tlio::detail::parse_bnb_quant_state({reinterpret_cast<const char*>(data), size});
  } catch (const tlio::Error&) {
    return 0;
  }
  const std::string text = tlio::detail::bnb_quant_state_json(st);
  tlio::detail::BnbQuantState back;
  try {
    back = tlio::detail::parse_bnb_quant_state(text);
  } catch (const tlio::Error&) {
    __builtin_trap();  // what tlio writes, tlio must read
  }
  const bool same_offset =
      std::memcmp(&back.nested_offset, &st.nested_offset, sizeof(double)) == 0 ||
      (back.nested_offset != back.nested_offset && st.nested_offset != st.nested_offset);
  if (back.quant_type != st.quant_type || back.blocksize != st.blocksize ||
      back.dtype != st.dtype || back.shape != st.shape || back.nested != st.nested ||
      (st.nested && (back.nested_blocksize != st.nested_blocksize ||
                     back.nested_dtype != st.nested_dtype || !same_offset)))
    __builtin_trap();
  return 0;
}
