// checkpoint/torch_container.hpp: a checkpoint opened: its container (zip or legacy), its
// pickle run through TorchResolver, and its storages.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint/pickle.hpp"
#include "checkpoint/torch_resolver.hpp"
#include "checkpoint/zip.hpp"
#include "io/os_file.hpp"

namespace tlio::detail {

// A Rule::checkpoint error about `tensor` (which may be empty).
[[noreturn]] void refuse_checkpoint(std::string tensor, std::string detail);

struct Checkpoint {
  detail::Fd fd;
  detail::Mapping mapping;
  std::span<const std::byte> bytes;
  std::string name;
  std::string format;
  bool big_endian = false;
  std::optional<detail::ZipArchive> zip;
  std::string prefix;  // zip: "archive/"
  Pickle pickle;
  TorchResolver resolver;
  ValueId root = kNoValue;
  // Legacy: the raw storages after the pickles, by key.
  std::unordered_map<std::string, std::span<const std::byte>> legacy_storages;
  std::unordered_map<std::string, std::vector<std::byte>> inflated;  // deflated zip entries

  // The bytes of storage `s`, checked against the size the pickle gives it.
  std::span<const std::byte> storage_bytes(size_t s);
};

// Reads the container and runs the pickle(s) of c.bytes.
void parse_checkpoint(Checkpoint& c);

// Opens and maps `path`, then parse_checkpoint.
void open_checkpoint(Checkpoint& c, const std::filesystem::path& path);

}  // namespace tlio::detail
