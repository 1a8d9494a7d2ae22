// capi/handles.hpp: what the C API's files (one per public header or group of headers they
// serve) share: the handles behind tlio.h's opaque types, and the boundary every entry point
// crosses (guard: every exception a status code and a thread-local message).
// The function tl_tensor_info shares its name with the struct it fills (as the C API asks).
#pragma once

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

#include "common/checked.hpp"
#include "common/json_text.hpp"
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

namespace tlio::capi {

inline thread_local std::string g_last_error;
inline thread_local const char* g_last_rule = "";  // rule_name() literals: static, NUL-terminated
inline thread_local int g_last_errno = 0;

inline int fail(int code, std::string message, const char* rule = "", int os_errno = 0) {
  g_last_error = std::move(message);
  g_last_rule = rule;
  g_last_errno = os_errno;
  return code;
}

inline int code_of(tlio::ErrorCode c) { return static_cast<int>(c); }

// This thread's tl_set_interrupt_check, asked through an InterruptScope by every call.
struct CInterruptCheck {
  tl_interrupt_fn check = nullptr;
  void* context = nullptr;
};
inline thread_local CInterruptCheck t_interrupt_check;

inline bool ask_c_check(void* c) {
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

inline bool valid_dtype(tl_dtype d) {
  return static_cast<int>(d) >= 0 && static_cast<int>(d) < tlio::kDtypeCount;
}

inline tlio::Dtype to_cpp(tl_dtype d) {
  if (!valid_dtype(d))
    tlio::throw_invalid("not a tl_dtype value: " + std::to_string(static_cast<int>(d)));
  return static_cast<tlio::Dtype>(d);
}

inline void index_metadata(tl_file& h) {
  for (const auto& kv : h.file.metadata()) h.metadata.push_back(&kv);
}

inline tl_file* wrap(tlio::File f) {
  auto h = std::make_unique<tl_file>(std::move(f));
  index_metadata(*h);
  return h.release();
}

inline const tlio::TensorInfo& tensor_at(const tl_file* file, size_t index) {
  if (index >= file->file.tensors().size())
    tlio::throw_invalid("tensor index " + std::to_string(index) + " out of range (" +
                        std::to_string(file->file.tensors().size()) + " tensors)");
  return file->file.tensors()[index];
}

#define TL_REQUIRE(cond, what)                 \
  do {                                         \
    if (!(cond)) return fail(TL_EINVAL, what); \
  } while (0)

// The C options as OpenOptions: TL_OK, or TL_EINVAL (the thread's error set) when they are not
// valid (capi/file.cpp).
int open_options(const tl_open_options* c, const char* fn, tlio::OpenOptions& o);

/// The job step tl_job_begin set on this thread (nullptr: none), for the folder rewrites and
/// imports.
const tlio::FolderJob* current_job() noexcept;

}  // namespace tlio::capi
