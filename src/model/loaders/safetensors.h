// safetensors reader: one file (header JSON + byte buffer) and Hugging Face checkpoints (single or sharded + index).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor_view.h"

namespace cai {

struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;      // as written in the file: "F32", "BF16", "F8_E4M3", "I64", ...
  std::optional<DType> dtype;  // nullopt for element types CAI does not compute with (I64, U8, BOOL, F8_E5M2, ...)
  std::vector<int64_t> shape;  // PyTorch order, outermost first; [] = scalar
  // Inside the file's bytes; valid while the file lives. NOT necessarily aligned: safetensors only promises that the
  // buffer starts at a multiple of 8 (by writer convention), so kernels must not assume any alignment of this pointer.
  const uint8_t* data = nullptr;
  size_t n_bytes = 0;

  // The tensor as a host TensorView. Fails for a dtype of nullopt or more than 4 dimensions.
  Result<TensorView> view() const;
};

class SafetensorsFile {
 public:
  // mmap the file and parse it. Errors name the file and what is wrong.
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  // Parse bytes that the caller keeps alive (tests, fuzzing). Never reads outside [data, data + size).
  static Result<std::unique_ptr<SafetensorsFile>> parse(const uint8_t* data, size_t size,
                                                        std::string source_name = "<memory>");

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // in data order
  const SafetensorsTensor* find(std::string_view name) const;
  // The optional "__metadata__" object (string → string), e.g. {"format": "pt"}.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& source_name() const { return source_name_; }
  const MappedFile* mapped() const { return file_.get(); }  // null when parsing caller-owned bytes

 private:
  SafetensorsFile() = default;
  Status parse_all(const uint8_t* data, size_t size);

  std::unique_ptr<MappedFile> file_;
  std::string source_name_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name → position in tensors_
  std::map<std::string, std::string> metadata_;
};

// A Hugging Face model directory: model.safetensors, or model.safetensors.index.json + the shards it names.
class SafetensorsCheckpoint {
 public:
  static Result<std::unique_ptr<SafetensorsCheckpoint>> open_dir(const std::string& dir);

  // Finds a stored tensor or a tied alias recorded in a shard's __metadata__ (torch save_model drops tied copies and
  // writes e.g. "model.embed_tokens.weight": "lm_head.weight"); an alias returns the stored tensor (its own name).
  const SafetensorsTensor* find(std::string_view name) const;
  // Every name find() accepts (stored tensors and aliases), sorted.
  std::vector<std::string> names() const;
  bool is_alias(std::string_view name) const { return aliases_.count(name) != 0; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& shards() const { return shards_; }
  const std::string& dir() const { return dir_; }

 private:
  SafetensorsCheckpoint() = default;
  Status add_shard(std::unique_ptr<SafetensorsFile> shard);
  Status load_index(const std::string& index_path);
  void resolve_aliases();

  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const SafetensorsTensor*, std::less<>> by_name_;  // stored tensors and aliases
  std::map<std::string, std::string, std::less<>> aliases_;               // alias → stored name
};

}  // namespace cai
