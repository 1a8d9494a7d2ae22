// cli/inspect_listing.hpp: what `tlio inspect` shows of a file or a model directory, and its
// table (inspect_table.cpp): rows by tensor or by quantized weight, layers folded with --group.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "tlio/file.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {

// How inspect shows things beyond the file itself.
struct InspectOptions {
  bool json = false;
  bool group = false;                // fold layers: layers.{0..31}.mlp.up_proj.weight  32x
  std::optional<std::regex> filter;  // only names this finds
  std::string filter_text;
};

// What inspect shows, for a file or a model directory alike.
struct Listing {
  struct Entry {
    const tlio::TensorInfo* info;
    std::string file;  // empty for a single file
  };
  std::string name;
  const tlio::File* first = nullptr;  // metadata source
  uint64_t file_size = 0, header_size = 0, data_size = 0;
  std::optional<bool> canonical;
  std::vector<std::pair<std::string, uint64_t>> files;  // directories: name, size
  const tlio::ModelConfig* config = nullptr;
  std::vector<Entry> tensors;  // file order (directories: by file, then offset)
  std::vector<tlio::QuantizedWeight> quantized;
};

/// Logical elements: a quantized weight counts its logical shape, not its packed bytes.
uint64_t parameter_count(const Listing& l);
/// The table of `l` on stdout: a header of sizes and counts, then a row per tensor (or weight).
void print_table(const Listing& l, const InspectOptions& opt);

}  // namespace tlio::cli
