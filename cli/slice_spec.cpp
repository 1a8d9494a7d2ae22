// cli/slice_spec.cpp: numpy's slice syntax and its meaning against a shape.
#include "slice_spec.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <system_error>

#include "cli_util.hpp"

namespace tlio::cli {

std::vector<SliceEntry> parse_slice_spec(const std::string& spec) {
  std::vector<SliceEntry> out;
  if (spec.empty()) return out;
  const auto number = [&](std::string s) -> std::optional<int64_t> {
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    if (s.empty()) return std::nullopt;
    int64_t v = 0;
    const char* first = s.data() + (s[0] == '+' ? 1 : 0);
    const auto [end, ec] = std::from_chars(first, s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range ||
        (ec == std::errc{} && end == s.data() + s.size() && v == INT64_MIN))
      throw UsageError(
          fmt::format("{} is out of range (at most {} in size)", s, thousands(INT64_MAX)));
    if (ec != std::errc{} || end != s.data() + s.size())
      throw UsageError(fmt::format("'{}' is not an integer (in '{}')", s, spec));
    return v;
  };
  size_t begin = 0;
  while (true) {
    const size_t comma = spec.find(',', begin);
    const std::string part =
        spec.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    SliceEntry e;
    const size_t c1 = part.find(':');
    if (c1 == std::string::npos) {
      e.index = true;
      e.start = number(part);
      if (!e.start) throw UsageError(fmt::format("empty entry in '{}'", spec));
    } else {
      const size_t c2 = part.find(':', c1 + 1);
      if (c2 != std::string::npos && part.find(':', c2 + 1) != std::string::npos)
        throw UsageError(fmt::format("'{}' has more than start:stop:step", part));
      e.start = number(part.substr(0, c1));
      e.stop =
          number(part.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1));
      if (c2 != std::string::npos) e.step = number(part.substr(c2 + 1));
      if (e.step && *e.step == 0) throw UsageError(fmt::format("step 0 in '{}'", part));
    }
    out.push_back(e);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

std::vector<DimPick> resolve_slice(const std::vector<SliceEntry>& entries,
                                   const std::vector<uint64_t>& shape, const std::string& name,
                                   const std::string& label) {
  if (entries.size() > shape.size())
    throw UsageError(fmt::format("{} has {} entries but tensor {} has {} dimension{}", label,
                                 entries.size(), display_name(name), shape.size(),
                                 shape.size() == 1 ? "" : "s"));
  std::vector<DimPick> picks;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t size = static_cast<int64_t>(std::min<uint64_t>(shape[d], INT64_MAX));
    DimPick p;
    if (d >= entries.size()) {
      p.count = shape[d];
    } else if (const SliceEntry& e = entries[d]; e.index) {
      const int64_t i = *e.start < 0 ? *e.start + size : *e.start;
      if (i < 0 || i >= size)
        throw UsageError(
            fmt::format("{}: index {} is out of range for dimension {} of "
                        "size {} (tensor {})",
                        label, *e.start, d, thousands(shape[d]), display_name(name)));
      p = {static_cast<uint64_t>(i), 1, 1, false};
    } else {
      const int64_t step = e.step.value_or(1);
      const auto clamp = [&](std::optional<int64_t> v, int64_t fallback, int64_t lo, int64_t hi) {
        if (!v) return fallback;
        const int64_t x = *v < 0 ? (*v < -size ? lo : *v + size) : *v;
        return std::clamp(x, lo, hi);
      };
      // numpy's rules: a forward slice runs over [0, size], a backward one over [-1, size - 1].
      const int64_t start =
          step > 0 ? clamp(e.start, 0, 0, size) : clamp(e.start, size - 1, -1, size - 1);
      const int64_t stop =
          step > 0 ? clamp(e.stop, size, 0, size) : clamp(e.stop, -1, -1, size - 1);
      const int64_t span = step > 0 ? stop - start : start - stop;
      const int64_t stride = step > 0 ? step : -step;
      p.count = span > 0 ? static_cast<uint64_t>((span - 1) / stride + 1) : 0;  // no overflow
      p.start = p.count ? static_cast<uint64_t>(start) : 0;
      p.step = step;
    }
    picks.push_back(p);
  }
  return picks;
}

}  // namespace tlio::cli
