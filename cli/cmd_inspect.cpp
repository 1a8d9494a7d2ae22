// cli/cmd_inspect.cpp: `tlio inspect FILE [--json]`.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/file.hpp"

namespace tlio::cli {
namespace {

std::string shape_text(std::span<const uint64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string json_str(std::string_view s) {
  std::string out;
  tlio::append_json_string(out, s);
  return out;
}

void print_json(const tlio::File& f) {
  std::string out = "{";
  out += fmt::format(
      "\"file\":{},\"file_size\":{},\"header_size\":{},\"data_size\":{},"
      "\"canonical\":{},",
      json_str(f.name()), f.file_size(), f.header_size(), f.header().data_size(),
      f.is_canonical() ? "true" : "false");
  out += "\"metadata\":";
  if (!f.header().has_metadata()) {
    out += "null";
  } else {
    out += "{";
    bool first = true;
    for (const auto& [k, v] : f.metadata()) {
      if (!first) out += ",";
      first = false;
      out += json_str(k) + ":" + json_str(v);
    }
    out += "}";
  }
  out += ",\"tensors\":[";
  std::map<std::string_view, uint64_t> counts;
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& t = f.tensors()[i];
    if (i) out += ",";
    out += fmt::format(
        "{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}],"
        "\"bytes\":{}}}",
        json_str(t.name), tlio::dtype_name(t.dtype), fmt::join(t.shape, ","), t.begin, t.end,
        t.byte_size());
    ++counts[tlio::dtype_name(t.dtype)];
  }
  out += "],\"dtype_counts\":{";
  bool first = true;
  for (const auto& [d, n] : counts) {
    if (!first) out += ",";
    first = false;
    out += fmt::format("\"{}\":{}", d, n);
  }
  out += fmt::format("}},\"tensor_count\":{},\"total_bytes\":{}}}\n", f.tensors().size(),
                     f.header().data_size());
  fmt::print("{}", out);
}

void print_table(const tlio::File& f) {
  fmt::print("file:      {}\n", f.name());
  fmt::print("size:      {} (header {}, data {})\n", human_size(f.file_size()),
             human_size(f.header_size()), human_size(f.header().data_size()));
  fmt::print("canonical: {}\n", f.is_canonical() ? "yes" : "no");
  if (f.metadata().empty()) {
    fmt::print("metadata:  {}\n", f.header().has_metadata() ? "(empty)" : "(none)");
  } else {
    fmt::print("metadata:\n");
    for (const auto& [k, v] : f.metadata())
      fmt::print("  {}: {}\n", display_name(k), display_name(v));
  }
  struct Row {
    std::string name, dtype, shape, bytes, offset;
  };
  std::vector<Row> rows;
  rows.push_back({"name", "dtype", "shape", "bytes", "offset"});
  std::map<std::string_view, uint64_t> counts;
  for (const auto& t : f.tensors()) {
    rows.push_back({display_name(t.name), std::string(tlio::dtype_name(t.dtype)),
                    shape_text(t.shape), human_size(t.byte_size()), std::to_string(t.begin)});
    ++counts[tlio::dtype_name(t.dtype)];
  }
  size_t w[4] = {0, 0, 0, 0};
  for (const auto& r : rows) {
    w[0] = std::max(w[0], display_width(r.name));
    w[1] = std::max(w[1], r.dtype.size());
    w[2] = std::max(w[2], r.shape.size());
    w[3] = std::max(w[3], r.bytes.size());
  }
  fmt::print("tensors:\n");
  for (const auto& r : rows)
    fmt::print("  {}  {}  {}  {}  {}\n", pad(r.name, w[0]), pad(r.dtype, w[1]), pad(r.shape, w[2]),
               pad(r.bytes, w[3], true), r.offset);
  std::vector<std::string> parts;
  for (const auto& [d, n] : counts) parts.push_back(fmt::format("{} {}", n, d));
  fmt::print("total:     {} tensor{}, {}{}{}\n", f.tensors().size(),
             f.tensors().size() == 1 ? "" : "s", human_size(f.header().data_size()),
             parts.empty() ? "" : "; ", fmt::join(parts, ", "));
}

}  // namespace

void add_inspect(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Show metadata and the table of tensors");
  cmd->footer("Example: tlio inspect model.safetensors --json");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("FILE", *path, "File to inspect")->required();
  cmd->add_flag("--json", *json, "Machine-readable output (sizes in bytes)");
  cmd->callback([path, json, &exit_code] {
    exit_code = guarded([&] {
      tlio::File f = tlio::File::open(*path);
      if (*json)
        print_json(f);
      else
        print_table(f);
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli
