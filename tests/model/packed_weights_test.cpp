// WeightStore::get_gemm_weight on the CPU: under --precision fast a Q8_0 projection of the real TinyStories-656K file
// (in the layout for 16-bit activations, or for 8-bit ones where the caller allows them) and a projection of each
// quant-type model with a packed layout is copied into interleaved row groups (the bytes pack_row_groups makes),
// other tensors stay row-major, asking again changes nothing, and the file on disk is never
// written; under exact, or fast with repacking off (--no-repack), nothing is packed. --mlock locks the packed copies,
// not the file's pages they replaced. A loaded model packs its Q8_0 gate and up projections for 8-bit activations, the
// others for 16-bit, and a Q8_0 head beside Q4_0 layers for 8-bit.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hal/cpu/kernels/qdot_groups.h"
#include "hal/hal.h"
#include "model/decoder.h"
#include "model/loaders/gguf.h"
#include "model/model_loader.h"
#include "model/weights.h"
#include "test_paths.h"

namespace cai {
namespace {

// A model file, the type its projections have, and the packed type a projection with that activation grain gets.
struct PackedCase {
  std::string file;
  DType row_major, packed;
  hal::ActivationGrain grain = hal::ActivationGrain::kWeight;
};

class PackedWeights : public ::testing::TestWithParam<PackedCase> {
 protected:
  void TearDown() override { cpu_->set_precision(hal::Precision::kExact); }
  Result<WeightStore> open_store() {
    CAI_ASSIGN_OR_RETURN(auto file, GgufFile::open(path_));
    return WeightStore::from_gguf(std::move(file), *cpu_);
  }
  hal::Device* cpu_ = hal::Registry::global().find_device("cpu").value();
  const std::string path_ = test::data_path(GetParam().file);
};

TEST_P(PackedWeights, FastPrecisionPacksACopyOfGemmWeightsWithoutWritingTheFile) {
  const PackedCase& c = GetParam();
  const std::string before = test::read_file(path_);
  cpu_->set_precision(hal::Precision::kFast);
  auto ws = open_store();
  ASSERT_TRUE(ws.ok()) << ws.status().to_string();
  const std::string name = "blk.0.ffn_up.weight";
  const TensorView w = ws->all().at(name);
  ASSERT_EQ(w.dtype, c.row_major);
  ASSERT_EQ(w.dim(0) % kPackedGroupRows, 0) << w.shape_string();
  std::vector<uint8_t> want(w.n_bytes());
  hal::cpu::pack_row_groups(c.packed, w.as<const uint8_t>(), want.data(), w.dim(0), w.dim(1), nullptr);

  auto packed = ws->get_gemm_weight(name, {w.dim(0), w.dim(1)}, c.grain);
  ASSERT_TRUE(packed.ok()) << packed.status().to_string();
  EXPECT_EQ(packed->dtype, c.packed);
  EXPECT_NE(packed->data, w.data) << "a copy: the mapped file's pages stay read-only";
  EXPECT_EQ(0, std::memcmp(packed->data, want.data(), want.size()));
  EXPECT_EQ(ws->get(name, {w.dim(0), w.dim(1)})->dtype, c.packed) << "get returns the packed view from then on";
  auto again = ws->get_gemm_weight(name, {w.dim(0), w.dim(1)}, c.grain);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(0, std::memcmp(again->data, want.data(), want.size())) << "a second request must not pack twice";

  const TensorView embd = ws->all().at("token_embd.weight");
  EXPECT_EQ(group_rows(embd.dtype), 1) << "only what get_gemm_weight is asked for is packed";
  EXPECT_EQ(test::read_file(path_), before) << "the GGUF file was written";
}

// get_gemm_weight of blk.0.ffn_up returns the file's own bytes.
void expect_row_major(WeightStore& ws, DType row_major) {
  const TensorView w = ws.all().at("blk.0.ffn_up.weight");
  auto v = ws.get_gemm_weight("blk.0.ffn_up.weight", {w.dim(0), w.dim(1)});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->dtype, row_major);
  EXPECT_EQ(v->data, w.data) << "the mapped file's tensor itself";
}

TEST_P(PackedWeights, ExactPrecisionLeavesWeightsRowMajor) {
  auto ws = open_store();
  ASSERT_TRUE(ws.ok()) << ws.status().to_string();
  expect_row_major(*ws, GetParam().row_major);
}

TEST_P(PackedWeights, FastPrecisionWithoutRepackLeavesWeightsRowMajor) {
  cpu_->set_precision(hal::Precision::kFast);
  auto ws = open_store();
  ASSERT_TRUE(ws.ok()) << ws.status().to_string();
  ws->set_repack(false);
  expect_row_major(*ws, GetParam().row_major);
}

INSTANTIATE_TEST_SUITE_P(Files, PackedWeights,
                         ::testing::Values(PackedCase{"models/TinyStories-656K-Q8_0.gguf", DType::kQ8_0,
                                                      DType::kQ8_0_R16},
                                           PackedCase{"models/TinyStories-656K-Q8_0.gguf", DType::kQ8_0,
                                                      DType::kQ8_0_R16_I8, hal::ActivationGrain::k8Bit},
                                           PackedCase{"quants/Q2_K.gguf", DType::kQ2_K, DType::kQ2_K_R16},
                                           PackedCase{"quants/Q3_K.gguf", DType::kQ3_K, DType::kQ3_K_R16},
                                           PackedCase{"quants/Q4_K.gguf", DType::kQ4_K, DType::kQ4_K_R16},
                                           PackedCase{"quants/Q5_K.gguf", DType::kQ5_K, DType::kQ5_K_R16},
                                           PackedCase{"quants/Q6_K.gguf", DType::kQ6_K, DType::kQ6_K_R16},
                                           PackedCase{"quants/IQ4_NL.gguf", DType::kIQ4_NL, DType::kIQ4_NL_R16},
                                           PackedCase{"quants/IQ4_XS.gguf", DType::kIQ4_XS, DType::kIQ4_XS_R16}),
                         [](const auto& info) { return std::string(dtype_name(info.param.packed)); });

// A model loaded under --precision fast asks for 8-bit activations in its MLP's gate and up only: on the real
// TinyStories-656K Q8_0 those are packed as q8_0_r16_i8, every other projection (attention, down, the tied head) as
// q8_0_r16 for 16-bit activations.
TEST(PackedWeightsModel, Q8_0GateAndUpArePackedForInt8ActivationsTheRestForInt16) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  cpu->set_precision(hal::Precision::kFast);
  Result<LoadedModel> lm = load_model(test::data_path("models/TinyStories-656K-Q8_0.gguf"), *cpu);
  cpu->set_precision(hal::Precision::kExact);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  auto* decoder = dynamic_cast<DecoderModel*>(lm->model.get());
  ASSERT_NE(decoder, nullptr);
  int n_int8 = 0, n_int16 = 0;
  for (const auto& [name, w] : decoder->weights().all()) {
    if (group_rows(w.dtype) == 1) continue;
    const bool gate_up = name.find("ffn_gate") != std::string::npos || name.find("ffn_up") != std::string::npos;
    EXPECT_EQ(w.dtype, gate_up ? DType::kQ8_0_R16_I8 : DType::kQ8_0_R16) << name;
    ++(gate_up ? n_int8 : n_int16);
  }
  EXPECT_EQ(n_int8, 2 * 2) << "gate and up of both layers";
  EXPECT_GE(n_int16, 2 * 5) << "q, k, v, o and down of both layers";
}

// A Q8_0 head beside coarser layers takes 8-bit activations (model/decoder.cpp, head_grain): TinyStories-656K converted
// with Q4_0 layers, whose untied output.weight cai-mkmodel writes in Q8_0, packs its head as q8_0_r16_i8 and its
// projections as q4_0_r16 (the Q8_0 file's head stays q8_0_r16: the test above).
TEST(PackedWeightsModel, Q8_0HeadBesideQ4_0LayersIsPackedForInt8Activations) {
  const std::string file = test::make_temp_dir("head-grain") + "/q4_0.gguf";
  const test::CommandResult mk =
      test::run_command(test::binary_path("cai-mkmodel") + " --from " + test::data_path("models/TinyStories-656K-hf") +
                        " --dtype q4_0 -o " + file);
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  cpu->set_precision(hal::Precision::kFast);
  Result<LoadedModel> lm = load_model(file, *cpu);
  cpu->set_precision(hal::Precision::kExact);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  auto* decoder = dynamic_cast<DecoderModel*>(lm->model.get());
  ASSERT_NE(decoder, nullptr);
  const auto& all = decoder->weights().all();
  ASSERT_EQ(all.count("output.weight"), 1u);
  EXPECT_EQ(all.at("output.weight").dtype, DType::kQ8_0_R16_I8);
  for (const char* name : {"blk.0.attn_q.weight", "blk.0.ffn_up.weight", "blk.1.ffn_down.weight"})
    EXPECT_EQ(all.at(name).dtype, DType::kQ4_0_R16) << name;
}

// Locked bytes of this process (the Locked: lines of /proc/self/smaps): in all mappings, and in those of `file`.
struct LockedBytes {
  size_t total = 0, of_file = 0;
};
LockedBytes locked_bytes(const std::string& file) {
  std::ifstream smaps("/proc/self/smaps");
  LockedBytes out;
  std::string line;
  bool in_file = false;
  while (std::getline(smaps, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key.back() != ':') {  // a mapping's header: range, perms, offset, device, inode, path
      std::string perms, offset, device, inode, path;
      fields >> perms >> offset >> device >> inode >> path;
      in_file = path == file;
    } else if (key == "Locked:") {
      size_t kib = 0;
      fields >> kib;
      out.total += kib << 10;
      if (in_file) out.of_file += kib << 10;
    }
  }
  return out;
}

// Locking after packing: the model's weights as it reads them are locked (at least their bytes), and the file's pages
// that packed copies replaced are not (they were dropped; locked first, they could not have been).
TEST(PackedWeightsMlock, LocksThePackedCopiesNotTheFilePagesTheyReplaced) {
  {  // The sanitizers' mlock interceptor returns success and locks nothing: there is nothing to observe then.
    std::vector<uint8_t> probe(1 << 16, 1);
    const size_t before = locked_bytes("").total;
    ASSERT_EQ(mlock(probe.data(), probe.size()), 0);
    const size_t after = locked_bytes("").total;
    munlock(probe.data(), probe.size());
    if (after == before) GTEST_SKIP() << "mlock locks nothing in this build (sanitizer interceptor)";
  }
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  cpu->set_precision(hal::Precision::kFast);
  const std::string path = std::filesystem::canonical(test::data_path("models/TinyStories-656K-Q8_0.gguf")).string();
  LoadOptions o;
  o.mlock = true;
  Result<LoadedModel> lm = load_model(path, *cpu, o);
  cpu->set_precision(hal::Precision::kExact);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  const LockedBytes locked = locked_bytes(path);
  const size_t weights = lm->model->weight_bytes(), file = std::filesystem::file_size(path);
  EXPECT_GE(locked.total, weights);
  EXPECT_LT(locked.of_file, file / 4) << "every projection and the tied embedding are packed: only norms stay mapped";
}

}  // namespace
}  // namespace cai
