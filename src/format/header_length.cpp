// format/header_length.cpp: rule 1 (the header length), and what a file that breaks it looks like.
#include <fmt/core.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "format/header_parse.hpp"
#include "tlio/error.hpp"
#include "tlio/header.hpp"

namespace tlio {

namespace {
// What the first bytes of a PyTorch checkpoint say it is, or "" for anything else.
std::string_view checkpoint_kind(std::span<const std::byte> prefix) {
  const std::string_view b(reinterpret_cast<const char*>(prefix.data()), prefix.size());
  if (b.substr(0, 4) == "PK\x03\x04" || b.substr(0, 4) == "PK\x05\x06")
    return "a zip archive, as torch.save writes PyTorch checkpoints";
  if (b.size() >= 2 && b[0] == '\x80' && b[1] >= 2 && b[1] <= 5)
    return "a Python pickle, as PyTorch checkpoints before torch 1.6 are";
  return {};
}
}  // namespace

std::string detail::describe_foreign_file(std::span<const std::byte> prefix) {
  const std::string_view b(reinterpret_cast<const char*>(prefix.data()), prefix.size());
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (const std::string_view kind = checkpoint_kind(prefix); !kind.empty())
    return std::string(kind);
  if (starts("GGUF")) return "a GGUF file (llama.cpp)";
  if (starts("\x93NUMPY")) return "a NumPy .npy array";
  if (starts("\x89HDF\r\n\x1a\n")) return "an HDF5 file (Keras .h5 weights are)";
  if (starts("\x1f\x8b")) return "gzip-compressed data";
  if (starts("\x28\xb5\x2f\xfd")) return "zstd-compressed data";
  // Text: no control bytes besides tab, newline, carriage return (UTF-8 lead bytes are fine).
  if (b.size() < 4) return {};
  for (char c : b) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') return {};
    if (u == 0x7f) return {};
  }
  const size_t first = b.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (b[first] == '{' || b[first] == '['))
    return "JSON text (a config or index file?)";
  return "text";
}

uint64_t detail::read_header_length(std::span<const std::byte> prefix, uint64_t file_size) {
  // A file that is not safetensors at all fails here; say what it looks like.
  auto fail = [&](std::string reason) {
    const std::string looks_like = describe_foreign_file(prefix);
    if (!checkpoint_kind(prefix).empty())  // what to do matters more than why
      reason =
          fmt::format("not a safetensors file but {}: convert it with `tlio import`", looks_like);
    else if (!looks_like.empty())
      reason = fmt::format("not a safetensors file: this looks like {} ({})", looks_like, reason);
    throw_format(Rule::r1_length, {}, std::move(reason), 0);
  };
  if (file_size < 8 || prefix.size() < 8)
    fail(fmt::format("file is {} bytes, shorter than the 8-byte header length", file_size));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<uint64_t>(prefix[i]);
  if (n > kMaxHeaderSize)
    fail(fmt::format("header length {} exceeds the limit of {}", n, kMaxHeaderSize));
  if (8 + n > file_size)
    fail(fmt::format("header length {} runs past the end of the file ({} bytes)", n, file_size));
  return n;
}

}  // namespace tlio
