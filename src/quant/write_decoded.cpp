// quant/write_decoded.cpp: write_decoded (schemes.hpp), the pipeline that dequantize and
// convert --dtype stream every quantized weight through.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "common/checked.hpp"
#include "common/parallel.hpp"
#include "quant/schemes.hpp"
#include "tlio/convert.hpp"

namespace tlio::detail {
namespace {

// Slices decoded ahead of the one being appended: the cores keep decoding while the output
// waits for the disk.
constexpr unsigned kSlicesAhead = 4;
// Chunks per slice.
constexpr uint64_t kChunksPerSlice = 16;

// The weight's elements as slices of kChunksPerSlice chunks, decoded by `workers` threads that
// take chunks in order as they come free (an even split would wait for a core that the output
// writes took for a while), into kSlicesAhead buffers; this thread appends each slice in turn.
class DecodePipeline {
 public:
  DecodePipeline(const WeightDecoder& decoder, Dtype decoded, uint64_t elements, uint64_t chunk)
      : decoder_(decoder),
        decoded_(decoded),
        unit_(dtype_bits(decoded) / 8),
        elements_(elements),
        chunk_(chunk),
        chunks_((elements + chunk - 1) / chunk),
        slices_((chunks_ + kChunksPerSlice - 1) / kChunksPerSlice) {
    for (uint64_t s = 0; s < std::min<uint64_t>(slices_, kSlicesAhead); ++s)
      buffers_[s].values.resize(
          static_cast<size_t>(std::min(elements_, kChunksPerSlice * chunk_) * unit_));
  }

  // Calls append(bytes of slice s) for every slice in order; errors of the workers or of
  // append are rethrown here once every worker has stopped.
  template <class Append>
  void run(unsigned workers, Append&& append) {
    std::vector<std::thread> threads;
    try {
      for (uint64_t t = 0; t < std::min<uint64_t>(std::max(1u, workers), chunks_); ++t)
        threads.emplace_back([this] { work(); });
    } catch (const std::system_error&) {  // no more threads (a pids limit): fewer decode
    }
    if (threads.empty()) return run_here(append);
    std::exception_ptr error;
    try {
      for (uint64_t s = 0; s < slices_; ++s) {
        Buffer& b = buffers_[s % kSlicesAhead];
        {
          std::unique_lock lock(mutex_);
          changed_.wait(lock, [&] { return stopping_ || b.chunks_done == chunks_in(s); });
          if (stopping_) break;
        }
        append(std::span<const std::byte>(b.values).first(
            static_cast<size_t>(elements_in(s) * unit_)));
        {
          std::lock_guard lock(mutex_);
          b.chunks_done = 0;
          appended_ = s + 1;
        }
        changed_.notify_all();
      }
    } catch (...) {
      error = std::current_exception();
    }
    stop();
    for (std::thread& t : threads) t.join();
    if (!error) error = worker_error_;
    if (error) std::rethrow_exception(error);
  }

 private:
  // Every slice decoded and appended by this thread, in one buffer.
  template <class Append>
  void run_here(Append&& append) {
    Buffer& b = buffers_[0];
    for (uint64_t s = 0; s < slices_; ++s) {
      for (uint64_t c = s * kChunksPerSlice; c < s * kChunksPerSlice + chunks_in(s); ++c)
        decode(c, b);
      append(
          std::span<const std::byte>(b.values).first(static_cast<size_t>(elements_in(s) * unit_)));
    }
  }

  struct Buffer {
    std::vector<std::byte> values;
    uint64_t chunks_done = 0;  // under mutex_
  };

  // Chunk c into its place in b.
  void decode(uint64_t c, Buffer& b) const {
    const uint64_t first = c * chunk_, count = std::min(chunk_, elements_ - first);
    const uint64_t at = (c % kChunksPerSlice) * chunk_ * unit_;
    decoder_.read(first, count, decoded_, std::span(b.values).subspan(at, count * unit_));
  }
  uint64_t chunks_in(uint64_t s) const {
    return std::min(kChunksPerSlice, chunks_ - s * kChunksPerSlice);
  }
  uint64_t elements_in(uint64_t s) const {
    return std::min(kChunksPerSlice * chunk_, elements_ - s * kChunksPerSlice * chunk_);
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
  }

  void work() {
    try {
      for (uint64_t c; (c = next_.fetch_add(1)) < chunks_;) {
        const uint64_t s = c / kChunksPerSlice;
        Buffer& b = buffers_[s % kSlicesAhead];
        {
          // The buffer is free once its previous slice has been appended.
          std::unique_lock lock(mutex_);
          changed_.wait(lock, [&] { return stopping_ || appended_ + kSlicesAhead > s; });
          if (stopping_) return;
        }
        decode(c, b);
        bool whole = false;
        {
          std::lock_guard lock(mutex_);
          whole = ++b.chunks_done == chunks_in(s);
        }
        if (whole) changed_.notify_all();
      }
    } catch (...) {
      {
        std::lock_guard lock(mutex_);
        if (!worker_error_) worker_error_ = std::current_exception();
      }
      stop();
    }
  }

  const WeightDecoder& decoder_;
  const Dtype decoded_;
  const uint64_t unit_, elements_, chunk_, chunks_, slices_;
  Buffer buffers_[kSlicesAhead];
  std::atomic<uint64_t> next_{0};  // the next chunk to decode
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t appended_ = 0;  // slices appended (under mutex_)
  bool stopping_ = false;  // an error, or the end (under mutex_)
  std::exception_ptr worker_error_;
};

}  // namespace

void write_decoded(const TensorSet& set, const QuantizedWeight& w, Dtype to, Writer& out,
                   std::string_view as, const std::function<void(uint64_t)>& tick) {
  const std::shared_ptr<const WeightDecoder> decoder =
      scheme_entry(w.scheme.kind()).decoder(set, w);
  write_decoded(*decoder, checked_product(w.shape).value_or(0), to, out, as, tick);
}

void write_decoded(const WeightDecoder& decoder, uint64_t elements, Dtype to, Writer& out,
                   std::string_view as, const std::function<void(uint64_t)>& tick) {
  // Chunks small enough to stay in the cache between being made and being written (or the
  // decoder's natural chunk, which it reads fastest).
  const uint64_t chunk = decoder.natural_chunk() ? decoder.natural_chunk() : uint64_t{128} << 10;
  const bool direct = to == Dtype::F32 || to == Dtype::F16 || to == Dtype::BF16;
  const Dtype decoded = direct ? to : Dtype::F32;  // other dtypes from the exact values
  const std::string name(as);
  std::vector<std::byte> converted;
  const auto append = [&](std::span<const std::byte> values) {
    std::span<const std::byte> bytes = values;
    if (!direct) {
      const uint64_t m = values.size() / 4;
      converted.resize(bytes_for(to, m));
      convert(Dtype::F32, values, to, converted, m);
      bytes = converted;
    }
    out.append(name, bytes);
    tick(bytes.size());
  };
  DecodePipeline(decoder, decoded, elements, chunk).run(thread_count(configured_threads()), append);
}

}  // namespace tlio::detail
