// io/curl_library.hpp: libcurl, loaded when the first URL is opened. Linking it would load it
// and its ~30 libraries (TLS, LDAP, Kerberos, ...) into every process, `tlio --version` and
// `import tlio` of local files included; most runs never touch the network.
#pragma once

#include <curl/curl.h>

namespace tlio::detail {

/// The libcurl functions tlio calls, resolved from libcurl.so.4 (the ABI the build's headers
/// describe), of version kMinCurlVersion or later. Members are named after the functions
/// without their `curl_` prefix. easy_setopt is called through a pointer, so libcurl's
/// compile-time checks of option types do not apply: pass long for numbers.
/// CURLOPT_PROTOCOLS_STR and CURLOPT_REDIR_PROTOCOLS_STR, which keep requests to http(s), came
/// with 7.85.0.
inline constexpr unsigned kMinCurlVersion = 0x075500;

struct CurlLibrary {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_reset) easy_reset;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  decltype(&::curl_easy_perform) easy_perform;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
};

/// The library, loaded and globally initialised on the first call (thread-safe). Throws
/// Error{unsupported} when libcurl.so.4 cannot be loaded or lacks a function.
const CurlLibrary& curl_library();

/// True once curl_library() has loaded it (tests check local work never does).
bool curl_library_loaded() noexcept;

}  // namespace tlio::detail
