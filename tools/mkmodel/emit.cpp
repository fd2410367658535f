// GGUF and HF emitters: rows generated and encoded in parallel (FP8 in 128-row blocks), one tensor in memory at a time.
#include "emit.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <vector>

#include "core/quant.h"
#include "core/weight_row.h"
#include "writers/safetensors_writer.h"

namespace cai::mkmodel {
namespace {

// Runs fn over [0, n) in chunks of at least `grain` on the pool (inline without one); the first error wins.
Status parallel_status(ThreadPool* pool, int64_t n, int64_t grain, const std::function<Status(int64_t, int64_t)>& fn) {
  if (!pool) return fn(0, n);
  std::mutex mu;
  Status first_error;
  pool->parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    Status st = fn(begin, end);
    std::lock_guard<std::mutex> lock(mu);
    if (!st.ok() && first_error.ok()) first_error = std::move(st);
  });
  return first_error;
}

int64_t n_rows_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

// A fill that builds each of the tensor's rows with make_row and encodes it as dtype, rows spread over the pool.
TensorFill encoded_rows(RowMaker make_row, DType dtype, std::vector<int64_t> shape, ThreadPool* pool) {
  return [make_row = std::move(make_row), dtype, shape = std::move(shape), pool](uint8_t* dst, size_t) -> Status {
    const int64_t cols = shape.back();
    const size_t rb = row_bytes(dtype, cols);
    return parallel_status(pool, n_rows_of(shape), std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)),
                           [&](int64_t begin, int64_t end) -> Status {
                             std::vector<float> row(static_cast<size_t>(cols));
                             for (int64_t r = begin; r < end; ++r) {
                               make_row(r, row.data());
                               CAI_TRY(quantize_row(dtype, row.data(), dst + static_cast<size_t>(r) * rb, cols));
                             }
                             return Status::ok_status();
                           });
  };
}

// DeepSeek FP8 (docs/design/formats.md#fp8-e4m3-and-deepseek-block-scales): each 128×128 block of W [rows, cols] is
// stored as e4m3(w / s) with s = amax / 448. The weight's fill records s per block; the `_scale_inv` fill, added right
// after it (writers fill in order), copies them out.
struct Fp8Scales {
  std::vector<float> scale_inv;  // [ceil(rows/128), ceil(cols/128)]
  bool filled = false;
};

int64_t n_scale_blocks(int64_t n) { return (n + kFp8ScaleBlock - 1) / kFp8ScaleBlock; }

TensorFill fp8_block_rows(RowMaker make_row, int64_t rows, int64_t cols, std::shared_ptr<Fp8Scales> scales,
                          ThreadPool* pool) {
  return [make_row = std::move(make_row), rows, cols, scales, pool](uint8_t* dst, size_t) -> Status {
    const int64_t n_cb = n_scale_blocks(cols);
    scales->scale_inv.assign(static_cast<size_t>(n_scale_blocks(rows) * n_cb), 0.0f);
    CAI_TRY(parallel_status(pool, n_scale_blocks(rows), 1, [&](int64_t begin, int64_t end) -> Status {
      std::vector<float> block;
      for (int64_t rb = begin; rb < end; ++rb) {
        const int64_t r0 = rb * kFp8ScaleBlock, nr = std::min(kFp8ScaleBlock, rows - r0);
        block.resize(static_cast<size_t>(nr * cols));
        for (int64_t i = 0; i < nr; ++i) make_row(r0 + i, block.data() + i * cols);
        for (int64_t cb = 0; cb < n_cb; ++cb) {
          const int64_t c0 = cb * kFp8ScaleBlock, c1 = std::min(cols, c0 + kFp8ScaleBlock);
          float amax = 0.0f;
          for (int64_t i = 0; i < nr; ++i)
            for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(block[i * cols + c]));
          const float s = amax > 0.0f ? amax / 448.0f : 1.0f;
          scales->scale_inv[rb * n_cb + cb] = s;
          for (int64_t i = 0; i < nr; ++i)
            for (int64_t c = c0; c < c1; ++c) block[i * cols + c] /= s;
        }
        CAI_TRY(quantize_row(DType::kF8_E4M3, block.data(), dst + r0 * cols, nr * cols));
      }
      return Status::ok_status();
    }));
    scales->filled = true;
    return Status::ok_status();
  };
}

TensorFill fp8_scale_fill(std::shared_ptr<Fp8Scales> scales) {
  return [scales](uint8_t* dst, size_t n_bytes) -> Status {
    if (!scales->filled || n_bytes != scales->scale_inv.size() * sizeof(float)) {
      return internal_error("block scales requested before their FP8 weight was written");
    }
    std::memcpy(dst, scales->scale_inv.data(), n_bytes);
    return Status::ok_status();
  };
}

// The safetensors type of a weight of `role` when `requested` is asked for.
DType hf_tensor_dtype(HfRole role, DType requested) {
  if (role == HfRole::kF32) return DType::kF32;
  if (requested == DType::kF8_E4M3) return role == HfRole::kProjection ? DType::kF8_E4M3 : DType::kBF16;
  return requested;
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

Result<EmitStats> write_gguf_file(const std::vector<GgufTensorSpec>& tensors,
                                  const std::function<void(GgufWriter&)>& metadata, const EmitOptions& o,
                                  const std::string& path) {
  if (gguf_file_type(o.dtype) == 0 && o.dtype != DType::kF32) {
    return unsupported("GGUF models of type {} are not supported", dtype_name(o.dtype));
  }
  GgufWriter w;
  w.set_u32("general.alignment", 32);
  w.set_string("general.name", o.name);
  w.set_u32("general.file_type", gguf_file_type(o.dtype));
  metadata(w);
  EmitStats stats;
  for (const GgufTensorSpec& t : tensors) {
    const DType dt = gguf_tensor_dtype(t.role, o.dtype, t.shape.back());
    CAI_TRY(w.add_tensor(t.name, dt, t.shape, encoded_rows(t.make_row, dt, t.shape, o.pool)));
    stats.n_bytes += row_bytes(dt, t.shape.back()) * static_cast<uint64_t>(n_rows_of(t.shape));
    ++stats.n_tensors;
  }
  CAI_TRY(w.write(path));
  return stats;
}

Result<EmitStats> write_gguf(const ModelSpec& m, const SyntheticVocab& v, const EmitOptions& o,
                             const std::string& path) {
  return write_gguf_file(
      m.gguf_tensors,
      [&](GgufWriter& w) {
        m.gguf_metadata(w);
        add_gguf_tokenizer(v, m.tokenizer_pre, m.add_bos, w);
      },
      o, path);
}

Result<EmitStats> write_hf(const ModelSpec& m, const SyntheticVocab& v, const EmitOptions& o, const std::string& dir) {
  const bool fp8 = o.dtype == DType::kF8_E4M3;
  if (o.dtype != DType::kF32 && o.dtype != DType::kF16 && o.dtype != DType::kBF16 && !fp8) {
    return unsupported("HF checkpoints are written as f32, f16, bf16 or fp8, not {}", dtype_name(o.dtype));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("cannot create directory '{}': {}", dir, ec.message());

  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  EmitStats stats;
  for (const WeightSpec& ws : m.weights) {
    RowMaker make_row = [values = WeightValues(ws, m.seed)](int64_t r, float* dst) { values.row(r, dst); };
    const DType dt = hf_tensor_dtype(ws.hf_role, o.dtype);
    const int64_t n_rows = n_rows_of(ws.shape), cols = ws.shape.back();
    if (dt == DType::kF8_E4M3) {
      auto scales = std::make_shared<Fp8Scales>();
      const std::vector<int64_t> scale_shape = {n_scale_blocks(n_rows), n_scale_blocks(cols)};
      CAI_TRY(w.add_tensor(ws.name, dt, ws.shape, fp8_block_rows(std::move(make_row), n_rows, cols, scales, o.pool)));
      CAI_TRY(w.add_tensor(ws.name + "_scale_inv", DType::kF32, scale_shape, fp8_scale_fill(scales)));
      stats.n_bytes += static_cast<uint64_t>(scale_shape[0] * scale_shape[1]) * sizeof(float);
      ++stats.n_tensors;
    } else {
      CAI_TRY(w.add_tensor(ws.name, dt, ws.shape, encoded_rows(std::move(make_row), dt, ws.shape, o.pool)));
    }
    stats.n_bytes += row_bytes(dt, cols) * static_cast<uint64_t>(n_rows);
    ++stats.n_tensors;
  }
  if (o.max_shard_bytes > 0) {
    CAI_TRY(w.write_sharded(dir, o.max_shard_bytes).status());
  } else {
    CAI_TRY(w.write(dir + "/model.safetensors"));
  }

  nlohmann::json config = m.hf_config;
  config["torch_dtype"] = o.dtype == DType::kF32 ? "float32" : o.dtype == DType::kF16 ? "float16" : "bfloat16";
  if (fp8) {
    config["quantization_config"] = {{"activation_scheme", "dynamic"},
                                     {"fmt", "e4m3"},
                                     {"quant_method", "fp8"},
                                     {"weight_block_size", {kFp8ScaleBlock, kFp8ScaleBlock}}};
  }
  config["bos_token_id"] = v.bos_id;
  config["eos_token_id"] = v.eos_id;
  CAI_TRY(write_text(dir + "/config.json", config.dump(2) + "\n"));
  CAI_TRY(write_text(dir + "/tokenizer.json", hf_tokenizer_json(v, m.tokenizer_pre).dump(2) + "\n"));
  CAI_TRY(write_text(dir + "/tokenizer_config.json", hf_tokenizer_config(v, m.add_bos).dump(2) + "\n"));
  return stats;
}

}  // namespace cai::mkmodel
