#include "io/curl_library.hpp"

#include <dlfcn.h>
#include <fmt/core.h>

#include <atomic>
#include <mutex>
#include <string>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// The soname of the libcurl the headers came from (libcurl4-openssl-dev links libcurl.so.4).
constexpr const char* kCurlSoname = "libcurl.so.4";

std::atomic<bool> loaded{false};

template <class Fn>
void resolve(void* handle, Fn& slot, const char* name) {
  void* symbol = dlsym(handle, name);
  if (!symbol)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("http(s) needs libcurl, and {} has no {}", kCurlSoname, name));
  slot = reinterpret_cast<Fn>(symbol);
}

CurlLibrary load() {
  // RTLD_LOCAL: its symbols stay out of the way of a libcurl the host program may link itself.
  void* handle = dlopen(kCurlSoname, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("http(s) needs libcurl ({}), which could not be loaded: {} "
                            "(Debian: apt-get install libcurl4)",
                            kCurlSoname, why ? why : "unknown reason"));
  }
  CurlLibrary lib{};
  resolve(handle, lib.global_init, "curl_global_init");
  resolve(handle, lib.easy_init, "curl_easy_init");
  resolve(handle, lib.easy_cleanup, "curl_easy_cleanup");
  resolve(handle, lib.easy_reset, "curl_easy_reset");
  resolve(handle, lib.easy_setopt, "curl_easy_setopt");
  resolve(handle, lib.easy_perform, "curl_easy_perform");
  resolve(handle, lib.easy_strerror, "curl_easy_strerror");
  resolve(handle, lib.easy_escape, "curl_easy_escape");
  resolve(handle, lib.free, "curl_free");
  resolve(handle, lib.slist_append, "curl_slist_append");
  resolve(handle, lib.slist_free_all, "curl_slist_free_all");
  if (lib.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                "libcurl could not initialise");
  // The handle is never closed: libcurl's state lives until the process ends.
  return lib;
}

}  // namespace

const CurlLibrary& curl_library() {
  // A failed load throws out of the initialiser, so the next call tries again.
  static const CurlLibrary lib = load();
  loaded.store(true, std::memory_order_release);
  return lib;
}

bool curl_library_loaded() noexcept { return loaded.load(std::memory_order_acquire); }

}  // namespace tlio::detail
