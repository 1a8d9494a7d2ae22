// capi/gguf.cpp: GGUF files (tlio/gguf.hpp) through the C API.
#include "capi/handles.hpp"

struct tl_gguf {
  explicit tl_gguf(tlio::GgufFile f)
      : file(std::move(f)), metadata(tlio::gguf_scalar_metadata(file)) {}
  tlio::GgufFile file;
  tlio::Metadata metadata;  // the scalar and string keys as text
};

using namespace tlio::capi;

int tl_gguf_open(const char* location, const tl_open_options* options, tl_gguf** out) {
  TL_REQUIRE(location && out, "tl_gguf_open: NULL argument");
  *out = nullptr;
  tlio::OpenOptions o;
  if (options)
    if (int rc = open_options(options, "tl_gguf_open", o)) return rc;
  return guard([&] { *out = new tl_gguf(tlio::GgufFile::open(location, o)); });
}

void tl_gguf_close(tl_gguf* file) { delete file; }

size_t tl_gguf_tensor_count(const tl_gguf* file) { return file ? file->file.tensors().size() : 0; }

int tl_gguf_tensor_at(const tl_gguf* file, size_t index, tl_gguf_tensor* out) {
  TL_REQUIRE(file && out, "tl_gguf_tensor_at: NULL argument");
  TL_REQUIRE(index < file->file.tensors().size(), "tl_gguf_tensor_at: index past the last tensor");
  const tlio::GgufTensorInfo& t = file->file.tensors()[index];
  *out = {};
  out->name = t.name.c_str();
  out->ggml_type = t.type;
  out->type_name = tlio::ggml_type(t.type)->name.data();  // a literal: NUL-terminated
  out->decodes = tlio::ggml_decodes(t.type) ? 1 : 0;
  out->rank = t.ne.size();
  std::copy(t.ne.rbegin(), t.ne.rend(), out->shape);
  out->elements = t.element_count();
  out->bytes = t.bytes;
  return TL_OK;
}

int tl_gguf_find(const tl_gguf* file, const char* name, size_t* index) {
  TL_REQUIRE(file && name && index, "tl_gguf_find: NULL argument");
  const tlio::GgufTensorInfo* t = file->file.tensor(name);
  if (!t) return fail(TL_ENOTFOUND, "no tensor named " + tlio::detail::quote_name(name));
  *index = static_cast<size_t>(t - file->file.tensors().data());
  return TL_OK;
}

int tl_gguf_read(const tl_gguf* file, size_t index, uint64_t first, uint64_t count, tl_dtype dtype,
                 void* dst, size_t dst_size) {
  TL_REQUIRE(file && (dst || dst_size == 0), "tl_gguf_read: NULL argument");
  TL_REQUIRE(index < file->file.tensors().size(), "tl_gguf_read: index past the last tensor");
  return guard([&] {
    file->file.read_values(file->file.tensors()[index], first, count, to_cpp(dtype),
                           {static_cast<std::byte*>(dst), dst_size});
  });
}

int tl_gguf_read_slice(const tl_gguf* file, size_t index, size_t rank, const uint64_t* starts,
                       const uint64_t* stops, tl_dtype dtype, void* dst, size_t dst_size) {
  TL_REQUIRE(file && (dst || dst_size == 0) && (rank == 0 || (starts && stops)),
             "tl_gguf_read_slice: NULL argument");
  TL_REQUIRE(index < file->file.tensors().size(), "tl_gguf_read_slice: index past the last tensor");
  return guard([&] {
    std::vector<tlio::SliceIndex> slice;
    for (size_t d = 0; d < rank; ++d) slice.push_back(tlio::SliceIndex::range(starts[d], stops[d]));
    file->file.read_slice(file->file.tensors()[index], slice, to_cpp(dtype),
                          {static_cast<std::byte*>(dst), dst_size});
  });
}

int tl_gguf_metadata(const tl_gguf* file, const char* key, const char** text) {
  TL_REQUIRE(file && key && text, "tl_gguf_metadata: NULL argument");
  if (const auto it = file->metadata.find(key); it != file->metadata.end()) {
    *text = it->second.c_str();
    return TL_OK;
  }
  if (file->file.find(key))
    return fail(TL_EUNSUPPORTED, "metadata key " + tlio::detail::quote_name(key) + " is an array");
  return fail(TL_ENOTFOUND, "no metadata key " + tlio::detail::quote_name(key));
}

int tl_import_gguf(const char* src, const char* dst, tl_dtype dtype, const tl_open_options* options,
                   uint64_t* tensors) {
  TL_REQUIRE(src && dst, "tl_import_gguf: NULL argument");
  tlio::OpenOptions o;
  if (options)
    if (int rc = open_options(options, "tl_import_gguf", o)) return rc;
  return guard([&] {
    tlio::GgufImportOptions io;
    io.dtype = to_cpp(dtype);
    const tlio::GgufImportReport r = tlio::import_gguf(tlio::GgufFile::open(src, o), dst, io);
    if (tensors) *tensors = r.tensors;
  });
}

int tl_import_gguf_model(const char* src, const char* dst, tl_dtype dtype,
                         const tl_open_options* options, uint64_t* tensors) {
  TL_REQUIRE(src && dst, "tl_import_gguf_model: NULL argument");
  tlio::OpenOptions o;
  if (options)
    if (int rc = open_options(options, "tl_import_gguf_model", o)) return rc;
  return guard([&] {
    tlio::GgufImportOptions io;
    io.dtype = to_cpp(dtype);
    const tlio::GgufImportReport r = tlio::import_gguf_model(tlio::GgufFile::open(src, o), dst, io);
    if (tensors) *tensors = r.tensors;
  });
}

int tl_export_gguf(const char* src, const char* dst, const char* type,
                   const tl_open_options* options, uint64_t* tensors) {
  return tl_export_gguf_split(src, dst, type, 0, options, tensors);
}

int tl_export_gguf_split(const char* src, const char* dst, const char* type,
                         uint64_t split_max_size, const tl_open_options* options,
                         uint64_t* tensors) {
  return tl_export_gguf_with(src, dst, type, 0, split_max_size, options, tensors);
}

int tl_export_gguf_with(const char* src, const char* dst, const char* type, unsigned flags,
                        uint64_t split_max_size, const tl_open_options* options,
                        uint64_t* tensors) {
  TL_REQUIRE(src && dst, "tl_export_gguf: NULL argument");
  TL_REQUIRE((flags & ~(TL_GGUF_PURE | TL_GGUF_ALLOW_REQUANTIZE)) == 0,
             "tl_export_gguf_with: unknown flags");
  tlio::GgufExportOptions o;
  if (options)
    if (int rc = open_options(options, "tl_export_gguf", o.open); rc != TL_OK) return rc;
  if (type) o.type = type;
  o.split_max_size = split_max_size;
  o.pure = (flags & TL_GGUF_PURE) != 0;
  o.allow_requantize = (flags & TL_GGUF_ALLOW_REQUANTIZE) != 0;
  return guard([&] {
    const tlio::GgufExportReport r = tlio::export_gguf(src, dst, o);
    if (tensors) *tensors = r.tensors;
  });
}

int tl_requantize_gguf(const char* src, const char* dst, const char* type, int allow_requantize,
                       const tl_open_options* options, uint64_t* tensors) {
  TL_REQUIRE(src && dst && type, "tl_requantize_gguf: NULL argument");
  tlio::GgufExportOptions o;
  if (options)
    if (int rc = open_options(options, "tl_requantize_gguf", o.open); rc != TL_OK) return rc;
  o.type = type;
  o.allow_requantize = allow_requantize != 0;
  return guard([&] {
    if (tlio::weights_kind(src, o.open) != tlio::WeightsKind::gguf)
      throw tlio::Error(tlio::ErrorCode::invalid_argument, tlio::Rule::none, {}, std::nullopt,
                        "not a GGUF file: tl_requantize_gguf rewrites a GGUF (tl_export_gguf "
                        "exports a model folder)",
                        src);
    const tlio::GgufExportReport r = tlio::export_gguf(src, dst, o);
    if (tensors) *tensors = r.tensors;
  });
}
