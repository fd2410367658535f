// safetensors writer (docs/design/formats.md#safetensors): u64 header length, JSON header padded to 8 with spaces,
// packed data.
#include "writers/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <optional>
#include <string_view>

namespace cai {
namespace {

std::optional<std::string_view> safetensors_dtype(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kF8_E4M3: return "F8_E4M3";
    case DType::kI32: return "I32";
    case DType::kI8: return "I8";
    default: return std::nullopt;
  }
}

}  // namespace

Status SafetensorsWriter::add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, TensorFill fill) {
  if (!safetensors_dtype(dtype)) {
    return unsupported("tensor '{}': dtype {} cannot be stored in safetensors", name, dtype_name(dtype));
  }
  if (name == "__metadata__") return invalid_argument("'__metadata__' is reserved in safetensors");
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return invalid_argument("tensor '{}' added twice", name);
  }
  CAI_ASSIGN_OR_RETURN(PendingTensor t, make_pending_tensor(std::move(name), dtype, std::move(shape), std::move(fill)));
  tensors_.push_back(std::move(t));
  return Status::ok_status();
}

Status SafetensorsWriter::add_tensor(std::string name, DType dtype, std::vector<int64_t> shape,
                                     std::vector<uint8_t> bytes) {
  return add_tensor(std::move(name), dtype, std::move(shape), fill_from_bytes(std::move(bytes)));
}

Status SafetensorsWriter::write_file(const std::string& path, size_t begin, size_t end) const {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (size_t i = begin; i < end; ++i) {
    const PendingTensor& t = tensors_[i];
    header[t.name] = {
        {"dtype", *safetensors_dtype(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.n_bytes}}};
    offset += t.n_bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument("safetensors header for '{}' cannot be encoded: {}", path, e.what());
  }
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  const uint64_t n_header = text.size();

  CAI_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(path));
  CAI_TRY(out.write(&n_header, sizeof n_header));
  CAI_TRY(out.write(text.data(), text.size()));
  std::vector<uint8_t> scratch;
  for (size_t i = begin; i < end; ++i) CAI_TRY(out.write_tensor(tensors_[i], scratch));
  return out.close();
}

Status SafetensorsWriter::write(const std::string& path) const { return write_file(path, 0, tensors_.size()); }

Result<std::vector<std::string>> SafetensorsWriter::write_sharded(const std::string& dir,
                                                                  uint64_t max_shard_bytes) const {
  if (max_shard_bytes == 0) return invalid_argument("shard size must be positive");
  // Greedy split in the order added: [starts[k], starts[k+1]) is shard k.
  std::vector<size_t> starts;
  uint64_t in_shard = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (starts.empty() || (in_shard > 0 && in_shard + tensors_[i].n_bytes > max_shard_bytes)) {
      starts.push_back(i);
      in_shard = 0;
    }
    in_shard += tensors_[i].n_bytes;
  }
  if (starts.empty()) starts.push_back(0);
  starts.push_back(tensors_.size());

  const size_t n_shards = starts.size() - 1;
  std::vector<std::string> names;
  nlohmann::json weight_map = nlohmann::json::object();
  uint64_t total = 0;
  for (size_t k = 0; k < n_shards; ++k) {
    names.push_back(fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, n_shards));
    CAI_TRY(write_file(dir + "/" + names.back(), starts[k], starts[k + 1]));
    for (size_t i = starts[k]; i < starts[k + 1]; ++i) {
      weight_map[tensors_[i].name] = names.back();
      total += tensors_[i].n_bytes;
    }
  }
  const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  const std::string text = index.dump(2) + "\n";
  CAI_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(dir + "/model.safetensors.index.json"));
  CAI_TRY(out.write(text.data(), text.size()));
  CAI_TRY(out.close());
  return names;
}

}  // namespace cai
