#include "io/live_files.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>

namespace tlio::detail {
namespace {

// Slots come in chunks allocated on first need and kept for the life of the process (a handler
// may read any of them at any moment), up to kMaxChunks * kSlotsPerChunk entries.
constexpr size_t kSlotsPerChunk = 64;
constexpr size_t kMaxChunks = 256;
// A temporary's full path, as given to open(2) (PATH_MAX on Linux).
constexpr size_t kNameCapacity = 4096;

enum class Kind : uint8_t { none, temporary, mapping };

// A signal handler may only touch lock-free atomics.
static_assert(std::atomic<Kind>::is_always_lock_free && std::atomic<size_t>::is_always_lock_free &&
              std::atomic<const void*>::is_always_lock_free &&
              std::atomic_ref<char>::is_always_lock_free);

// Every field is atomic (relaxed; the sequence counter orders them), so a handler reading a slot
// while its owner changes it is a race the counter detects, never undefined behaviour.
struct Slot {
  std::atomic<bool> claimed{false};
  // Odd while the fields below change; a reader keeps what it copied only if the count is the
  // same even number before and after.
  std::atomic<uint32_t> seq{0};
  std::atomic<Kind> kind{Kind::none};
  std::atomic<const void*> address{nullptr};
  std::atomic<size_t> size{0};
  std::atomic<size_t> name_size{0};
  char* name = nullptr;  // kNameCapacity bytes in its chunk, accessed through std::atomic_ref only
};

// A chunk keeps its slots' small fields together and their names apart: making one touches a
// page or two rather than a page per slot (a name is a page), and a name's page is touched when
// its slot is first used. (Every process that opens a file makes the first chunk.)
struct Chunk {
  Slot slots[kSlotsPerChunk];
  char names[kSlotsPerChunk][kNameCapacity];
  Chunk() noexcept {
    for (size_t i = 0; i < kSlotsPerChunk; ++i) slots[i].name = names[i];
  }
};

std::atomic<Chunk*> g_chunks[kMaxChunks];

Slot* slot_at(int index) noexcept {
  Chunk* chunk =
      g_chunks[static_cast<size_t>(index) / kSlotsPerChunk].load(std::memory_order_acquire);
  return &chunk->slots[static_cast<size_t>(index) % kSlotsPerChunk];
}

int claim_slot() noexcept {
  for (size_t c = 0; c < kMaxChunks; ++c) {
    Chunk* chunk = g_chunks[c].load(std::memory_order_acquire);
    if (!chunk) {
      Chunk* fresh = new (std::nothrow) Chunk;
      if (!fresh) return -1;
      if (g_chunks[c].compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
        chunk = fresh;
      } else {
        delete fresh;  // another thread added this chunk first; `chunk` is theirs
      }
    }
    for (size_t i = 0; i < kSlotsPerChunk; ++i)
      if (!chunk->slots[i].claimed.exchange(true, std::memory_order_acq_rel))
        return static_cast<int>(c * kSlotsPerChunk + i);
  }
  return -1;
}

void publish(Slot& s, Kind kind, const void* address, size_t size, std::string_view name) noexcept {
  const uint32_t seq = s.seq.load(std::memory_order_relaxed);
  s.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.kind.store(kind, std::memory_order_relaxed);
  s.address.store(address, std::memory_order_relaxed);
  s.size.store(size, std::memory_order_relaxed);
  s.name_size.store(name.size(), std::memory_order_relaxed);
  for (size_t i = 0; i < name.size(); ++i)
    std::atomic_ref<char>(s.name[i]).store(name[i], std::memory_order_relaxed);
  s.seq.store(seq + 2, std::memory_order_release);
}

// A stable copy of one slot.
struct Snapshot {
  Kind kind = Kind::none;
  const void* address = nullptr;
  size_t size = 0;
  size_t name_size = 0;
  char name[kNameCapacity];
};

// False when the slot is free or changed while it was read.
bool read_slot(Slot& s, Snapshot& out) noexcept {
  const uint32_t before = s.seq.load(std::memory_order_acquire);
  if (before % 2 != 0) return false;
  out.kind = s.kind.load(std::memory_order_relaxed);
  out.address = s.address.load(std::memory_order_relaxed);
  out.size = s.size.load(std::memory_order_relaxed);
  out.name_size = std::min(s.name_size.load(std::memory_order_relaxed), kNameCapacity - 1);
  for (size_t i = 0; i < out.name_size; ++i)
    out.name[i] = std::atomic_ref<char>(s.name[i]).load(std::memory_order_relaxed);
  out.name[out.name_size] = '\0';
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.seq.load(std::memory_order_relaxed) == before && out.kind != Kind::none;
}

template <class Fn>
void for_each_live(Fn&& fn) noexcept {
  Snapshot snap;
  for (size_t c = 0; c < kMaxChunks; ++c) {
    Chunk* chunk = g_chunks[c].load(std::memory_order_acquire);
    if (!chunk) return;
    for (Slot& slot : chunk->slots)
      if (slot.claimed.load(std::memory_order_acquire) && read_slot(slot, snap))
        if (fn(snap)) return;
  }
}

int register_entry(Kind kind, const void* address, size_t size, std::string_view name) noexcept {
  if (name.size() >= kNameCapacity) return -1;
  const int index = claim_slot();
  if (index >= 0) publish(*slot_at(index), kind, address, size, name);
  return index;
}

}  // namespace

LiveEntry LiveEntry::temporary(std::string_view path) noexcept {
  return LiveEntry(register_entry(Kind::temporary, nullptr, 0, path));
}

LiveEntry LiveEntry::mapping(const void* address, size_t size, std::string_view name) noexcept {
  return LiveEntry(register_entry(Kind::mapping, address, size, name));
}

LiveEntry& LiveEntry::operator=(LiveEntry&& o) noexcept {
  if (this != &o) {
    reset();
    slot_ = o.slot_;
    o.slot_ = -1;
  }
  return *this;
}

void LiveEntry::reset() noexcept {
  if (slot_ < 0) return;
  Slot& s = *slot_at(slot_);
  publish(s, Kind::none, nullptr, 0, {});
  s.claimed.store(false, std::memory_order_release);
  slot_ = -1;
}

void unlink_live_temporaries() noexcept {
  for_each_live([](const Snapshot& s) {
    if (s.kind == Kind::temporary) (void)::unlink(s.name);
    return false;
  });
}

bool live_mapping_name(const void* address, char* out, size_t size) noexcept {
  bool found = false;
  const auto* a = static_cast<const std::byte*>(address);
  for_each_live([&](const Snapshot& s) {
    const auto* begin = static_cast<const std::byte*>(s.address);
    if (s.kind != Kind::mapping || a < begin || a >= begin + s.size) return false;
    if (size > 0) {
      const size_t n = s.name_size < size - 1 ? s.name_size : size - 1;
      std::memcpy(out, s.name, n);
      out[n] = '\0';
    }
    found = true;
    return true;
  });
  return found;
}

bool is_live_temporary(std::string_view path) noexcept {
  bool found = false;
  for_each_live([&](const Snapshot& s) {
    found = s.kind == Kind::temporary && std::string_view(s.name, s.name_size) == path;
    return found;
  });
  return found;
}

namespace {
// Lock-free counters (read by signal handlers).
std::atomic<int> g_uploads{0};
std::atomic<bool> g_uploads_stopped{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);
}  // namespace

LiveUpload::LiveUpload() noexcept { g_uploads.fetch_add(1); }

// A stop request stays for the rest of the process: it comes from a signal meant to end it,
// and a set of files uploaded one by one must not go on with the next file.
LiveUpload::~LiveUpload() { g_uploads.fetch_sub(1); }

HeldStopSignals::HeldStopSignals() noexcept {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, &old_);
}

HeldStopSignals::~HeldStopSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

bool uploads_stopped() noexcept { return g_uploads_stopped.load(); }

bool stop_live_uploads() noexcept {
  if (g_uploads.load() == 0) return false;
  g_uploads_stopped.store(true);
  return true;
}

}  // namespace tlio::detail
