// model/rewrite_counts.hpp: what a folder rewrite's step counted for one source shard, as text a
// job's unit leaves for its commit (model/folder_job.hpp), and read back exactly (doubles by
// their bits), so that the commit's report and config.json are the single-process call's.
#pragma once

#include <string>
#include <string_view>

#include "tlio/convert_file.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

std::string counts_text(const ConvertFileReport& r);
std::string counts_text(const QuantizeReport& r);
std::string counts_text(const DequantizeReport& r);

/// Error{io} naming `source` for a text that is not what counts_text wrote.
ConvertFileReport convert_counts(std::string_view text, const std::string& source);
QuantizeReport quantize_counts(std::string_view text, const std::string& source);
DequantizeReport dequantize_counts(std::string_view text, const std::string& source);

}  // namespace tlio::detail
