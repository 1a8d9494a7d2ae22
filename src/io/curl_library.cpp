#include "io/curl_library.hpp"

#include <fmt/core.h>

#include <atomic>
#include <string>

#include "io/dynamic_library.hpp"

namespace tlio::detail {
namespace {

// The sonames of libcurl's ABI 4: Debian's OpenSSL build (what libcurl4-openssl-dev links), then
// its GnuTLS build.
constexpr const char* kCurlSonames[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};

std::atomic<bool> loaded{false};

void resolve(void* handle, auto& slot, const char* name) {
  resolve_symbol(handle, slot, name, "http(s) needs libcurl");
}

CurlLibrary load() {
  // RTLD_LOCAL: its symbols are not added to the global scope (a host that links libcurl gets
  // the same object back).
  void* handle = nullptr;
  std::string why;
  for (const char* soname : kCurlSonames) {
    if ((handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL))) break;
    const char* e = dlerror();
    if (why.empty()) why = e ? e : "unknown reason";  // the first soname's reason
  }
  if (!handle)
    library_unsupported(
        fmt::format("http(s) needs libcurl (libcurl.so.4), which could not be loaded: {} "
                    "(Debian: apt-get install libcurl4)",
                    why));
  // Not closed, even on failure: libcurl's state lives until the process ends.
  decltype(&::curl_version_info) version_info = nullptr;
  resolve(handle, version_info, "curl_version_info");
  const curl_version_info_data* info = version_info(CURLVERSION_NOW);
  if (!info || info->version_num < kMinCurlVersion)
    library_unsupported(fmt::format("http(s) needs libcurl 7.85.0 or later; this one is {}",
                                    info && info->version ? info->version : "of unknown version"));
  CurlLibrary lib{};
  resolve(handle, lib.global_init, "curl_global_init");
  resolve(handle, lib.easy_init, "curl_easy_init");
  resolve(handle, lib.easy_cleanup, "curl_easy_cleanup");
  resolve(handle, lib.easy_reset, "curl_easy_reset");
  resolve(handle, lib.easy_setopt, "curl_easy_setopt");
  resolve(handle, lib.easy_perform, "curl_easy_perform");
  resolve(handle, lib.easy_strerror, "curl_easy_strerror");
  resolve(handle, lib.slist_append, "curl_slist_append");
  resolve(handle, lib.slist_free_all, "curl_slist_free_all");
  if (lib.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    library_unsupported("libcurl could not initialise");
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
