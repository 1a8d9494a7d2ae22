// Many threads reading one open file, converting and dequantizing at once (run under
// ThreadSanitizer with -DTLIO_SANITIZE_THREAD=ON).
#include <gtest/gtest.h>

#include <thread>

#include "test_util.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

TEST(Concurrency, ThreadsShareOneFile) {
  test::TempDir dir;
  std::vector<float> w(64 * 256);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 97) * 0.01f - 0.4f;
  std::vector<TensorData> t;
  std::vector<std::string> names;
  for (int i = 0; i < 16; ++i)
    names.push_back("model.layers." + std::to_string(i) + ".mlp.up_proj.weight");
  for (const auto& n : names) t.push_back({n, Dtype::F32, {64, 256}, std::as_bytes(std::span(w))});
  save_file(dir / "m.safetensors", t);
  quantize_file(File::open(dir / "m.safetensors"), dir / "q.safetensors",
                {QuantScheme::parse("int4-g32-sym"), "", "", {}});
  QuantizeOptions nf4{QuantScheme(Bnb4bitOptions{BnbQuantType::nf4, 64, true}), "", "", {}};
  quantize_file(File::open(dir / "m.safetensors"), dir / "nf4.safetensors", nf4);
  for (Backend backend : {Backend::mmap, Backend::pread}) {
    const File f = File::open(dir / "m.safetensors", {backend});
    const File q = File::open(dir / "q.safetensors", {backend});
    const File b = File::open(dir / "nf4.safetensors", {backend});
    const QuantizedReader shared(b, names[0]);  // one reader used by every thread
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int k = 0; k < 8; ++k)
      threads.emplace_back([&, k] {
        for (int rep = 0; rep < 4; ++rep) {
          const std::string& n = names[(k + rep) % names.size()];
          if (f.copy_as<float>(n) != w) ++failures;
          std::vector<uint16_t> bf(w.size());
          read_as(f, n, Dtype::BF16, std::as_writable_bytes(std::span(bf)));
          if (bf[5] != f32_to_bf16(w[5])) ++failures;
          const QuantizedReader iw(q, n);
          std::vector<float> rows(2 * 256);
          iw.read(static_cast<uint64_t>(k) * 256, rows.size(), Dtype::F32,
                  std::as_writable_bytes(std::span(rows)));
          if (std::abs(rows[3] - w[k * 256 + 3]) > 0.05f) ++failures;
          std::vector<uint16_t> bnb(300);
          shared.read(static_cast<uint64_t>(k) * 1000 + 1, bnb.size(), Dtype::BF16,
                      std::as_writable_bytes(std::span(bnb)));
          const QuantizedReader own(b, n);
          std::vector<float> values(w.size());
          own.read(0, w.size(), Dtype::F32, std::as_writable_bytes(std::span(values)));
          if (std::abs(values[7] - w[7]) > 0.1f ||
              bnb[0] != f32_to_bf16(values[static_cast<size_t>(k) * 1000 + 1]))
            ++failures;
          SliceIndex idx[] = {SliceIndex::at(static_cast<uint64_t>(k)), SliceIndex::range(1, 3)};
          if (f.read_slice(n, idx).size() != 8) ++failures;
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
  }
}

TEST(Concurrency, ParallelConversionsOfLargeArrays) {
  // Large arrays split over cores while other threads convert too.
  const size_t n = (size_t{1} << 20) + 13;
  std::vector<float> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 1e-3f;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&] {
      std::vector<uint16_t> out(n);
      convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::BF16,
              std::as_writable_bytes(std::span(out)), n);
      if (out[n - 1] != f32_to_bf16(in[n - 1])) ++failures;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace tlio
