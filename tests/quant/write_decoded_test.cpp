// Tests for write_decoded's pipeline (quant/schemes.hpp, quant/write_decoded.cpp), with a decoder
// that gives each element its own index: every element lands once and in order, whatever the
// threads, the chunk and the length (slices reused around the ring, a short last chunk and
// slice); converted dtypes; an error in a worker or in the append reaches the caller, with
// every thread stopped (a thread left waiting would hang the test).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

#include "quant/schemes.hpp"
#include "tlio/convert.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {
namespace {

// Element e is the float e (exact below 2^24); chunk 0 reads whatever natural_chunk says.
class CountingDecoder final : public WeightDecoder {
 public:
  explicit CountingDecoder(uint64_t chunk, uint64_t fail_at = UINT64_MAX)
      : chunk_(chunk), fail_at_(fail_at) {}
  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const override {
    if (first <= fail_at_ && fail_at_ < first + count)
      throw std::runtime_error("decoder failed here");
    reads_.fetch_add(1);
    std::vector<float> values(count);
    for (uint64_t i = 0; i < count; ++i) values[i] = static_cast<float>(first + i);
    convert(Dtype::F32, std::as_bytes(std::span(values)), out, dst, count);
  }
  uint64_t natural_chunk() const override { return chunk_; }
  uint64_t reads() const { return reads_.load(); }

 private:
  uint64_t chunk_, fail_at_;
  mutable std::atomic<uint64_t> reads_{0};
};

std::vector<float> written_f32(uint64_t elements, Dtype to, const WeightDecoder& decoder,
                               uint64_t* ticked = nullptr) {
  Writer w = Writer::to_memory();
  w.declare("x", to, {elements});
  uint64_t bytes = 0;
  write_decoded(decoder, elements, to, w, "x", [&](uint64_t n) { bytes += n; });
  if (ticked) *ticked = bytes;
  w.commit();
  return read_f32(File::from_bytes(w.take_bytes()), "x");
}

class WriteDecoded : public ::testing::TestWithParam<unsigned> {
 protected:
  void SetUp() override { set_conversion_threads(GetParam()); }
  void TearDown() override { set_conversion_threads(0); }
};

TEST_P(WriteDecoded, EveryElementOnceAndInOrder) {
  // 16 chunks a slice, 4 slices ahead: 7 slices and a bit go round the ring, the last chunk short.
  for (const uint64_t chunk : {uint64_t{1}, uint64_t{7}, uint64_t{100}})
    for (const uint64_t elements : {uint64_t{0}, uint64_t{1}, chunk * 16 * 7 + 3 * chunk + 1}) {
      SCOPED_TRACE(::testing::Message() << "chunk " << chunk << " elements " << elements);
      const CountingDecoder decoder(chunk);
      uint64_t ticked = 0;
      const std::vector<float> got = written_f32(elements, Dtype::F32, decoder, &ticked);
      ASSERT_EQ(got.size(), elements);
      for (uint64_t e = 0; e < elements; ++e) ASSERT_EQ(got[e], static_cast<float>(e)) << e;
      EXPECT_EQ(ticked, elements * 4);
      EXPECT_EQ(decoder.reads(), (elements + chunk - 1) / chunk);
    }
}

TEST_P(WriteDecoded, OtherDtypesFromTheF32Values) {
  const CountingDecoder decoder(9);
  const uint64_t elements = 9 * 16 * 5 + 4;
  for (const Dtype to : {Dtype::BF16, Dtype::F64}) {  // decoded as it is; converted from F32
    SCOPED_TRACE(dtype_name(to));
    const std::vector<float> got = written_f32(elements, to, decoder);
    for (uint64_t e = 0; e < elements; ++e) {
      float want = static_cast<float>(e);
      if (to == Dtype::BF16) {  // what BF16 keeps of e
        uint16_t bits = 0;
        const auto as_bits = std::as_writable_bytes(std::span(&bits, 1));
        convert(Dtype::F32, std::as_bytes(std::span(&want, 1)), Dtype::BF16, as_bits, 1);
        convert(Dtype::BF16, as_bits, Dtype::F32, std::as_writable_bytes(std::span(&want, 1)), 1);
      }
      ASSERT_EQ(got[e], want) << e;
    }
  }
}

TEST_P(WriteDecoded, AFailingChunkStopsTheWeight) {
  // Early (before the ring has gone round), and late.
  for (const uint64_t fail_at : {uint64_t{5}, uint64_t{3 * 16 * 6 + 2}}) {
    const CountingDecoder decoder(3, fail_at);
    Writer w = Writer::to_memory();
    const uint64_t elements = 3 * 16 * 20;
    w.declare("x", Dtype::F32, {elements});
    // (A stop that did not reach every thread would hang here: ctest's timeout.)
    EXPECT_THROW(write_decoded(decoder, elements, Dtype::F32, w, "x", [](uint64_t) {}),
                 std::runtime_error);
  }
}

TEST_P(WriteDecoded, AFailingAppendStopsTheDecoders) {
  const CountingDecoder decoder(5);
  Writer w = Writer::to_memory();
  const uint64_t elements = 5 * 16 * 20;
  w.declare("x", Dtype::F32, {elements / 2});  // the writer refuses the second half
  EXPECT_THROW(write_decoded(decoder, elements, Dtype::F32, w, "x", [](uint64_t) {}), Error);
}

INSTANTIATE_TEST_SUITE_P(Threads, WriteDecoded, ::testing::Values(1u, 2u, 5u));

}  // namespace
}  // namespace tlio::detail
