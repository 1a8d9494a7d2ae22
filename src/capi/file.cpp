// capi/file.cpp: the C API of tlio/file.hpp, dtype.hpp and convert.hpp (files, tensors,
// metadata, dtypes), and of errors and interrupts.
#include "capi/handles.hpp"

using namespace tlio::capi;

int tlio::capi::open_options(const tl_open_options* c, const char* fn, tlio::OpenOptions& o) {
  TL_REQUIRE(c, (std::string(fn) + ": NULL argument").c_str());
  TL_REQUIRE(c->struct_size == sizeof(tl_open_options),
             (std::string(fn) +
              ": struct_size is not that of a tl_open_options (use tl_open_options_init)")
                 .c_str());
  const unsigned known = TL_OPEN_PREAD | TL_OPEN_PRIVATE | TL_OPEN_DIRECT;
  TL_REQUIRE((c->flags & ~known) == 0, (std::string(fn) + ": unknown flags").c_str());
  TL_REQUIRE(
      (c->flags & (c->flags - 1)) == 0,
      (std::string(fn) + ": TL_OPEN_PREAD, TL_OPEN_PRIVATE and TL_OPEN_DIRECT exclude each other")
          .c_str());
  o.backend = c->flags & TL_OPEN_PREAD     ? tlio::Backend::pread
              : c->flags & TL_OPEN_PRIVATE ? tlio::Backend::mmap_private
              : c->flags & TL_OPEN_DIRECT  ? tlio::Backend::direct
                                           : tlio::Backend::mmap;
  o.token = c->token ? c->token : "";
  return TL_OK;
}

extern "C" {

const char* tl_version(void) { return tlio::version(); }
const char* tl_last_error(void) { return g_last_error.c_str(); }
const char* tl_last_error_rule(void) { return g_last_rule; }
int tl_last_error_errno(void) { return g_last_errno; }

void tl_set_interrupt_check(tl_interrupt_fn check, void* context) {
  t_interrupt_check = {check, context};
}

void tl_remove_temporary_files(void) { tlio::remove_temporary_files(); }

const char* tl_dtype_name(tl_dtype dtype) {
  if (!valid_dtype(dtype)) return "?";
  return tlio::dtype_name(static_cast<tlio::Dtype>(dtype))
      .data();  // table literals: NUL-terminated
}

int tl_dtype_from_name(const char* name, tl_dtype* out) {
  TL_REQUIRE(name && out, "tl_dtype_from_name: NULL argument");
  auto d = tlio::parse_dtype_alias(name);
  if (!d) return fail(TL_EINVAL, std::string("unknown dtype '") + name + "'");
  *out = static_cast<tl_dtype>(*d);
  return TL_OK;
}

unsigned tl_dtype_bits(tl_dtype dtype) {
  return valid_dtype(dtype) ? tlio::dtype_bits(static_cast<tlio::Dtype>(dtype)) : 0;
}

int tl_open(const char* path, tl_file** out) { return tl_open_ex(path, 0, out); }

int tl_open_ex(const char* path, unsigned flags, tl_file** out) {
  tl_open_options o;
  tl_open_options_init(&o);
  o.flags = flags;
  return tl_open_with(path, &o, out);
}

void tl_open_options_init(tl_open_options* options) {
  if (!options) return;
  *options = tl_open_options{};
  options->struct_size = sizeof(tl_open_options);
}

int tl_open_with(const char* path, const tl_open_options* options, tl_file** out) {
  TL_REQUIRE(path && out, "tl_open: NULL argument");
  *out = nullptr;
  tlio::OpenOptions o;
  if (int rc = open_options(options, "tl_open_with", o)) return rc;
  return guard([&] { *out = wrap(tlio::File::open(path, o)); });
}

int tl_open_memory(const void* data, size_t size, tl_file** out) {
  TL_REQUIRE(out && (data || size == 0), "tl_open_memory: NULL argument");
  *out = nullptr;
  return guard([&] {
    *out = wrap(tlio::File::from_buffer({static_cast<const std::byte*>(data), size}, "<memory>"));
  });
}

void tl_close(tl_file* file) {
  if (file && !file->owned) return;  // a model's file: tl_model_close() frees it
  delete file;
}

size_t tl_tensor_count(const tl_file* file) { return file ? file->file.tensors().size() : 0; }

int tl_tensor_find(const tl_file* file, const char* name, size_t* index) {
  TL_REQUIRE(file && name && index, "tl_tensor_find: NULL argument");
  const tlio::TensorInfo* t = file->file.header().find(name);
  if (!t) return fail(TL_ENOTFOUND, file->file.name() + ": no tensor named \"" + name + "\"");
  *index = static_cast<size_t>(t - file->file.tensors().data());
  return TL_OK;
}

int tl_tensor_info(const tl_file* file, size_t index, struct tl_tensor_info* out) {
  TL_REQUIRE(file && out, "tl_tensor_info: NULL argument");
  return guard([&] {
    const tlio::TensorInfo& t = tensor_at(file, index);
    out->name = t.name.c_str();
    out->name_len = t.name.size();
    out->dtype = static_cast<tl_dtype>(t.dtype);
    out->rank = t.shape.size();
    out->shape = t.shape.data();
    out->byte_size = t.byte_size();
    out->data_offsets[0] = t.begin;
    out->data_offsets[1] = t.end;
    auto mapped = file->file.mapped_data();
    out->data = mapped.empty() ? nullptr : mapped.data() + t.begin;
  });
}

int tl_tensor_read(const tl_file* file, size_t index, void* dst, size_t dst_size) {
  TL_REQUIRE(file && (dst || dst_size == 0), "tl_tensor_read: NULL argument");
  return guard([&] {
    const tlio::TensorInfo& t = tensor_at(file, index);
    file->file.read(t.name, {static_cast<std::byte*>(dst), dst_size});
  });
}

int tl_tensor_read_many(const tl_file* file, const size_t* indices, void** dsts,
                        const size_t* sizes, size_t count) {
  TL_REQUIRE(file && (count == 0 || (indices && dsts && sizes)),
             "tl_tensor_read_many: NULL argument");
  return guard([&] {
    std::vector<tlio::TensorTarget> targets;
    targets.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (!dsts[i] && sizes[i] != 0) tlio::throw_invalid("tl_tensor_read_many: NULL destination");
      targets.push_back(
          {tensor_at(file, indices[i]).name, {static_cast<std::byte*>(dsts[i]), sizes[i]}});
    }
    file->file.read_many(targets);
  });
}

int tl_tensor_read_as(const tl_file* file, size_t index, tl_dtype to, void* dst, size_t dst_size) {
  TL_REQUIRE(file && (dst || dst_size == 0), "tl_tensor_read_as: NULL argument");
  return guard([&] {
    const tlio::TensorInfo& t = tensor_at(file, index);
    tlio::read_as(file->file, t.name, to_cpp(to), {static_cast<std::byte*>(dst), dst_size});
  });
}

const char* tl_metadata_get(const tl_file* file, const char* key) {
  if (!file || !key) return nullptr;
  auto it = file->file.metadata().find(key);
  return it == file->file.metadata().end() ? nullptr : it->second.c_str();
}

size_t tl_metadata_count(const tl_file* file) { return file ? file->metadata.size() : 0; }

int tl_metadata_at(const tl_file* file, size_t i, const char** key, const char** value) {
  TL_REQUIRE(file && key && value, "tl_metadata_at: NULL argument");
  if (i >= file->metadata.size())
    return fail(TL_EINVAL, "metadata index " + std::to_string(i) + " out of range");
  *key = file->metadata[i]->first.c_str();
  *value = file->metadata[i]->second.c_str();
  return TL_OK;
}

int tl_convert(tl_dtype from, const void* src, size_t src_size, tl_dtype to, void* dst,
               size_t dst_size, uint64_t count) {
  TL_REQUIRE((src || src_size == 0) && (dst || dst_size == 0), "tl_convert: NULL argument");
  return guard([&] {
    tlio::convert(to_cpp(from), {static_cast<const std::byte*>(src), src_size}, to_cpp(to),
                  {static_cast<std::byte*>(dst), dst_size}, count);
  });
}

}  // extern "C"
