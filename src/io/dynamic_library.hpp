// io/dynamic_library.hpp: what the loaders of libraries opened on first use share
// (io/curl_library, io/crypto_library).
#pragma once

#include <dlfcn.h>
#include <fmt/core.h>

#include <optional>
#include <string>
#include <string_view>

#include "tlio/error.hpp"

namespace tlio::detail {

/// Error{unsupported}: a library tlio loads at run time is missing or lacks something.
[[noreturn]] inline void library_unsupported(std::string detail) {
  throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt, std::move(detail));
}

/// Sets `slot` to the function `name` of the opened library, or says which `library` lacks it.
template <class Fn>
void resolve_symbol(void* handle, Fn& slot, const char* name, std::string_view library) {
  void* symbol = dlsym(handle, name);
  if (!symbol) library_unsupported(fmt::format("{}, and the one loaded has no {}", library, name));
  slot = reinterpret_cast<Fn>(symbol);
}

}  // namespace tlio::detail
