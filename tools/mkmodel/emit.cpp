// GGUF and HF emitters for a ModelSpec: rows generated and encoded in parallel, one tensor in memory at a time.
#include "emit.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "core/quant.h"
#include "model/loaders/safetensors_writer.h"

namespace cai::mkmodel {
namespace {

// A fill that builds each of the tensor's rows with make_row and encodes it as dtype, rows spread over the pool.
TensorFill encoded_rows(RowMaker make_row, DType dtype, std::vector<int64_t> shape, ThreadPool* pool) {
  return [make_row = std::move(make_row), dtype, shape = std::move(shape), pool](uint8_t* dst, size_t) -> Status {
    const int64_t cols = shape.back();
    int64_t n_rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) n_rows *= shape[i];
    const size_t rb = row_bytes(dtype, cols);
    std::mutex mu;
    Status first_error;
    auto run = [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = begin; r < end; ++r) {
        make_row(r, row.data());
        Status st = quantize_row(dtype, row.data(), dst + static_cast<size_t>(r) * rb, cols);
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.ok()) first_error = std::move(st);
          return;
        }
      }
    };
    if (pool) {
      pool->parallel_for(n_rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)), run);
    } else {
      run(0, n_rows);
    }
    return first_error;
  };
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return io_error("cannot write '{}': {}", path, std::strerror(errno));
  return Status::ok_status();
}

bool is_4_or_5_bit(DType t) { return t == DType::kQ4_0 || t == DType::kQ4_K || t == DType::kQ5_K; }

}  // namespace

DType gguf_tensor_dtype(GgufRole role, DType requested, int64_t cols) {
  if (role == GgufRole::kF32) return DType::kF32;
  DType t = requested;
  if (role == GgufRole::kOutput && is_4_or_5_bit(requested)) t = DType::kQ6_K;
  // Like llama.cpp: a row that does not hold whole blocks of the wanted type takes a type whose blocks fit.
  for (DType fallback : {DType::kQ8_0, DType::kF16}) {
    if (cols % dtype_info(t).block_elems == 0) break;
    t = fallback;
  }
  return t;
}

uint32_t gguf_file_type(DType requested) {
  switch (requested) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ8_0: return 7;
    case DType::kQ4_K: return 15;
    case DType::kQ5_K: return 17;
    case DType::kQ6_K: return 18;
    case DType::kBF16: return 32;
    default: return 0;
  }
}

Result<EmitStats> write_gguf(const ModelSpec& m, const SyntheticVocab& v, const EmitOptions& o,
                             const std::string& path) {
  if (gguf_file_type(o.dtype) == 0 && o.dtype != DType::kF32) {
    return unsupported("GGUF models of type {} are not supported", dtype_name(o.dtype));
  }
  GgufWriter w;
  w.set_u32("general.alignment", 32);
  w.set_string("general.name", o.name);
  w.set_u32("general.file_type", gguf_file_type(o.dtype));
  m.gguf_metadata(w);
  add_gguf_tokenizer(v, m.tokenizer_pre, m.add_bos, w);
  EmitStats stats;
  for (const GgufTensorSpec& t : m.gguf_tensors) {
    const DType dt = gguf_tensor_dtype(t.role, o.dtype, t.shape.back());
    CAI_TRY(w.add_tensor(t.name, dt, t.shape, encoded_rows(t.make_row, dt, t.shape, o.pool)));
    int64_t n = 1;
    for (size_t i = 0; i + 1 < t.shape.size(); ++i) n *= t.shape[i];
    stats.n_bytes += row_bytes(dt, t.shape.back()) * static_cast<uint64_t>(n);
    ++stats.n_tensors;
  }
  CAI_TRY(w.write(path));
  return stats;
}

Result<EmitStats> write_hf(const ModelSpec& m, const SyntheticVocab& v, const EmitOptions& o, const std::string& dir) {
  if (o.dtype != DType::kF32 && o.dtype != DType::kF16 && o.dtype != DType::kBF16) {
    return unsupported("HF checkpoints are written as f32, f16 or bf16, not {}", dtype_name(o.dtype));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("cannot create directory '{}': {}", dir, ec.message());

  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  EmitStats stats;
  for (const WeightSpec& ws : m.weights) {
    RowMaker make_row = [values = WeightValues(ws, m.seed)](int64_t r, float* dst) { values.row(r, dst); };
    CAI_TRY(w.add_tensor(ws.name, o.dtype, ws.shape, encoded_rows(std::move(make_row), o.dtype, ws.shape, o.pool)));
    int64_t n = 1;
    for (int64_t d : ws.shape) n *= d;
    stats.n_bytes += static_cast<uint64_t>(n) * static_cast<uint64_t>(dtype_info(o.dtype).block_bytes);
    ++stats.n_tensors;
  }
  if (o.max_shard_bytes > 0) {
    CAI_TRY(w.write_sharded(dir, o.max_shard_bytes).status());
  } else {
    CAI_TRY(w.write(dir + "/model.safetensors"));
  }

  nlohmann::json config = m.hf_config;
  config["torch_dtype"] = o.dtype == DType::kF32 ? "float32" : o.dtype == DType::kF16 ? "float16" : "bfloat16";
  config["bos_token_id"] = v.bos_id;
  config["eos_token_id"] = v.eos_id;
  CAI_TRY(write_text(dir + "/config.json", config.dump(2) + "\n"));
  CAI_TRY(write_text(dir + "/tokenizer.json", hf_tokenizer_json(v, m.tokenizer_pre).dump(2) + "\n"));
  CAI_TRY(write_text(dir + "/tokenizer_config.json", hf_tokenizer_config(v, m.add_bos).dump(2) + "\n"));
  return stats;
}

}  // namespace cai::mkmodel
