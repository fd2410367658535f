// safetensors parsing and validation (docs/design/formats.md#safetensors), and HF checkpoint directories (single file
// or index + shards).
#include "model/loaders/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <set>
#include <sstream>

namespace cai {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's cap

struct ElementType {
  std::string_view name;
  int bits;
  std::optional<DType> dtype;
};

constexpr ElementType kElementTypes[] = {
    {"BOOL", 8, std::nullopt},    {"U8", 8, std::nullopt},         {"I8", 8, DType::kI8},
    {"F8_E5M2", 8, std::nullopt}, {"F8_E4M3", 8, DType::kF8_E4M3}, {"F8_E8M0", 8, std::nullopt},
    {"I16", 16, std::nullopt},    {"U16", 16, std::nullopt},       {"F16", 16, DType::kF16},
    {"BF16", 16, DType::kBF16},   {"I32", 32, DType::kI32},        {"U32", 32, std::nullopt},
    {"F32", 32, DType::kF32},     {"F64", 64, std::nullopt},       {"I64", 64, std::nullopt},
    {"U64", 64, std::nullopt},    {"C64", 64, std::nullopt},       {"F4", 4, std::nullopt},
    {"F6_E2M3", 6, std::nullopt}, {"F6_E3M2", 6, std::nullopt},
};

const ElementType* find_element_type(std::string_view name) {
  for (const ElementType& e : kElementTypes)
    if (e.name == name) return &e;
  return nullptr;
}

// A JSON non-negative integer that fits in int64, or nullopt.
std::optional<int64_t> as_count(const json& v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  return std::nullopt;
}

// Parses the header JSON, failing on syntax errors and on a key repeated inside one object.
Result<json> parse_header_json(std::string_view text, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key && duplicate.empty() && !open_objects.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), on_event);
  } catch (const json::exception& e) {
    return corrupt("{}: header is not valid JSON: {}", source, e.what());
  } catch (const std::bad_alloc&) {
    return out_of_memory("{}: no memory to parse a {}-byte header", source, text.size());
  }
  if (!duplicate.empty()) return corrupt("{}: header has duplicate key '{}'", source, duplicate);
  if (!j.is_object()) return corrupt("{}: header is not a JSON object", source);
  return j;
}

Status parse_metadata(const json& v, const std::string& source, std::map<std::string, std::string>* out) {
  if (!v.is_object()) return corrupt("{}: __metadata__ is not an object", source);
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) return corrupt("{}: __metadata__ value of '{}' is not a string", source, key);
    (*out)[key] = value.get<std::string>();
  }
  return {};
}

// Validates one tensor entry against the byte buffer [buffer, buffer + buffer_size) and fills *t.
Status parse_entry(const std::string& source, const std::string& name, const json& v, const uint8_t* buffer,
                   size_t buffer_size, SafetensorsTensor* t) {
  if (!v.is_object()) return corrupt("{}: entry '{}' is not an object", source, name);
  auto dtype_it = v.find("dtype");
  auto shape_it = v.find("shape");
  auto offsets_it = v.find("data_offsets");
  if (dtype_it == v.end() || !dtype_it->is_string())
    return corrupt("{}: tensor '{}' has no string 'dtype'", source, name);
  if (shape_it == v.end() || !shape_it->is_array())
    return corrupt("{}: tensor '{}' has no 'shape' array", source, name);
  if (offsets_it == v.end() || !offsets_it->is_array() || offsets_it->size() != 2)
    return corrupt("{}: tensor '{}' has no 'data_offsets' pair", source, name);
  t->name = name;
  t->dtype_name = dtype_it->get<std::string>();
  const ElementType* et = find_element_type(t->dtype_name);
  if (et == nullptr) return unsupported("{}: tensor '{}' has unknown dtype '{}'", source, name, t->dtype_name);
  t->dtype = et->dtype;
  int64_t n_bits = et->bits;
  for (const json& d : *shape_it) {
    std::optional<int64_t> dim = as_count(d);
    if (!dim) return corrupt("{}: tensor '{}' has a bad dimension {}", source, name, d.dump());
    t->shape.push_back(*dim);
    if (__builtin_mul_overflow(n_bits, *dim, &n_bits)) return corrupt("{}: tensor '{}' size overflows", source, name);
  }
  if (n_bits % 8 != 0) return corrupt("{}: tensor '{}' of {} does not fill whole bytes", source, name, t->dtype_name);
  std::optional<int64_t> begin = as_count((*offsets_it)[0]);
  std::optional<int64_t> end = as_count((*offsets_it)[1]);
  if (!begin || !end || *begin > *end)
    return corrupt("{}: tensor '{}' has bad data_offsets {}", source, name, offsets_it->dump());
  if (static_cast<uint64_t>(*end) > buffer_size)
    return corrupt("{}: tensor '{}' data [{}, {}) runs past the {}-byte buffer", source, name, *begin, *end,
                   buffer_size);
  if (*end - *begin != n_bits / 8)
    return corrupt("{}: tensor '{}' holds {} bytes but {} of shape {} needs {}", source, name, *end - *begin,
                   t->dtype_name, shape_it->dump(), n_bits / 8);
  t->data = buffer + *begin;
  t->n_bytes = static_cast<size_t>(*end - *begin);
  return {};
}

// Tensors must tile the buffer exactly: sorted by offset, each starts where the previous ended, the last ends at the
// end (this is what the reference implementation enforces; it rules out overlaps and holes).
Status check_coverage(std::vector<SafetensorsTensor>& tensors, const uint8_t* buffer, size_t buffer_size,
                      const std::string& source) {
  std::sort(tensors.begin(), tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return a.data != b.data ? a.data < b.data : a.n_bytes < b.n_bytes;
  });
  size_t expected = 0;
  const SafetensorsTensor* prev = nullptr;
  for (const SafetensorsTensor& t : tensors) {
    size_t begin = static_cast<size_t>(t.data - buffer);
    if (begin < expected) return corrupt("{}: tensor '{}' overlaps tensor '{}'", source, t.name, prev->name);
    if (begin > expected) return corrupt("{}: {} unused bytes before tensor '{}'", source, begin - expected, t.name);
    expected = begin + t.n_bytes;
    prev = &t;
  }
  if (expected != buffer_size)
    return corrupt("{}: tensors cover {} bytes but the buffer has {}", source, expected, buffer_size);
  return {};
}

Result<json> read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("{}: cannot open", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    return corrupt("{}: not valid JSON: {}", path, e.what());
  }
}

}  // namespace

Result<TensorView> SafetensorsTensor::view() const {
  if (!dtype) return unsupported("tensor '{}': dtype {} cannot be used as a tensor view", name, dtype_name);
  if (shape.size() > 4) return unsupported("tensor '{}' has {} dimensions (at most 4)", name, shape.size());
  TensorView v;
  v.data = const_cast<uint8_t*>(data);
  v.dtype = *dtype;
  v.n_dims = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), v.shape.begin());
  return v;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::open(path));
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->source_name_ = path;
  file->file_ = std::move(mapped);
  CAI_TRY(file->parse_all(file->file_->data(), file->file_->size()));
  return file;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::parse(const uint8_t* data, size_t size,
                                                                std::string source_name) {
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->source_name_ = std::move(source_name);
  CAI_TRY(file->parse_all(data, size));
  return file;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Status SafetensorsFile::parse_all(const uint8_t* data, size_t size) {
  const std::string& src = source_name_;
  uint64_t n_header = 0;
  if (size < sizeof(n_header)) return corrupt("{}: truncated: {} bytes, no header length", src, size);
  std::memcpy(&n_header, data, sizeof(n_header));
  if (n_header > kMaxHeaderBytes)
    return corrupt("{}: header length {} exceeds the {}-byte limit", src, n_header, kMaxHeaderBytes);
  if (n_header > size - 8)
    return corrupt("{}: truncated: header of {} bytes but only {} follow", src, n_header, size - 8);
  std::string_view header(reinterpret_cast<const char*>(data + 8), static_cast<size_t>(n_header));
  if (header.empty() || header[0] != '{') return corrupt("{}: header does not start with '{{'", src);
  CAI_ASSIGN_OR_RETURN(json j, parse_header_json(header, src));
  const uint8_t* buffer = data + 8 + n_header;
  const size_t buffer_size = size - 8 - static_cast<size_t>(n_header);
  tensors_.reserve(j.size());
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      CAI_TRY(parse_metadata(value, src, &metadata_));
      continue;
    }
    SafetensorsTensor t;
    CAI_TRY(parse_entry(src, key, value, buffer, buffer_size, &t));
    tensors_.push_back(std::move(t));
  }
  CAI_TRY(check_coverage(tensors_, buffer, buffer_size, src));
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  return {};
}

Result<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::unique_ptr<SafetensorsCheckpoint> ckpt(new SafetensorsCheckpoint());
  ckpt->dir_ = dir;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single_path = fs::path(dir) / "model.safetensors";
  std::error_code ec;
  if (fs::exists(index_path, ec)) {
    CAI_TRY(ckpt->load_index(index_path.string()));
  } else if (fs::exists(single_path, ec)) {
    CAI_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::open(single_path.string()));
    CAI_TRY(ckpt->add_shard(std::move(file)));
  } else {
    return not_found("{}: neither model.safetensors nor model.safetensors.index.json is there", dir);
  }
  ckpt->resolve_aliases();
  return ckpt;
}

Status SafetensorsCheckpoint::add_shard(std::unique_ptr<SafetensorsFile> shard) {
  for (const SafetensorsTensor& t : shard->tensors()) {
    auto [it, inserted] = by_name_.emplace(t.name, &t);
    if (!inserted) return corrupt("{}: tensor '{}' is stored in more than one shard", dir_, t.name);
  }
  shards_.push_back(std::move(shard));
  return {};
}

Status SafetensorsCheckpoint::load_index(const std::string& index_path) {
  CAI_ASSIGN_OR_RETURN(json index, read_json_file(index_path));
  auto map_it = index.is_object() ? index.find("weight_map") : index.end();
  if (map_it == index.end() || !map_it->is_object()) return corrupt("{}: no 'weight_map' object", index_path);
  // Open each shard once, in the order first named.
  std::map<std::string, const SafetensorsFile*> opened;
  for (const auto& [tensor, shard_json] : map_it->items()) {
    if (!shard_json.is_string()) return corrupt("{}: weight_map entry '{}' is not a string", index_path, tensor);
    const std::string shard = shard_json.get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      return corrupt("{}: weight_map entry '{}' names a bad shard file '{}'", index_path, tensor, shard);
    if (opened.count(shard)) continue;
    const std::string path = (std::filesystem::path(dir_) / shard).string();
    Result<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(path);
    if (!file.ok()) {
      if (file.status().code() == StatusCode::kNotFound)
        return not_found("{}: shard '{}' (holding '{}') is missing", index_path, shard, tensor);
      return file.status();
    }
    opened[shard] = file.value().get();
    CAI_TRY(add_shard(std::move(file).value()));
  }
  // Every listed tensor must be in the shard the index names.
  for (const auto& [tensor, shard_json] : map_it->items()) {
    const SafetensorsFile* shard = opened[shard_json.get<std::string>()];
    if (shard->find(tensor) == nullptr)
      return corrupt("{}: tensor '{}' is listed in the index but missing from its shard", shard->source_name(), tensor);
  }
  return {};
}

void SafetensorsCheckpoint::resolve_aliases() {
  for (const auto& shard : shards_) {
    for (const auto& [alias, target] : shard->metadata()) {
      if (by_name_.count(alias)) continue;  // a stored tensor wins over metadata
      auto it = by_name_.find(target);
      if (it == by_name_.end()) continue;  // ordinary metadata such as "format": "pt"
      aliases_.emplace(alias, target);
    }
  }
  for (const auto& [alias, target] : aliases_) by_name_.emplace(alias, by_name_.find(target)->second);
}

const SafetensorsTensor* SafetensorsCheckpoint::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& [name, tensor] : by_name_) out.push_back(name);
  return out;
}

}  // namespace cai
