// capi/capi.cpp: the C API (include/tlio/tlio.h) over the C++ API. Every entry point catches
// everything at the boundary and turns it into a status code and a thread-local message.
// The function tl_tensor_info shares its name with the struct it fills (as the C API asks).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#include "tlio/tlio.h"
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/json_text.hpp"
#include "common/checked.hpp"
#include "tlio/interrupt.hpp"
#include "tlio/tlio.hpp"

struct tl_file {
  explicit tl_file(tlio::File f) : owned(std::move(f)), file(*owned) {}
  // A file a tl_model owns: valid until tl_model_close().
  struct Borrowed {};
  tl_file(const tlio::File& f, Borrowed) : file(f) {}

  std::optional<tlio::File> owned;
  const tlio::File& file;
  std::vector<const std::pair<const std::string, std::string>*> metadata;  // key order
  // Quantized weights, found on first use, and readers opened on demand; threads share them
  // under the mutex.
  std::mutex cache_mutex;
  std::optional<std::vector<tlio::QuantizedWeight>> quantized;
  std::vector<std::string> scheme_names;  // quantized[i].scheme.name(), for tl_quantized_info
  std::unordered_map<std::string, tlio::QuantizedReader> readers;
};

// A model directory: the tl_file of each weight file is made once, so lookups hand out pointers
// that stay valid until tl_model_close().
struct tl_model {
  tlio::Model model;
  std::vector<std::unique_ptr<tl_file>> files;
};

struct tl_comparison {
  tlio::CompareReport report;
};

struct tl_writer {
  tlio::Writer writer;
  std::vector<std::pair<std::string, std::pair<const void*, size_t>>> pending;  // tl_writer_add
};

namespace {

thread_local std::string g_last_error;
thread_local const char* g_last_rule = "";  // rule_name() literals: static, NUL-terminated
thread_local int g_last_errno = 0;

int fail(int code, std::string message, const char* rule = "", int os_errno = 0) {
  g_last_error = std::move(message);
  g_last_rule = rule;
  g_last_errno = os_errno;
  return code;
}

int code_of(tlio::ErrorCode c) { return static_cast<int>(c); }

// This thread's tl_set_interrupt_check, asked through an InterruptScope by every call.
struct CInterruptCheck {
  tl_interrupt_fn check = nullptr;
  void* context = nullptr;
};
thread_local CInterruptCheck t_interrupt_check;

bool ask_c_check(void* c) {
  const auto* check = static_cast<const CInterruptCheck*>(c);
  return check->check(check->context) != 0;
}

// Runs fn, mapping every exception to a status code and message.
template <class Fn>
int guard(Fn&& fn) {
  try {
    if (t_interrupt_check.check) {
      const tlio::InterruptScope scope(ask_c_check, &t_interrupt_check);
      fn();
    } else {
      fn();
    }
    return TL_OK;
  } catch (const tlio::Error& e) {
    return fail(code_of(e.code()), e.what(), e.rule_name().data(),
                e.os_error().category() == std::system_category() ||
                        e.os_error().category() == std::generic_category()
                    ? e.os_error().value()
                    : 0);
  } catch (const std::bad_alloc&) {
    return fail(TL_ENOMEM, "out of memory");
  } catch (const std::exception& e) {
    return fail(TL_EINVAL, e.what());
  } catch (...) {
    return fail(TL_EINVAL, "unknown error");
  }
}

bool valid_dtype(tl_dtype d) { return static_cast<int>(d) >= 0 && static_cast<int>(d) < tlio::kDtypeCount; }

tlio::Dtype to_cpp(tl_dtype d) {
  if (!valid_dtype(d)) tlio::throw_invalid("not a tl_dtype value: " + std::to_string(static_cast<int>(d)));
  return static_cast<tlio::Dtype>(d);
}

void index_metadata(tl_file& h) {
  for (const auto& kv : h.file.metadata()) h.metadata.push_back(&kv);
}

tl_file* wrap(tlio::File f) {
  auto h = std::make_unique<tl_file>(std::move(f));
  index_metadata(*h);
  return h.release();
}

const tlio::TensorInfo& tensor_at(const tl_file* file, size_t index) {
  if (index >= file->file.tensors().size())
    tlio::throw_invalid("tensor index " + std::to_string(index) + " out of range (" +
                        std::to_string(file->file.tensors().size()) + " tensors)");
  return file->file.tensors()[index];
}

#define TL_REQUIRE(cond, what) \
  do {                         \
    if (!(cond)) return fail(TL_EINVAL, what); \
  } while (0)

}  // namespace

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
  return tlio::dtype_name(static_cast<tlio::Dtype>(dtype)).data();  // table literals: NUL-terminated
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

// The C options as OpenOptions: TL_OK, or TL_EINVAL (the thread's error set) when they are not valid.
static int open_options(const tl_open_options* c, const char* fn, tlio::OpenOptions& o) {
  TL_REQUIRE(c, (std::string(fn) + ": NULL argument").c_str());
  TL_REQUIRE(c->struct_size == sizeof(tl_open_options),
             (std::string(fn) + ": struct_size is not that of a tl_open_options (use tl_open_options_init)").c_str());
  TL_REQUIRE((c->flags & ~(TL_OPEN_PREAD | TL_OPEN_PRIVATE)) == 0, (std::string(fn) + ": unknown flags").c_str());
  TL_REQUIRE(c->flags != (TL_OPEN_PREAD | TL_OPEN_PRIVATE),
             (std::string(fn) + ": TL_OPEN_PREAD and TL_OPEN_PRIVATE exclude each other").c_str());
  o.backend = c->flags & TL_OPEN_PREAD     ? tlio::Backend::pread
              : c->flags & TL_OPEN_PRIVATE ? tlio::Backend::mmap_private
                                           : tlio::Backend::mmap;
  o.token = c->token ? c->token : "";
  return TL_OK;
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
  TL_REQUIRE(file && (count == 0 || (indices && dsts && sizes)), "tl_tensor_read_many: NULL argument");
  return guard([&] {
    std::vector<tlio::TensorTarget> targets;
    targets.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (!dsts[i] && sizes[i] != 0) tlio::throw_invalid("tl_tensor_read_many: NULL destination");
      targets.push_back({tensor_at(file, indices[i]).name, {static_cast<std::byte*>(dsts[i]), sizes[i]}});
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

int tl_model_open(const char* dir, tl_model** out) {
  tl_open_options o;
  tl_open_options_init(&o);
  return tl_model_open_with(dir, &o, out);
}

int tl_model_open_with(const char* dir, const tl_open_options* options, tl_model** out) {
  TL_REQUIRE(dir && out, "tl_model_open: NULL argument");
  *out = nullptr;
  tlio::OpenOptions o;
  if (int rc = open_options(options, "tl_model_open_with", o)) return rc;
  return guard([&] {
    auto m = std::make_unique<tl_model>(tl_model{tlio::Model::open(dir, o), {}});
    for (const tlio::File& f : m->model.files()) {
      m->files.push_back(std::make_unique<tl_file>(f, tl_file::Borrowed{}));
      index_metadata(*m->files.back());
    }
    *out = m.release();
  });
}

void tl_model_close(tl_model* model) { delete model; }

const char* tl_model_arch(const tl_model* model) {
  return model ? model->model.config().arch.c_str() : "";
}

int tl_model_check(const tl_model* model) {
  TL_REQUIRE(model, "tl_model_check: NULL argument");
  return guard([&] { model->model.check(); });
}

size_t tl_model_file_count(const tl_model* model) { return model ? model->files.size() : 0; }

const tl_file* tl_model_file(const tl_model* model, size_t i) {
  return model && i < model->files.size() ? model->files[i].get() : nullptr;
}

int tl_model_find(const tl_model* model, const char* name, const tl_file** file, size_t* index) {
  TL_REQUIRE(model && name && file && index, "tl_model_find: NULL argument");
  return guard([&] {
    const tlio::ModelTensor* t = model->model.find(name);
    if (!t) (void)model->model.view(name);  // throws the library's not-found error
    *file = model->files[t->file].get();
    *index = static_cast<size_t>(t->info - model->model.files()[t->file].tensors().data());
  });
}

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

int tl_convert(tl_dtype from, const void* src, size_t src_size, tl_dtype to, void* dst,
               size_t dst_size, uint64_t count) {
  TL_REQUIRE((src || src_size == 0) && (dst || dst_size == 0), "tl_convert: NULL argument");
  return guard([&] {
    tlio::convert(to_cpp(from), {static_cast<const std::byte*>(src), src_size}, to_cpp(to),
                  {static_cast<std::byte*>(dst), dst_size}, count);
  });
}

static const std::vector<tlio::QuantizedWeight>& quantized_of(const tl_file* file) {
  auto* f = const_cast<tl_file*>(file);  // a cache, not part of the file's observable state
  std::lock_guard<std::mutex> lock(f->cache_mutex);
  if (!f->quantized) {
    f->quantized = tlio::find_quantized_weights(f->file);
    for (const auto& q : *f->quantized) f->scheme_names.push_back(q.scheme.name());
  }
  return *f->quantized;
}

static const tlio::QuantizedReader& reader_of(const tl_file* file, const char* name) {
  const auto& all = quantized_of(file);  // takes the lock itself: before ours
  auto* f = const_cast<tl_file*>(file);
  std::lock_guard<std::mutex> lock(f->cache_mutex);
  auto it = f->readers.find(name);
  if (it == f->readers.end()) {
    auto w = std::find_if(all.begin(), all.end(), [&](const auto& q) { return q.name == name; });
    if (w == all.end())
      throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, name, std::nullopt,
                        "no quantized weight named " + tlio::detail::quote_name(name));
    it = f->readers.emplace(name, tlio::QuantizedReader(f->file, *w)).first;
  }
  return it->second;
}

int tl_quantized_count(const tl_file* file, size_t* count) {
  TL_REQUIRE(file && count, "tl_quantized_count: NULL argument");
  return guard([&] { *count = quantized_of(file).size(); });
}

int tl_quantized_at(const tl_file* file, size_t index, tl_quantized_info* info) {
  TL_REQUIRE(file && info, "tl_quantized_at: NULL argument");
  return guard([&] {
    const auto& all = quantized_of(file);
    if (index >= all.size())
      throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, {}, std::nullopt,
                        "quantized weight index " + std::to_string(index) + " of " +
                            std::to_string(all.size()));
    const tlio::QuantizedWeight& q = all[index];
    info->name = q.name.c_str();
    info->scheme = file->scheme_names[index].c_str();
    info->rank = q.shape.size();
    info->shape = q.shape.data();
    info->dtype = static_cast<tl_dtype>(q.dtype);
    info->blocksize = q.scheme.block();
    info->nested = q.scheme.nested() ? 1 : 0;
  });
}

int tl_quantized_read(const tl_file* file, const char* name, uint64_t first, uint64_t count,
                      tl_dtype out, void* dst, size_t dst_size) {
  TL_REQUIRE(file && name && (dst || dst_size == 0), "tl_quantized_read: NULL argument");
  TL_REQUIRE(valid_dtype(out), "tl_quantized_read: invalid dtype");
  return guard([&] {
    reader_of(file, name).read(first, count, to_cpp(out), {static_cast<std::byte*>(dst), dst_size});
  });
}

void tl_quantize_options_init(tl_quantize_options* options) {
  if (!options) return;
  *options = tl_quantize_options{};
  options->struct_size = sizeof(tl_quantize_options);
  options->storage = TL_U8;
}

// The first tl_quantize_options is this one: a smaller struct_size is not a tl_quantize_options.
// A field added later is read only when the caller's struct_size covers it
// (offsetof(field) + sizeof(field) <= struct_size) and keeps its default otherwise.
static constexpr size_t kQuantizeOptionsFirstSize = offsetof(tl_quantize_options, progress_user) +
                                                     sizeof(void*);

int tl_quantize_file_with(const char* src, const char* dst, const tl_quantize_options* options) {
  TL_REQUIRE(src && dst && options, "tl_quantize_file_with: NULL argument");
  TL_REQUIRE(options->struct_size >= kQuantizeOptionsFirstSize &&
                 options->struct_size <= sizeof(tl_quantize_options),
             "tl_quantize_file_with: struct_size is not that of a tl_quantize_options "
             "(use tl_quantize_options_init)");
  TL_REQUIRE(options->scheme, "tl_quantize_file_with: no scheme");
  return guard([&] {
    const tl_quantize_options& c = *options;
    tlio::QuantizeOptions o;
    o.scheme = tlio::QuantScheme::parse(c.scheme);
    o.include = c.include ? c.include : "";
    o.exclude = c.exclude ? c.exclude : "";
    // Options left at their defaults are not given: a scheme without them takes them silently,
    // one given to a scheme that lacks it is refused by the registry.
    if (c.blocksize) o.scheme.set_option("blocksize", std::to_string(c.blocksize));
    if (c.nested) o.scheme.set_option("nested", "true");
    if (c.storage != TL_U8) o.scheme.set_option("storage", tl_dtype_name(c.storage));
    if (c.progress) {
      const tl_progress_fn fn = c.progress;
      void* user = c.progress_user;
      o.progress = [fn, user](uint64_t done, uint64_t total) { fn(done, total, user); };
    }
    tlio::OpenOptions open;
    if (c.struct_size >= offsetof(tl_quantize_options, token) + sizeof(c.token) && c.token) open.token = c.token;
    if (c.struct_size >= offsetof(tl_quantize_options, allow_1d) + sizeof(c.allow_1d))
      o.allow_1d = c.allow_1d != 0;
    tlio::quantize_file(tlio::File::open(src, open), dst, o);
  });
}

int tl_quantize_file(const char* src, const char* dst, const char* scheme, uint64_t blocksize,
                     int nested, const char* include, const char* exclude) {
  tl_quantize_options o;
  tl_quantize_options_init(&o);
  o.scheme = scheme;
  o.blocksize = blocksize;
  o.nested = nested;
  o.include = include;
  o.exclude = exclude;
  return tl_quantize_file_with(src, dst, &o);
}

int tl_dequantize_file(const char* src, const char* dst, int dtype) {
  TL_REQUIRE(src && dst, "tl_dequantize_file: NULL argument");
  TL_REQUIRE(dtype == -1 || valid_dtype(static_cast<tl_dtype>(dtype)), "tl_dequantize_file: invalid dtype");
  return guard([&] {
    std::optional<tlio::Dtype> d;
    if (dtype != -1) d = to_cpp(static_cast<tl_dtype>(dtype));
    tlio::dequantize_file(tlio::File::open(src), dst, d);
  });
}

void tl_compare_options_init(tl_compare_options* options) {
  if (!options) return;
  *options = tl_compare_options{};
  options->struct_size = sizeof(tl_compare_options);
}

int tl_compare_files(const tl_file* a, const tl_file* b, const tl_compare_options* options,
                     tl_comparison** out) {
  TL_REQUIRE(a && b && out, "tl_compare_files: NULL argument");
  TL_REQUIRE(!options || (options->struct_size >= sizeof(tl_compare_options) &&
                          options->struct_size <= sizeof(tl_compare_options)),
             "tl_compare_files: struct_size is not that of a tl_compare_options "
             "(use tl_compare_options_init)");
  *out = nullptr;
  return guard([&] {
    tlio::CompareOptions o;
    if (options) {
      o.atol = options->atol;
      o.rtol = options->rtol;
      if (options->progress) {
        const tl_progress_fn fn = options->progress;
        void* user = options->progress_user;
        o.progress = [fn, user](uint64_t done, uint64_t total) { fn(done, total, user); };
      }
    }
    auto c = std::make_unique<tl_comparison>();
    c->report = tlio::compare_files(a->file, b->file, o);
    *out = c.release();
  });
}

int tl_comparison_equal(const tl_comparison* comparison) {
  return comparison && comparison->report.equal ? 1 : 0;
}

size_t tl_comparison_count(const tl_comparison* comparison) {
  return comparison ? comparison->report.tensors.size() : 0;
}

int tl_comparison_at(const tl_comparison* comparison, size_t index, tl_tensor_comparison* out) {
  TL_REQUIRE(comparison && out, "tl_comparison_at: NULL argument");
  TL_REQUIRE(index < comparison->report.tensors.size(), "tl_comparison_at: index out of range");
  const tlio::TensorComparison& c = comparison->report.tensors[index];
  *out = {c.name.c_str(), c.a_type.c_str(), c.b_type.c_str(), c.shape.size(), c.shape.data(),
          c.elements, c.compared ? 1 : 0, c.note.c_str(), c.max_abs, c.max_rel, c.rmse, c.cosine,
          c.outside, c.equal ? 1 : 0};
  return TL_OK;
}

static const std::vector<std::string>* only_side(const tl_comparison* comparison, int side) {
  if (!comparison || (side != 0 && side != 1)) return nullptr;
  return side == 0 ? &comparison->report.only_in_a : &comparison->report.only_in_b;
}

size_t tl_comparison_only_count(const tl_comparison* comparison, int side) {
  const std::vector<std::string>* names = only_side(comparison, side);
  return names ? names->size() : 0;
}

const char* tl_comparison_only_at(const tl_comparison* comparison, int side, size_t index) {
  const std::vector<std::string>* names = only_side(comparison, side);
  return names && index < names->size() ? (*names)[index].c_str() : nullptr;
}

void tl_comparison_free(tl_comparison* comparison) { delete comparison; }

void tl_edit_options_init(tl_edit_options* options) {
  if (!options) return;
  *options = tl_edit_options{};
  options->struct_size = sizeof(tl_edit_options);
}

static constexpr size_t kEditOptionsFirstSize = sizeof(tl_edit_options);

int tl_edit_file(const char* src, const char* dst, const tl_edit_options* options,
                 tl_edit_report* report) {
  TL_REQUIRE(src && options, "tl_edit_file: NULL argument");
  TL_REQUIRE(options->struct_size >= kEditOptionsFirstSize &&
                 options->struct_size <= sizeof(tl_edit_options),
             "tl_edit_file: struct_size is not that of a tl_edit_options (use tl_edit_options_init)");
  const tl_edit_options& c = *options;
  const auto given = [](const char* const* array, size_t count) { return count == 0 || array; };
  TL_REQUIRE(given(c.set_keys, c.set_count) && given(c.set_values, c.set_count) &&
                 given(c.delete_keys, c.delete_count) && given(c.keep, c.keep_count) &&
                 given(c.drop, c.drop_count) && given(c.rename_patterns, c.rename_count) &&
                 given(c.rename_replacements, c.rename_count),
             "tl_edit_file: an array is NULL but its count is not 0");
  const auto strings = [](const char* const* array, size_t count) {
    std::vector<std::string> out;
    for (size_t i = 0; i < count; ++i) {
      if (!array[i]) tlio::throw_invalid("tl_edit_file: a NULL string in an array");
      out.emplace_back(array[i]);
    }
    return out;
  };
  return guard([&] {
    tlio::EditOptions o;
    const std::vector<std::string> keys = strings(c.set_keys, c.set_count),
                                   values = strings(c.set_values, c.set_count);
    for (size_t i = 0; i < keys.size(); ++i) o.set_metadata[keys[i]] = values[i];
    o.delete_metadata = strings(c.delete_keys, c.delete_count);
    o.tensors.keep = strings(c.keep, c.keep_count);
    o.tensors.drop = strings(c.drop, c.drop_count);
    const std::vector<std::string> patterns = strings(c.rename_patterns, c.rename_count),
                                   replacements = strings(c.rename_replacements, c.rename_count);
    for (size_t i = 0; i < patterns.size(); ++i)
      o.tensors.rename.emplace_back(patterns[i], replacements[i]);
    if (c.progress) {
      const tl_progress_fn fn = c.progress;
      void* user = c.progress_user;
      o.progress = [fn, user](uint64_t done, uint64_t total) { fn(done, total, user); };
    }
    if (c.token) o.open.token = c.token;
    const tlio::EditReport r = tlio::edit_file(src, dst ? dst : "", o);
    if (report) *report = {r.kept, r.dropped, r.renamed, r.in_place ? 1 : 0, r.data_bytes};
  });
}

int tl_import_checkpoint(const char* src, const char* dst, const char* key, unsigned flags,
                         uint64_t max_shard_size, uint64_t* tensors) {
  TL_REQUIRE(src && dst, "tl_import_checkpoint: NULL argument");
  TL_REQUIRE((flags & ~(TL_IMPORT_SKIP_UNSUPPORTED | TL_IMPORT_ALLOW_EMPTY | TL_IMPORT_ALL)) == 0, "tl_import_checkpoint: unknown flags");
  return guard([&] {
    tlio::ImportOptions o;
    if (key) o.key = key;
    o.skip_unsupported = flags & TL_IMPORT_SKIP_UNSUPPORTED;
    o.allow_empty = flags & TL_IMPORT_ALLOW_EMPTY;
    o.import_all = flags & TL_IMPORT_ALL;
    o.max_shard_size = max_shard_size;
    const tlio::ImportReport r = tlio::import_checkpoint(src, dst, o);
    if (tensors) *tensors = r.tensors_written;
  });
}

static void copy_hex(const std::string& hex, char* out) {
  if (out) std::memcpy(out, hex.c_str(), hex.size() + 1);
}

int tl_hash_file(const char* location, const tl_open_options* options, char* sha256_hex) {
  TL_REQUIRE(location && sha256_hex, "tl_hash_file: NULL argument");
  tlio::HashOptions o;
  if (options)
    if (const int rc = open_options(options, "tl_hash_file", o.open); rc != TL_OK) return rc;
  return guard([&] { copy_hex(tlio::hash_file(location, o).sha256, sha256_hex); });
}

int tl_file_sha256(const tl_file* file, const char* expected_hex, char* sha256_hex) {
  TL_REQUIRE(file, "tl_file_sha256: NULL argument");
  return guard([&] {
    const tlio::FileHash h = expected_hex ? tlio::check_sha256(file->file, expected_hex) : tlio::hash_file(file->file);
    copy_hex(h.sha256, sha256_hex);
  });
}

int tl_sign_folder(const char* folder, const char* private_key, const char* signature) {
  TL_REQUIRE(folder && private_key, "tl_sign_folder: NULL argument");
  return guard([&] {
    tlio::SignOptions o;
    if (signature) o.signature = signature;
    (void)tlio::sign_folder(folder, private_key, o);
  });
}

int tl_verify_signature(const char* folder, const char* public_key, const char* signature) {
  TL_REQUIRE(folder && public_key, "tl_verify_signature: NULL argument");
  return guard([&] {
    tlio::VerifyOptions o;
    if (signature) o.signature = signature;
    (void)tlio::verify_signature(folder, public_key, o);
  });
}


// ---- read plans ------------------------------------------------------------------------------

struct tl_plan {
  tlio::ReadPlan plan;
  std::vector<tlio::PlannedRead> reads;  // tl_plan_reads' last answer
};

void tl_plan_options_init(tl_plan_options* options) {
  if (!options) return;
  *options = tl_plan_options{};
  options->struct_size = sizeof(tl_plan_options);
  options->max_gap = -1;
}

int tl_plan_open(const char* source, const tl_plan_options* options, tl_plan** out) {
  TL_REQUIRE(source && out, "tl_plan_open: NULL argument");
  *out = nullptr;
  tlio::ReadPlanOptions o;
  if (options) {
    TL_REQUIRE(options->struct_size == sizeof(tl_plan_options),
               "tl_plan_open: struct_size is not that of a tl_plan_options (use tl_plan_options_init)");
    TL_REQUIRE(options->max_gap >= -1, "tl_plan_open: max_gap is below -1");
    if (options->max_inflight_bytes) o.max_inflight_bytes = options->max_inflight_bytes;
    if (options->max_gap >= 0) o.max_gap = static_cast<uint64_t>(options->max_gap);
    o.keep_packed = options->keep_packed != 0;
    o.open.token = options->token ? options->token : "";
  }
  return guard([&] { *out = new tl_plan{tlio::ReadPlan::open(source, std::move(o)), {}}; });
}

void tl_plan_free(tl_plan* plan) { delete plan; }

int tl_plan_add(tl_plan* plan, const char* name, size_t rank, const uint64_t* starts,
                const uint64_t* stops, int dtype, size_t* item) {
  TL_REQUIRE(plan && name && item && (rank == 0 || (starts && stops)), "tl_plan_add: NULL argument");
  return guard([&] {
    std::vector<tlio::SliceIndex> slice;
    for (size_t d = 0; d < rank; ++d) slice.push_back(tlio::SliceIndex::range(starts[d], stops[d]));
    std::optional<tlio::Dtype> as;
    if (dtype >= 0) {
      if (!valid_dtype(static_cast<tl_dtype>(dtype))) tlio::throw_invalid("tl_plan_add: unknown dtype");
      as = static_cast<tlio::Dtype>(dtype);
    }
    *item = plan->plan.add(name, slice, as);
  });
}

int tl_plan_item(const tl_plan* plan, size_t item, tl_plan_item_info* out) {
  TL_REQUIRE(plan && out, "tl_plan_item: NULL argument");
  TL_REQUIRE(item < plan->plan.items().size(), "tl_plan_item: no such item");
  const tlio::PlanItem& i = plan->plan.items()[item];
  out->rank = i.shape.size();
  out->shape = i.shape.data();
  out->dtype = static_cast<tl_dtype>(i.dtype);
  out->byte_size = i.byte_size;
  return TL_OK;
}

int tl_plan_set_destination(tl_plan* plan, size_t item, void* dst, size_t size) {
  TL_REQUIRE(plan && (dst || size == 0), "tl_plan_set_destination: NULL argument");
  return guard([&] { plan->plan.set_destination(item, {static_cast<std::byte*>(dst), size}); });
}

int tl_plan_reads(tl_plan* plan, size_t* count, uint64_t* wanted_bytes) {
  TL_REQUIRE(plan && count, "tl_plan_reads: NULL argument");
  return guard([&] {
    plan->reads = plan->plan.reads();
    *count = plan->reads.size();
    if (wanted_bytes) *wanted_bytes = plan->plan.wanted_bytes();
  });
}

int tl_plan_read_at(const tl_plan* plan, size_t index, size_t* file, uint64_t* offset, uint64_t* length) {
  TL_REQUIRE(plan && file && offset && length, "tl_plan_read_at: NULL argument");
  TL_REQUIRE(index < plan->reads.size(), "tl_plan_read_at: no such read (call tl_plan_reads first)");
  const tlio::PlannedRead& r = plan->reads[index];
  *file = r.file;
  *offset = r.offset;
  *length = r.length;
  return TL_OK;
}

int tl_plan_clear(tl_plan* plan) {
  TL_REQUIRE(plan, "tl_plan_clear: NULL argument");
  plan->plan.clear();
  plan->reads.clear();
  return TL_OK;
}

int tl_plan_execute(tl_plan* plan) {
  TL_REQUIRE(plan, "tl_plan_execute: NULL argument");
  return guard([&] { plan->plan.execute(); });
}

int tl_plan_deliver(tl_plan* plan, size_t file, uint64_t offset, const void* data, size_t size) {
  TL_REQUIRE(plan && (data || size == 0), "tl_plan_deliver: NULL argument");
  return guard([&] { plan->plan.deliver(file, offset, {static_cast<const std::byte*>(data), size}); });
}

int tl_plan_finish(tl_plan* plan) {
  TL_REQUIRE(plan, "tl_plan_finish: NULL argument");
  return guard([&] { plan->plan.finish(); });
}

}  // extern "C"
