// format/name_index.hpp: the name index of a header, a sorted array of (32-bit name hash,
// position) keys. Built with a radix sort in a few sequential passes, it finds duplicate names
// while parsing and serves Header::find by binary search, without a node allocation or a random
// memory access per name (headers may hold millions of tensors). Names that share a hash are
// kept sorted by name within their run, so crafted collisions cost O(n log n), never O(n^2).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace tlio::detail {

/// A fast, well-mixed 32-bit hash of a name (8 bytes at a time, murmur3's finalizer).
inline uint64_t name_hash32(std::string_view name) noexcept {
  uint64_t h = 0x9E3779B97F4A7C15u ^ name.size();
  size_t i = 0;
  for (; i + 8 <= name.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, name.data() + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9u;
    h ^= h >> 31;
  }
  // The last 0-7 bytes in at most two loads, without a byte-by-byte copy that the next 8-byte
  // load would wait for (the loads overlap, and every byte is in one of them).
  const unsigned char* p = reinterpret_cast<const unsigned char*>(name.data()) + i;
  const size_t r = name.size() - i;
  uint64_t tail = 0;
  if (r >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + r - 4, 4);
    tail = lo | uint64_t{hi} << 32;
  } else if (r > 0) {
    tail = p[0] | uint64_t{p[r / 2]} << 8 | uint64_t{p[r - 1]} << 16;
  }
  h = (h ^ tail) * 0x94D049BB133111EBu;
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDu;
  h ^= h >> 33;
  return h & 0xFFFFFFFFu;
}

/// The index key of the name at position `pos`.
inline uint64_t name_index_key(std::string_view name, uint32_t pos) noexcept {
  return name_hash32(name) << 32 | pos;
}

/// Sorts keys made by name_index_key by hash and, among equal hashes, by name.
/// `name_of(pos)` gives the name at a position.
template <class NameOf>
void name_index_sort(std::vector<uint64_t>& keys, const NameOf& name_of) {
  // LSD radix sort on the 32 hash bits: three 11-bit digits, their counts taken in one pass.
  constexpr int kDigitBits = 11, kDigits = 3;
  constexpr uint32_t kBuckets = 1u << kDigitBits;
  auto digit = [](uint64_t k, int d) { return (k >> (32 + d * kDigitBits)) & (kBuckets - 1); };
  std::array<std::array<uint32_t, kBuckets>, kDigits> start{};  // keys < 2^32: positions are u32
  for (uint64_t k : keys)
    for (int d = 0; d < kDigits; ++d) ++start[d][digit(k, d)];
  for (auto& counts : start) {  // counts -> where each bucket starts
    uint32_t sum = 0;
    for (uint32_t& c : counts) sum += std::exchange(c, sum);
  }
  std::vector<uint64_t> tmp(keys.size());
  for (int d = 0; d < kDigits; ++d) {
    for (uint64_t k : keys) tmp[start[d][digit(k, d)]++] = k;
    keys.swap(tmp);
  }
  auto by_name = [&](uint64_t a, uint64_t b) {
    return name_of(static_cast<uint32_t>(a)) < name_of(static_cast<uint32_t>(b));
  };
  for (size_t i = 0; i < keys.size();) {  // order runs of equal hashes by name
    size_t j = i + 1;
    while (j < keys.size() && (keys[j] >> 32) == (keys[i] >> 32)) ++j;
    if (j - i > 1) std::stable_sort(keys.begin() + i, keys.begin() + j, by_name);
    i = j;
  }
}

/// Merges keys[0, mid) and keys[mid, end), each sorted by name_index_sort, into one such order.
template <class NameOf>
void name_index_merge(std::vector<uint64_t>& keys, size_t mid, const NameOf& name_of) {
  std::inplace_merge(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(mid), keys.end(),
                     [&](uint64_t a, uint64_t b) {
                       if ((a >> 32) != (b >> 32)) return (a >> 32) < (b >> 32);
                       return name_of(static_cast<uint32_t>(a)) < name_of(static_cast<uint32_t>(b));
                     });
}

/// The position of one of two equal names, or -1 when all names differ.
template <class NameOf>
int64_t name_index_duplicate(const std::vector<uint64_t>& keys, const NameOf& name_of) {
  for (size_t i = 0; i + 1 < keys.size(); ++i)
    if ((keys[i] >> 32) == (keys[i + 1] >> 32) &&
        name_of(static_cast<uint32_t>(keys[i])) == name_of(static_cast<uint32_t>(keys[i + 1])))
      return static_cast<uint32_t>(keys[i + 1]);
  return -1;
}

/// The position of `name` (whose hash is `h`), or -1.
template <class NameOf>
int64_t name_index_find(const std::vector<uint64_t>& keys, std::string_view name, uint64_t h,
                        const NameOf& name_of) {
  auto first = std::lower_bound(keys.begin(), keys.end(), h << 32);
  auto last = std::lower_bound(first, keys.end(), (h + 1) << 32);
  auto it = std::lower_bound(first, last, name, [&](uint64_t k, std::string_view n) {
    return name_of(static_cast<uint32_t>(k)) < n;
  });
  if (it != last && name_of(static_cast<uint32_t>(*it)) == name) return static_cast<uint32_t>(*it);
  return -1;
}

template <class NameOf>
int64_t name_index_find(const std::vector<uint64_t>& keys, std::string_view name,
                        const NameOf& name_of) {
  return name_index_find(keys, name, name_hash32(name), name_of);
}

/// Builds the index of positions [0, count) from scratch.
template <class NameOf>
void name_index_build(std::vector<uint64_t>& keys, size_t count, const NameOf& name_of) {
  keys.resize(count);
  for (size_t i = 0; i < count; ++i)
    keys[i] = name_index_key(name_of(static_cast<uint32_t>(i)), static_cast<uint32_t>(i));
  name_index_sort(keys, name_of);
}

}  // namespace tlio::detail
