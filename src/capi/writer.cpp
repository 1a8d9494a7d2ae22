// capi/writer.cpp: the C API of tlio/writer.hpp.
#include "capi/handles.hpp"

using namespace tlio::capi;

extern "C" {

int tl_writer_open(const char* path, tl_writer** out) {
  TL_REQUIRE(path && out, "tl_writer_open: NULL argument");
  *out = nullptr;
  return guard([&] { *out = new tl_writer{tlio::Writer::to_file(path), {}}; });
}

int tl_writer_set_metadata(tl_writer* w, const char* key, const char* value) {
  TL_REQUIRE(w && key && value, "tl_writer_set_metadata: NULL argument");
  return guard([&] { w->writer.set_metadata(key, value); });
}

int tl_writer_declare(tl_writer* w, const char* name, tl_dtype dtype, size_t rank,
                      const uint64_t* shape) {
  TL_REQUIRE(w && name && (shape || rank == 0), "tl_writer_declare: NULL argument");
  return guard([&] {
    w->writer.declare(name, to_cpp(dtype), tlio::Shape(std::span<const uint64_t>(shape, rank)));
  });
}

int tl_writer_add(tl_writer* w, const char* name, tl_dtype dtype, size_t rank,
                  const uint64_t* shape, const void* data, size_t size) {
  TL_REQUIRE(w && (data || size == 0), "tl_writer_add: NULL argument");
  int rc = tl_writer_declare(w, name, dtype, rank, shape);
  if (rc == TL_OK) w->pending.push_back({name, {data, size}});
  return rc;
}

int tl_writer_write(tl_writer* w, const char* name, const void* data, size_t size) {
  TL_REQUIRE(w && name && (data || size == 0), "tl_writer_write: NULL argument");
  return guard([&] { w->writer.write(name, {static_cast<const std::byte*>(data), size}); });
}

int tl_writer_append(tl_writer* w, const char* name, const void* data, size_t size) {
  TL_REQUIRE(w && name && (data || size == 0), "tl_writer_append: NULL argument");
  return guard([&] { w->writer.append(name, {static_cast<const std::byte*>(data), size}); });
}

int tl_writer_commit(tl_writer* w) {
  TL_REQUIRE(w, "tl_writer_commit: NULL argument");
  int rc = guard([&] {
    for (const auto& [name, bytes] : w->pending)
      w->writer.write(name, {static_cast<const std::byte*>(bytes.first), bytes.second});
    w->writer.commit();
  });
  delete w;  // the Writer's destructor removes the temporary when commit failed
  return rc;
}

void tl_writer_abort(tl_writer* w) { delete w; }

}  // extern "C"
