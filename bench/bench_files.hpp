// bench/bench_files.hpp: the inputs every benchmark uses, made with tlio's own writer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tlio/writer.hpp"

namespace tlio::bench {

/// 50,000 F32 [4] tensors named layers.<i>.w (a 3.8 MB header), in memory.
inline std::vector<std::byte> many_small_tensors(int count = 50'000) {
  Writer w = Writer::to_memory();
  for (int i = 0; i < count; ++i) w.declare("layers." + std::to_string(i) + ".w", Dtype::F32, {4});
  std::vector<std::byte> zeros(16);
  for (const auto& t : w.layout()) w.write(t.name, zeros);
  w.commit();
  return w.take_bytes();
}

/// `tensors` F32 tensors of [rows, cols] (t000, t001, ...) at `path`, unless it already exists
/// with that size. 200 x [1250, 1000] is the 1 GB file of notes/peers-and-style.md; 256 x
/// [1024, 1024] is 1 GiB.
/// With `proj_names`, tensors are named model.layers.<i>.mlp.up_proj.weight (what
/// `tlio quantize` selects by default).
inline void ensure_big_file(const std::filesystem::path& path, int tensors = 200,
                            uint64_t rows = 1250, uint64_t cols = 1000, bool proj_names = false) {
  const uint64_t tensor_bytes = rows * cols * 4;
  std::error_code ec;
  if (std::filesystem::exists(path, ec) &&
      std::filesystem::file_size(path) > uint64_t(tensors) * tensor_bytes)
    return;
  Writer w = Writer::to_file(path);
  w.set_metadata("format", "pt");
  char name[64];
  auto name_of = [&](int i) {
    if (proj_names)
      snprintf(name, sizeof name, "model.layers.%d.mlp.up_proj.weight", i);
    else
      snprintf(name, sizeof name, "t%03d", i);
  };
  for (int i = 0; i < tensors; ++i) {
    name_of(i);
    w.declare(name, Dtype::F32, {rows, cols});
  }
  for (int i = 0; i < tensors; ++i) {
    name_of(i);
    // Varied values (so quantization does real work), cheap to generate.
    uint32_t state = 2654435761u * static_cast<uint32_t>(i + 1);
    w.write_from(name, [&](uint64_t, std::span<std::byte> buf) {
      for (size_t k = 0; k + 4 <= buf.size(); k += 4) {
        state = state * 1664525u + 1013904223u;
        const float value = static_cast<float>(static_cast<int32_t>(state)) * 1e-11f;
        std::memcpy(buf.data() + k, &value, 4);
      }
    });
  }
  w.commit();
}

}  // namespace tlio::bench
