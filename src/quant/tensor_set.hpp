// quant/tensor_set.hpp: the tensors of one file or of all shards of a model, as one set, so a
// quantized weight whose parts a sharder put in different files is still found whole.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/json_text.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

class TensorSet {
 public:
  explicit TensorSet(std::vector<const File*> files) : files_(std::move(files)) {}

  /// Every tensor (as a pointer), file by file, each file's in offset order: a view of the files'
  /// tables, nothing copied (a set may hold millions).
  class Tensors {
   public:
    class iterator {
     public:
      iterator(const std::vector<const File*>& files, size_t file) : files_(&files), file_(file) {
        enter();
      }
      const TensorInfo* operator*() const noexcept { return &(*table_)[index_]; }
      iterator& operator++() noexcept {
        if (++index_ == table_->size()) {
          ++file_;
          index_ = 0;
          enter();
        }
        return *this;
      }
      bool operator==(const iterator& o) const noexcept {
        return file_ == o.file_ && index_ == o.index_;
      }

     private:
      // Points table_ at file_'s tensors, skipping files that have none.
      void enter() noexcept {
        for (; file_ < files_->size(); ++file_) {
          table_ = &(*files_)[file_]->tensors();
          if (!table_->empty()) return;
        }
        table_ = nullptr;
      }
      const std::vector<const File*>* files_;
      const std::vector<TensorInfo>* table_ = nullptr;
      size_t file_, index_ = 0;
    };
    explicit Tensors(const std::vector<const File*>& files) : files_(files) {}
    iterator begin() const { return {files_, 0}; }
    iterator end() const { return {files_, files_.size()}; }

   private:
    const std::vector<const File*>& files_;
  };
  Tensors tensors() const noexcept { return Tensors(files_); }
  /// The first file's metadata (shards carry the same).
  const Metadata& metadata() const noexcept { return files_.front()->metadata(); }
  /// The model's quantization_config as JSON text (config.json's member, or a GPTQ folder's
  /// quantize_config.json), "" for a lone file: the Hub's formats take their options from it.
  const std::string& quantization_config() const noexcept { return quantization_config_; }
  void set_quantization_config(std::string json) { quantization_config_ = std::move(json); }

  const TensorInfo* find(std::string_view name) const noexcept {
    for (const File* f : files_)
      if (const TensorInfo* t = f->header().find(name)) return t;
    return nullptr;
  }
  const TensorInfo& at(std::string_view name) const { return file_of(name).header().at(name); }
  TensorView view(std::string_view name) const { return file_of(name).view(name); }
  std::vector<float> f32(std::string_view name) const { return read_f32(file_of(name), name); }

  /// Sort key placing tensors in file order, then offset order.
  std::pair<size_t, uint64_t> position(std::string_view name) const {
    for (size_t i = 0; i < files_.size(); ++i)
      if (const TensorInfo* t = files_[i]->header().find(name)) return {i, t->begin};
    return {files_.size(), 0};
  }

  const File& file_of(std::string_view name) const {
    for (const File* f : files_)
      if (f->header().find(name)) return *f;
    throw Error(ErrorCode::not_found, Rule::none, std::string(name), std::nullopt,
                "no tensor named " + quote_name(name));
  }

 private:
  std::vector<const File*> files_;
  std::string quantization_config_;
};

/// The quantized weights of every scheme in `set`, checked, in file order of their main tensor
/// (find_quantized_weights of quant.hpp for a model's shards).
std::vector<QuantizedWeight> find_quantized_weights(const TensorSet& set);

}  // namespace tlio::detail
