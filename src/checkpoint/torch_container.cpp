// checkpoint/torch_container.cpp: the container of a checkpoint (a zip archive, or the legacy
// pickles followed by raw storages), its pickle run, and each storage's bytes found and checked.
#include "checkpoint/torch_container.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "checkpoint/pickle.hpp"
#include "checkpoint/zip.hpp"
#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

[[noreturn]] void refuse_checkpoint(std::string tensor, std::string detail) {
  throw_format(Rule::checkpoint, std::move(tensor), std::move(detail));
}

std::span<const std::byte> Checkpoint::storage_bytes(size_t s) {
  const StorageRecord& r = resolver.storages[s];
  const std::string& key = r.root_key.empty() ? r.key : r.root_key;
  std::span<const std::byte> whole;
  if (zip) {
    const detail::ZipEntry* e = zip->find(prefix + "data/" + key);
    if (!e)
      refuse_checkpoint(
          {}, fmt::format("storage {} has no entry data/{} in the archive", quote_name(key), key));
    if (e->method == 0) {
      whole = zip->stored(*e);
    } else {
      auto it = inflated.find(key);
      if (it == inflated.end()) it = inflated.emplace(key, zip->read(*e)).first;
      whole = it->second;
    }
  } else {
    auto it = legacy_storages.find(key);
    if (it == legacy_storages.end())
      refuse_checkpoint({}, fmt::format("storage {} is not in the file", quote_name(key)));
    whole = it->second;
  }
  const unsigned bits = dtype_bits(*r.dtype);
  const StorageRecord& root_record =
      r.root_key.empty() ? r : resolver.storages[resolver.storage_by_key.at(r.root_key)];
  const auto root_bytes = detail::checked_mul(root_record.numel, bits / 8);
  if (!root_bytes || *root_bytes != whole.size())
    refuse_checkpoint(
        {}, fmt::format("storage {} holds {} bytes, but its record says {} elements of {} bytes",
                        quote_name(key), whole.size(), root_record.numel, bits / 8));
  if (r.root_key.empty()) return whole;
  const auto begin = detail::checked_mul(r.view_offset, bits / 8);
  const auto size = detail::checked_mul(r.numel, bits / 8);
  const auto end = begin && size ? detail::checked_add(*begin, *size) : std::nullopt;
  if (!end || *end > whole.size())
    refuse_checkpoint({}, fmt::format("storage view {} lies outside storage {}", quote_name(r.key),
                                      quote_name(key)));
  return whole.subspan(static_cast<size_t>(*begin), static_cast<size_t>(*size));
}

namespace {
// The 10-byte little-endian magic number the legacy format starts with (0x1950a86a20f9469cfc6c).
constexpr std::array<uint8_t, 10> kLegacyMagic = {0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                                  0x20, 0x6a, 0xa8, 0x50, 0x19};
}  // namespace

void parse_checkpoint(Checkpoint& c) {
  if (detail::looks_like_zip(c.bytes)) {
    c.format = "zip";
    c.zip.emplace(c.bytes);
    // torch writes one top-level folder (any name) holding data.pkl.
    const detail::ZipEntry* pkl = nullptr;
    for (const detail::ZipEntry& e : c.zip->entries()) {
      const auto slash = e.name.find('/');
      if (slash != std::string::npos && e.name.substr(slash + 1) == "data.pkl") {
        if (pkl) throw_format(Rule::zip, e.name, "more than one data.pkl in the archive");
        pkl = &e;
        c.prefix = e.name.substr(0, slash + 1);
      }
    }
    if (!pkl)
      throw_format(Rule::zip, {},
                   "a zip archive without <folder>/data.pkl is not a PyTorch checkpoint");
    if (const detail::ZipEntry* order = c.zip->find(c.prefix + "byteorder")) {
      const auto text = c.zip->read(*order);
      const std::string_view s(reinterpret_cast<const char*>(text.data()), text.size());
      if (s != "little" && s != "big")
        throw_format(Rule::zip, order->name, "byteorder is neither \"little\" nor \"big\"");
      c.big_endian = s == "big";
    }
    const std::vector<std::byte> data = c.zip->read(*pkl);
    c.root = c.pickle.run(data, 0, c.resolver);
    return;
  }
  // Legacy: magic number, protocol version, sys_info, the object, storage keys, raw storages.
  const auto head = c.bytes.first(std::min<size_t>(c.bytes.size(), 2));
  if (head.size() < 2 || std::to_integer<uint8_t>(head[0]) != 0x80)
    throw_format(Rule::checkpoint, {},
                 "not a PyTorch checkpoint (neither a zip archive nor a pickle)");
  c.format = "legacy";
  size_t pos = 0;
  ValueId magic = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  const PyValue& m = c.pickle[magic];
  if (m.kind != PyKind::big_integer || m.text.size() != kLegacyMagic.size() ||
      std::memcmp(m.text.data(), kLegacyMagic.data(), kLegacyMagic.size()) != 0)
    throw_format(Rule::checkpoint, {},
                 "a pickle that is not a PyTorch checkpoint (no legacy magic number)");
  ValueId protocol = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  if (c.pickle[protocol].kind != PyKind::integer || c.pickle[protocol].integer != 1001)
    throw_format(Rule::checkpoint, {}, "legacy checkpoint protocol is not 1001");
  ValueId sys_info = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  const auto& info = c.pickle[sys_info].pairs;
  for (size_t i = 0; i + 1 < info.size(); i += 2)
    if (c.pickle[info[i]].text == "little_endian")
      c.big_endian = c.pickle[info[i + 1]].integer == 0;
  c.root = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  ValueId keys = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  if (c.pickle[keys].kind != PyKind::list)
    throw_format(Rule::checkpoint, {}, "the legacy storage key list is missing");
  for (ValueId k : c.pickle[keys].items) {
    const std::string& key = c.pickle[k].text;
    auto it = c.resolver.storage_by_key.find(key);
    if (it == c.resolver.storage_by_key.end())
      throw_format(Rule::checkpoint, {},
                   fmt::format("storage {} is listed but never used", quote_name(key)));
    const StorageRecord& r = c.resolver.storages[it->second];
    if (!r.dtype)
      throw_format(
          Rule::checkpoint, {},
          fmt::format("storage {} is a {}, which tlio cannot read", quote_name(key), r.type_name));
    if (c.bytes.size() - pos < 8)
      throw_format(Rule::checkpoint, {}, fmt::format("storage {} is cut short", quote_name(key)));
    uint64_t numel = 0;
    for (int i = 0; i < 8; ++i)
      numel |= uint64_t(std::to_integer<uint8_t>(c.bytes[pos + i])) << (8 * i);
    if (c.big_endian) numel = __builtin_bswap64(numel);
    pos += 8;
    const auto size = detail::checked_mul(numel, dtype_bits(*r.dtype) / 8);
    if (!size || *size > c.bytes.size() - pos)
      throw_format(Rule::checkpoint, {},
                   fmt::format("storage {} of {} elements runs past the end of the file",
                               quote_name(key), numel));
    if (!c.legacy_storages.emplace(key, c.bytes.subspan(pos, static_cast<size_t>(*size))).second)
      throw_format(Rule::checkpoint, {},
                   fmt::format("storage {} is listed twice", quote_name(key)));
    pos += static_cast<size_t>(*size);
  }
}

void open_checkpoint(Checkpoint& c, const std::filesystem::path& path) {
  const Location where = Location::parse(path.native());
  c.name = where.display();
  c.fd = detail::open_whole_file(where);
  c.mapping = detail::Mapping(c.fd.get(), detail::fd_size(c.fd.get(), c.name), c.name);
  c.bytes = c.mapping.bytes();
  parse_checkpoint(c);
}

}  // namespace tlio::detail
