// GGUF v2/v3 little-endian parser: header, metadata records (as JSON), tensor infos; bounds-checked everywhere.
#include "model/loaders/gguf.h"

#include <bit>
#include <cstring>
#include <limits>
#include <new>

namespace cai {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr size_t kMaxDims = 4;

enum GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
  kNumValueTypes = 13,
};

// Smallest encoding of one value of each type (strings: the u64 length alone); used to reject absurd counts.
size_t min_value_bytes(uint32_t type) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool: return 1;
    case kU16:
    case kI16: return 2;
    case kU32:
    case kI32:
    case kF32: return 4;
    case kString: return 8;
    case kArray: return 12;
    default: return 8;  // u64, i64, f64
  }
}

}  // namespace

// Reads little-endian fields from [data, data + size); every read is checked against the end.
class GgufCursor {
 public:
  GgufCursor(const uint8_t* data, size_t size, const std::string& source) : data_(data), size_(size), source_(source) {}

  const std::string& source() const { return source_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  Status need(size_t n, std::string_view what) const {
    if (n > remaining())
      return corrupt("{}: truncated: {} needs {} bytes at offset {} but only {} remain", source_, what, n, pos_,
                     remaining());
    return {};
  }

  template <class T>
  Status read(T* out, std::string_view what) {
    CAI_TRY(need(sizeof(T), what));
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return {};
  }

  Status read_string(std::string* out, std::string_view what) {
    uint64_t len = 0;
    CAI_TRY(read(&len, what));
    if (len > remaining())
      return corrupt("{}: {} at offset {} claims {} bytes but only {} remain", source_, what, pos_ - 8, len,
                     remaining());
    out->assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return {};
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& source_;
};

namespace {

// One scalar of `type` (not an array) as a JSON value.
Status read_scalar(GgufCursor& cur, uint32_t type, const std::string& key, nlohmann::json* out) {
  auto num = [&](auto v) -> Status {
    CAI_TRY(cur.read(&v, key));
    *out = v;
    return {};
  };
  switch (type) {
    case kU8: return num(uint8_t{});
    case kI8: return num(int8_t{});
    case kU16: return num(uint16_t{});
    case kI16: return num(int16_t{});
    case kU32: return num(uint32_t{});
    case kI32: return num(int32_t{});
    case kU64: return num(uint64_t{});
    case kI64: return num(int64_t{});
    case kF64: return num(double{});
    case kF32: {
      float f = 0;
      CAI_TRY(cur.read(&f, key));
      *out = static_cast<double>(f);
      return {};
    }
    case kBool: {
      uint8_t b = 0;
      CAI_TRY(cur.read(&b, key));
      if (b > 1) return corrupt("{}: key '{}': bool value {} is neither 0 nor 1", cur.source(), key, b);
      *out = b == 1;
      return {};
    }
    case kString: {
      std::string s;
      CAI_TRY(cur.read_string(&s, key));
      *out = std::move(s);  // kept byte for byte, even if it is not valid UTF-8
      return {};
    }
    default: return corrupt("{}: key '{}': unknown value type {}", cur.source(), key, type);
  }
}

Status read_array(GgufCursor& cur, const std::string& key, nlohmann::json* out) {
  uint32_t elem_type = 0;
  uint64_t count = 0;
  CAI_TRY(cur.read(&elem_type, key));
  CAI_TRY(cur.read(&count, key));
  if (elem_type == kArray) return corrupt("{}: key '{}': arrays of arrays are not supported", cur.source(), key);
  if (elem_type >= kNumValueTypes)
    return corrupt("{}: key '{}': unknown array element type {}", cur.source(), key, elem_type);
  if (count > cur.remaining() / min_value_bytes(elem_type))
    return corrupt("{}: key '{}': array of {} elements cannot fit in the {} bytes left", cur.source(), key, count,
                   cur.remaining());
  nlohmann::json::array_t arr;
  arr.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    nlohmann::json v;
    CAI_TRY(read_scalar(cur, elem_type, key, &v));
    arr.push_back(std::move(v));
  }
  *out = std::move(arr);
  return {};
}

// Multiplies into *acc, failing on overflow of int64.
bool mul_checked(int64_t* acc, int64_t v) {
  int64_t r = 0;
  if (__builtin_mul_overflow(*acc, v, &r)) return false;
  *acc = r;
  return true;
}

}  // namespace

TensorView GgufTensorInfo::view() const {
  TensorView v;
  v.data = const_cast<uint8_t*>(data);
  v.dtype = dtype;
  v.n_dims = static_cast<int>(ne.size());
  for (size_t i = 0; i < ne.size(); ++i) v.shape[i] = ne[ne.size() - 1 - i];
  return v;
}

Result<std::unique_ptr<GgufFile>> GgufFile::open_one(const std::string& path) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::open(path));
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->source_name_ = path;
  file->file_ = std::move(mapped);
  CAI_TRY(file->parse_all(file->file_->data(), file->file_->size()));
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, open_one(path));
  CAI_TRY(file->attach_split_parts());
  return file;
}

std::vector<const MappedFile*> GgufFile::mapped_files() const {
  std::vector<const MappedFile*> out;
  if (file_) out.push_back(file_.get());
  for (const auto& part : parts_) out.push_back(part->file_.get());
  return out;
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(const uint8_t* data, size_t size, std::string source_name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->source_name_ = std::move(source_name);
  CAI_TRY(file->parse_all(data, size));
  return file;
}

const GgufTensorInfo* GgufFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::parse_header(GgufCursor& cur, uint64_t* n_tensors, uint64_t* n_kv) {
  uint32_t magic = 0;
  CAI_TRY(cur.read(&magic, "magic"));
  if (magic != kMagic) return corrupt("{}: not a GGUF file (bad magic {:#010x})", source_name_, magic);
  CAI_TRY(cur.read(&version_, "version"));
  if ((version_ & 0xFFFF) == 0)
    return unsupported("{}: version field {:#010x} looks byte-swapped (big-endian GGUF is not supported)", source_name_,
                       version_);
  if (version_ == 1) return unsupported("{}: GGUF v1 is not supported (re-convert to v2 or v3)", source_name_);
  if (version_ != 2 && version_ != 3) return unsupported("{}: unknown GGUF version {}", source_name_, version_);
  CAI_TRY(cur.read(n_tensors, "tensor count"));
  CAI_TRY(cur.read(n_kv, "metadata count"));
  // A metadata record is at least 13 bytes (key length, value type, 1-byte value); a tensor info at least 24.
  if (*n_kv > cur.remaining() / 13)
    return corrupt("{}: metadata count {} cannot fit in a {}-byte file", source_name_, *n_kv, cur.remaining() + 24);
  if (*n_tensors > cur.remaining() / 24)
    return corrupt("{}: tensor count {} cannot fit in a {}-byte file", source_name_, *n_tensors, cur.remaining() + 24);
  return {};
}

Status GgufFile::parse_metadata(GgufCursor& cur, uint64_t n_kv) {
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    uint32_t type = 0;
    CAI_TRY(cur.read_string(&key, "metadata key"));
    CAI_TRY(cur.read(&type, "metadata value type"));
    if (metadata_.contains(key)) return corrupt("{}: duplicate metadata key '{}'", source_name_, key);
    nlohmann::json value;
    try {  // counts are bounded by the file size, but a huge file can still claim more memory than we have
      CAI_TRY(type == kArray ? read_array(cur, key, &value) : read_scalar(cur, type, key, &value));
    } catch (const std::bad_alloc&) {
      return out_of_memory("{}: no memory for the value of metadata key '{}'", source_name_, key);
    }
    metadata_[key] = std::move(value);
  }
  auto it = metadata_.find("general.alignment");
  if (it != metadata_.end()) {
    // Writers use u32; accept any unsigned width that holds a power of two up to 2^31. (No dump(): strings in
    // GGUF may be invalid UTF-8, which dump() throws on.)
    if (!it->is_number_unsigned())
      return corrupt("{}: general.alignment must be a power-of-two u32, got a {}", source_name_, it->type_name());
    if (it->get<uint64_t>() > 0xFFFFFFFFu || !std::has_single_bit(it->get<uint64_t>()))
      return corrupt("{}: general.alignment must be a power-of-two u32, got {}", source_name_, it->get<uint64_t>());
    alignment_ = static_cast<size_t>(it->get<uint64_t>());
  }
  return {};
}

Status GgufFile::parse_tensor_info(GgufCursor& cur, GgufTensorInfo* t) {
  CAI_TRY(cur.read_string(&t->name, "tensor name"));
  uint32_t n_dims = 0;
  CAI_TRY(cur.read(&n_dims, "tensor dimension count"));
  if (n_dims > kMaxDims)
    return corrupt("{}: tensor '{}' has {} dimensions (at most {})", source_name_, t->name, n_dims, kMaxDims);
  t->ne.resize(n_dims);
  int64_t n_rest = 1;  // product of ne[1..]
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t v = 0;
    CAI_TRY(cur.read(&v, "tensor dimension"));
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return corrupt("{}: tensor '{}' dimension {} is {}", source_name_, t->name, d, v);
    t->ne[d] = static_cast<int64_t>(v);
    if (d > 0 && !mul_checked(&n_rest, t->ne[d]))
      return corrupt("{}: tensor '{}' element count overflows", source_name_, t->name);
  }
  uint32_t type_id = 0;
  CAI_TRY(cur.read(&type_id, "tensor type"));
  std::optional<DType> dtype = dtype_from_ggml(type_id);
  if (!dtype)
    return unsupported("{}: tensor '{}' has unknown or unsupported ggml type id {}", source_name_, t->name, type_id);
  t->dtype = *dtype;
  CAI_TRY(cur.read(&t->offset, "tensor offset"));
  if (t->offset % alignment_ != 0)
    return corrupt("{}: tensor '{}' offset {} is not a multiple of the alignment {}", source_name_, t->name, t->offset,
                   alignment_);
  const DTypeInfo& info = dtype_info(t->dtype);
  const int64_t ne0 = n_dims == 0 ? 1 : t->ne[0];
  if (ne0 % info.block_elems != 0)
    return corrupt("{}: tensor '{}' row of {} elements is not a multiple of the {} block size {}", source_name_,
                   t->name, ne0, info.name, info.block_elems);
  int64_t n_bytes = ne0 / info.block_elems;
  if (!mul_checked(&n_bytes, info.block_bytes) || !mul_checked(&n_bytes, n_rest))
    return corrupt("{}: tensor '{}' byte size overflows", source_name_, t->name);
  t->n_bytes = static_cast<size_t>(n_bytes);
  return {};
}

Status GgufFile::parse_all(const uint8_t* data, size_t size) {
  GgufCursor cur(data, size, source_name_);
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  CAI_TRY(parse_header(cur, &n_tensors, &n_kv));
  CAI_TRY(parse_metadata(cur, n_kv));
  tensors_.resize(static_cast<size_t>(n_tensors));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    CAI_TRY(parse_tensor_info(cur, &tensors_[i]));
    if (!index_.emplace(tensors_[i].name, i).second)
      return corrupt("{}: duplicate tensor name '{}'", source_name_, tensors_[i].name);
  }
  if (tensors_.empty()) return {};  // vocab-only files end after the metadata, with no padding
  const size_t data_start = (cur.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (data_start > size)
    return corrupt("{}: truncated: data section should start at offset {} but the file has {} bytes", source_name_,
                   data_start, size);
  const size_t data_size = size - data_start;
  for (GgufTensorInfo& t : tensors_) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset)
      return corrupt("{}: tensor '{}' ({} bytes at data offset {}) runs past the end of the file ({} data bytes)",
                     source_name_, t.name, t.n_bytes, t.offset, data_size);
    t.data = data + data_start + t.offset;
  }
  data_offset_ = data_start;
  return {};
}

}  // namespace cai
