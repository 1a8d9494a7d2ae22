// capi/transcode.cpp: transcoding (tlio/transcode.hpp) through the C API.
#include <fmt/core.h>

#include <algorithm>

#include "capi/handles.hpp"

using namespace tlio::capi;

int tl_transcode(const char* src, const char* dst, const char* to, int lossy, tl_dtype dtype,
                 const tl_open_options* options, tl_transcode_result* result) {
  TL_REQUIRE(src && dst, "tl_transcode: NULL argument");
  tlio::TranscodeOptions o;
  if (options)
    if (int rc = open_options(options, "tl_transcode", o.open)) return rc;
  if (to) {
    const std::optional<tlio::TranscodeTarget> target = tlio::transcode_target_named(to);
    TL_REQUIRE(target, fmt::format("tl_transcode: no layout named \"{}\" (mlx, gguf)", to).c_str());
    o.to = *target;
  }
  o.lossy = lossy != 0;
  return guard([&] {
    o.dtype = to_cpp(dtype);
    const tlio::TranscodeReport r = tlio::transcode(src, dst, o);
    if (!result) return;
    *result = {};
    for (const auto& item : r.items) {
      ++(item.exact ? result->carried : result->requantized);
      result->zero_signs += item.zero_signs;
      result->max_rmse = std::max(result->max_rmse, item.rmse);
    }
    result->plain = r.plain;
  });
}
