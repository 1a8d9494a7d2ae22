// tlio/shape.hpp: a tensor shape. Behaves like std::vector<uint64_t> for reading, but keeps up
// to four dimensions inline: opening a file with a million tensors then costs no allocation per
// shape.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace tlio {

class Shape {
 public:
  static constexpr size_t kInlineRank = 4;

  Shape() = default;
  Shape(std::initializer_list<uint64_t> dims) { assign(dims.begin(), dims.size()); }
  Shape(const std::vector<uint64_t>& dims) { assign(dims.data(), dims.size()); }  // NOLINT
  explicit Shape(std::span<const uint64_t> dims) { assign(dims.data(), dims.size()); }
  Shape(const Shape& o) { assign(o.data(), o.size()); }
  Shape(Shape&& o) noexcept { take(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~Shape() { release(); }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const uint64_t* data() const noexcept { return on_heap() ? heap_ : inline_; }
  uint64_t* data() noexcept { return on_heap() ? heap_ : inline_; }
  const uint64_t* begin() const noexcept { return data(); }
  const uint64_t* end() const noexcept { return data() + size_; }
  uint64_t operator[](size_t i) const noexcept { return data()[i]; }
  uint64_t& operator[](size_t i) noexcept { return data()[i]; }
  uint64_t back() const noexcept { return data()[size_ - 1]; }
  operator std::span<const uint64_t>() const noexcept { return {data(), size_}; }  // NOLINT
  std::vector<uint64_t> to_vector() const { return {begin(), end()}; }

  /// Makes room for `rank` dimensions (one allocation when it exceeds kInlineRank).
  void reserve(size_t rank) {
    if (rank <= capacity()) return;
    uint64_t* bigger = new uint64_t[rank];
    std::copy(begin(), end(), bigger);
    const uint32_t size = size_;
    release();
    heap_ = bigger;
    heap_capacity_ = static_cast<uint32_t>(rank);
    size_ = size;
  }
  void push_back(uint64_t d) {
    if (size_ == capacity()) reserve(std::max<size_t>(size_ * 2, kInlineRank + 1));
    data()[size_++] = d;
  }
  void clear() noexcept { size_ = 0; }

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const Shape& a, const std::vector<uint64_t>& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool on_heap() const noexcept { return heap_capacity_ != 0; }
  size_t capacity() const noexcept { return on_heap() ? heap_capacity_ : kInlineRank; }
  void release() noexcept {
    if (on_heap()) delete[] heap_;
    heap_capacity_ = 0;
    size_ = 0;
  }
  void assign(const uint64_t* d, size_t n) {
    size_ = 0;
    reserve(n);
    std::copy(d, d + n, data());
    size_ = static_cast<uint32_t>(n);
  }
  void take(Shape& o) noexcept {  // *this holds nothing
    size_ = o.size_;
    heap_capacity_ = o.heap_capacity_;
    if (o.on_heap())
      heap_ = o.heap_;
    else
      std::copy(o.inline_, o.inline_ + o.size_, inline_);
    o.heap_capacity_ = 0;
    o.size_ = 0;
  }

  union {
    uint64_t inline_[kInlineRank] = {};
    uint64_t* heap_;
  };
  uint32_t heap_capacity_ = 0;  // 0: the dims are inline
  uint32_t size_ = 0;
};

}  // namespace tlio
