// cli/large_pages.cpp: the tlio process's operator new. Blocks of 2 MiB and more (a big header's
// JSON indexes and tensor table, conversion buffers) are aligned to 2 MiB and marked
// MADV_HUGEPAGE, so the kernel backs them with transparent huge pages where it allows: one
// fault and one zeroing per 2 MiB instead of 512 faults. A fresh process pays for every page it
// touches first; for `tlio validate` of a 50,000-tensor header that was a quarter of its time
// (docs/benchmarks.md, "Process start-up"). Smaller blocks are malloc's, as before. Only the
// CLI does this: a library must not choose its host's allocation policy.
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

void* allocate(std::size_t size, std::size_t alignment) noexcept {
  if (size == 0) size = 1;
  void* p = nullptr;
  if (size >= kHugePage) {
    if (posix_memalign(&p, kHugePage, size) != 0) return nullptr;
    // Advice only: where huge pages are off, the block is as malloc would give it.
    madvise(p, size & ~(kHugePage - 1), MADV_HUGEPAGE);
    return p;
  }
  if (alignment <= alignof(std::max_align_t)) return std::malloc(size);
  return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

// The standard's loop: call the new-handler until memory comes or there is none to call.
void* allocate_or_throw(std::size_t size, std::size_t alignment) {
  while (true) {
    if (void* p = allocate(size, alignment)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

void* allocate_or_null(std::size_t size, std::size_t alignment) noexcept {
  try {
    return allocate_or_throw(size, alignment);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

void* operator new(std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new[](std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate_or_null(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, static_cast<std::size_t>(a));
}

// Every block comes from malloc or posix_memalign: free releases each kind.
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
