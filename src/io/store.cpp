// io/store.cpp: the stores tlio knows, by URL scheme. A new kind of location registers here.
#include "io/store.hpp"

#include <array>
#include <utility>

namespace tlio::detail {

// Defined by each store's own file.
const Store& local_store() noexcept;
const Store& http_store() noexcept;

namespace {
struct Registration {
  std::string_view scheme;
  const Store& (*store)() noexcept;
};
// "" is a local path.
constexpr std::array kStores = {
    Registration{"", local_store},
    Registration{"http", http_store},
    Registration{"https", http_store},
};
}  // namespace

const Store* find_store(std::string_view scheme) noexcept {
  for (const Registration& r : kStores)
    if (r.scheme == scheme) return &r.store();
  return nullptr;
}

const Store& store_of(const Location& where) noexcept { return *find_store(where.scheme()); }

}  // namespace tlio::detail
