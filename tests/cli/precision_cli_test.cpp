// The quality of --precision fast: on the real TinyStories-656K (Q8_0 and F16) over 1,022 teacher-forced tokens of our
// own story text, the fast path's next-token choice agrees with the exact path's at ≥ 99 % of positions and the mean
// KL divergence of its distribution from the exact one is < 1e-3 nats. Q8_0 takes 16-bit activations except in the
// MLP's gate and up (docs/perf/2026-12-03-q8_0-gate-up-int8.md has the measured agreement); F16 has no integer kernel
// and must be identical.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace cai {
namespace {

constexpr int kWindow = 511;  // tokens after BOS per evaluated window (the model's context is 512)
constexpr int kWindows = 2;
constexpr int kBos = 1;

std::vector<int> story_ids(const std::string& model, const std::string& dir) {
  const std::string jsonl = dir + "/story.jsonl";
  std::ofstream(jsonl) << nlohmann::json({{"text", test::read_file(test::data_path("text/stories.txt"))}}).dump()
                       << "\n";
  test::CommandResult r = test::run_command(test::binary_path("cai") + " tokenize -m " + model + " --jsonl " + jsonl);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out)["ids"].get<std::vector<int>>();
}

// Logits [n, vocab] of `ids` under one precision.
std::vector<float> logits(const std::string& model, const std::vector<int>& ids, const std::string& precision,
                          const std::string& dir) {
  std::string tokens;
  for (int id : ids) tokens += (tokens.empty() ? "" : ",") + std::to_string(id);
  const std::string out = dir + "/" + precision + ".f32";
  test::CommandResult r = test::run_command(test::binary_path("cai") + " eval -m " + model + " --precision " +
                                            precision + " --tokens " + tokens + " --logits " + out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return test::read_f32(out);
}

struct Agreement {
  int positions = 0, same_top1 = 0;
  double kl_sum = 0;
};

void compare(const std::vector<float>& exact, const std::vector<float>& fast, size_t vocab, Agreement& a) {
  ASSERT_EQ(exact.size(), fast.size());
  for (size_t p = 0; p < exact.size() / vocab; ++p) {
    const float* e = &exact[p * vocab];
    const float* f = &fast[p * vocab];
    size_t top_e = 0, top_f = 0;
    double max_e = e[0], max_f = f[0];
    for (size_t v = 1; v < vocab; ++v) {
      if (e[v] > e[top_e]) top_e = v;
      if (f[v] > f[top_f]) top_f = v;
      max_e = std::max<double>(max_e, e[v]);
      max_f = std::max<double>(max_f, f[v]);
    }
    double z_e = 0, z_f = 0;
    for (size_t v = 0; v < vocab; ++v) z_e += std::exp(e[v] - max_e), z_f += std::exp(f[v] - max_f);
    double kl = 0;
    for (size_t v = 0; v < vocab; ++v) {
      const double lp_e = e[v] - max_e - std::log(z_e), lp_f = f[v] - max_f - std::log(z_f);
      kl += std::exp(lp_e) * (lp_e - lp_f);
    }
    a.positions += 1;
    a.same_top1 += top_e == top_f;
    a.kl_sum += kl;
  }
}

class FastPrecisionQuality : public ::testing::TestWithParam<std::string> {};

TEST_P(FastPrecisionQuality, AgreesWithExactOnTeacherForcedText) {
  const std::string model = test::data_path("models/" + GetParam());
  const std::string dir = test::make_temp_dir("precision");
  const std::vector<int> ids = story_ids(model, dir);
  ASSERT_GE(ids.size(), static_cast<size_t>(kWindow * kWindows));
  Agreement a;
  for (int w = 0; w < kWindows; ++w) {
    std::vector<int> window = {kBos};
    window.insert(window.end(), ids.begin() + w * kWindow, ids.begin() + (w + 1) * kWindow);
    const std::vector<float> exact = logits(model, window, "exact", dir);
    const std::vector<float> fast = logits(model, window, "fast", dir);
    ASSERT_FALSE(exact.empty());
    ASSERT_EQ(exact.size() % window.size(), 0u);
    compare(exact, fast, exact.size() / window.size(), a);
  }
  const double top1 = static_cast<double>(a.same_top1) / a.positions, mean_kl = a.kl_sum / a.positions;
  std::printf("%s: %d positions, top-1 agreement %.4f, mean KL %.3g nats\n", GetParam().c_str(), a.positions, top1,
              mean_kl);
  EXPECT_GE(a.positions, 1000);
  EXPECT_GE(top1, 0.99);
  EXPECT_LT(mean_kl, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(TinyStories, FastPrecisionQuality,
                         ::testing::Values("TinyStories-656K-Q8_0.gguf", "TinyStories-656K.f16.gguf"),
                         [](const auto& info) {
                           return info.param.find("Q8_0") != std::string::npos ? "Q8_0" : "F16";
                         });

}  // namespace
}  // namespace cai
