// GGUF v3 writer (docs/design/formats.md#gguf): little-endian, packed metadata and tensor infos, aligned tensor data.
#include "writers/gguf_writer.h"

#include <cstring>
#include <unordered_set>

namespace cai {
namespace {

enum GgufType : uint32_t {
  kGgufU32 = 4,
  kGgufI32 = 5,
  kGgufF32 = 6,
  kGgufBool = 7,
  kGgufString = 8,
  kGgufArray = 9,
  kGgufU64 = 10,
};

constexpr uint32_t kGgufVersion = 3;
constexpr size_t kMaxTensorName = 63;

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

std::vector<uint8_t> scalar_record(uint32_t type, const void* v, size_t n) {
  std::vector<uint8_t> r;
  put<uint32_t>(r, type);
  const auto* p = static_cast<const uint8_t*>(v);
  r.insert(r.end(), p, p + n);
  return r;
}

template <class T>
std::vector<uint8_t> array_record(uint32_t elem_type, const std::vector<T>& v) {
  std::vector<uint8_t> r;
  put<uint32_t>(r, kGgufArray);
  put<uint32_t>(r, elem_type);
  put<uint64_t>(r, v.size());
  for (const T& x : v) put<T>(r, x);
  return r;
}

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

void GgufWriter::set_record(std::string_view key, std::vector<uint8_t> record) {
  for (Kv& kv : kvs_) {
    if (kv.key == key) {
      kv.record = std::move(record);
      return;
    }
  }
  kvs_.push_back({std::string(key), std::move(record)});
}

void GgufWriter::set_u32(std::string_view key, uint32_t v) {
  if (key == "general.alignment") {
    alignment_valid_ = v != 0 && (v & (v - 1)) == 0;
    if (alignment_valid_) alignment_ = v;
  }
  set_record(key, scalar_record(kGgufU32, &v, sizeof v));
}
void GgufWriter::set_i32(std::string_view key, int32_t v) { set_record(key, scalar_record(kGgufI32, &v, sizeof v)); }
void GgufWriter::set_u64(std::string_view key, uint64_t v) { set_record(key, scalar_record(kGgufU64, &v, sizeof v)); }
void GgufWriter::set_f32(std::string_view key, float v) { set_record(key, scalar_record(kGgufF32, &v, sizeof v)); }
void GgufWriter::set_bool(std::string_view key, bool v) {
  const uint8_t b = v ? 1 : 0;
  set_record(key, scalar_record(kGgufBool, &b, 1));
}

void GgufWriter::set_string(std::string_view key, std::string_view v) {
  std::vector<uint8_t> r;
  put<uint32_t>(r, kGgufString);
  put_string(r, v);
  set_record(key, std::move(r));
}

void GgufWriter::set_strings(std::string_view key, const std::vector<std::string>& v) {
  std::vector<uint8_t> r;
  put<uint32_t>(r, kGgufArray);
  put<uint32_t>(r, kGgufString);
  put<uint64_t>(r, v.size());
  for (const std::string& s : v) put_string(r, s);
  set_record(key, std::move(r));
}

void GgufWriter::set_f32s(std::string_view key, const std::vector<float>& v) {
  set_record(key, array_record(kGgufF32, v));
}
void GgufWriter::set_i32s(std::string_view key, const std::vector<int32_t>& v) {
  set_record(key, array_record(kGgufI32, v));
}

Status GgufWriter::add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, TensorFill fill) {
  if (name.size() > kMaxTensorName) {
    return invalid_argument("tensor name '{}' is {} bytes; GGUF allows {}", name, name.size(), kMaxTensorName);
  }
  if (dtype_info(dtype).ggml_id < 0) {
    return unsupported("tensor '{}': dtype {} has no GGUF type id", name, dtype_name(dtype));
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return invalid_argument("tensor '{}' added twice", name);
  }
  CAI_ASSIGN_OR_RETURN(PendingTensor t, make_pending_tensor(std::move(name), dtype, std::move(shape), std::move(fill)));
  tensors_.push_back(std::move(t));
  return Status::ok_status();
}

Status GgufWriter::add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
  return add_tensor(std::move(name), dtype, std::move(shape), fill_from_bytes(std::move(bytes)));
}

std::vector<uint8_t> GgufWriter::encode_header() const {
  std::vector<uint8_t> h;
  h.insert(h.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(h, kGgufVersion);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, kvs_.size());
  for (const Kv& kv : kvs_) {
    put_string(h, kv.key);
    h.insert(h.end(), kv.record.begin(), kv.record.end());
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    put_string(h, t.name);
    put<uint32_t>(h, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<uint64_t>(h, static_cast<uint64_t>(*it));
    put<uint32_t>(h, static_cast<uint32_t>(dtype_info(t.dtype).ggml_id));
    put<uint64_t>(h, offset);
    offset += align_up(t.n_bytes, alignment_);
  }
  return h;
}

Status GgufWriter::write(const std::string& path) {
  if (!alignment_valid_) return invalid_argument("general.alignment must be a non-zero power of two");
  const std::vector<uint8_t> header = encode_header();
  CAI_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(path));
  CAI_TRY(out.write(header.data(), header.size()));
  std::vector<uint8_t> scratch;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    // Padding goes before each tensor, so the file ends right after the last one (as llama.cpp's files do).
    CAI_TRY(out.write_zeros(align_up(out.position(), alignment_) - out.position()));
    CAI_TRY(out.write_tensor(tensors_[i], scratch));
  }
  return out.close();
}

}  // namespace cai
