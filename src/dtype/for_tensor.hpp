// dtype/for_tensor.hpp: attributing errors of a conversion to the tensor being converted.
#pragma once

#include <string>

#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

// Runs fn, naming `tensor` in any tlio::Error it throws that names none.
template <class Fn>
inline void for_tensor(const std::string& tensor, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    if (!e.tensor().empty()) throw;
    throw e.with_tensor(tensor, "tensor " + quote_name(tensor));
  }
}

}  // namespace tlio::detail
