// common/json_members.hpp: the top-level members of a JSON object document edited in its text,
// everything else kept byte for byte (a config.json's formatting, numbers and key order survive
// an edit of its dtype).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tlio/error.hpp"

namespace tlio::detail {

/// `json` (an object document; Error{format} under `rule`, naming `source`, for any other) with
/// member `key` removed when `value` is nullopt, else given the JSON text `value` (replaced in
/// place, or appended after the last member, indented as it is).
std::string set_json_member(std::string_view json, std::string_view key,
                            const std::optional<std::string>& value, const std::string& source,
                            Rule rule);

/// The text of top-level member `key`'s value in `json` (an object document; Error{format}
/// under `rule`, naming `source`, for any other), as it is written; nullopt without the member.
std::optional<std::string> json_member_text(std::string_view json, std::string_view key,
                                            const std::string& source, Rule rule);

}  // namespace tlio::detail
