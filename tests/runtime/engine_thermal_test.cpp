// Thermal-aware batching on a real model with a scripted temperature: above the limit the step token budget halves at
// each reading (down to max_batch); within 5 °C under the limit it holds; at limit − 5 °C or cooler it doubles back.
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "scripted_telemetry_device.h"

namespace cai {
namespace {

using test::Collector;
using test::greedy;
using test::ScriptedTelemetryDevice;

LoadedModel load_on(hal::Device& device) {
  Result<LoadedModel> m = load_model(test::data_path("models/TinyStories-656K-Q8_0.gguf"), device);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

TEST(EngineThermal, BudgetHalvesWhileHotAndDoublesBackOnceCool) {
  ScriptedTelemetryDevice device(*test::device_named("cpu"));
  EngineOptions opt;
  opt.max_batch = 4;
  opt.max_tokens_per_step = 64;
  opt.thermal_limit_c = 80;
  auto engine = Engine::create(load_on(device), opt);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  ASSERT_GE(e.ctx_size(), 300);
  Collector c;
  auto id = e.submit(greedy({1, 80, 147, 201, 282, 57}, 280), c.callback());  // long enough for every reading
  ASSERT_TRUE(id.ok());
  int n_read = 0;
  // Supplies the next reading and returns the budget in force once the engine acted on it (it is then blocked on the
  // reading after, eight steps later, so the stats are settled).
  auto budget_after = [&](float celsius) {
    device.wait_for_reads(n_read + 1);
    device.push(celsius);
    ++n_read;
    device.wait_for_reads(n_read + 1);
    return e.stats().token_budget;
  };
  EXPECT_EQ(budget_after(60), 64);  // cool from the start: the full budget
  EXPECT_EQ(budget_after(85), 32);  // at or above 80 °C: halved at every reading
  EXPECT_EQ(budget_after(80), 16);
  EXPECT_EQ(budget_after(91), 8);
  EXPECT_EQ(budget_after(91), 4);  // max_batch is the floor
  EXPECT_EQ(budget_after(95), 4);
  EXPECT_EQ(budget_after(79), 4);  // cooler than the limit but not by 5 °C: held
  EXPECT_EQ(budget_after(75.5f), 4);
  EXPECT_EQ(budget_after(75), 8);  // limit − 5 °C: doubled back at every reading
  EXPECT_EQ(budget_after(70), 16);
  EXPECT_EQ(budget_after(78), 16);  // warming again, still under the limit: held
  EXPECT_EQ(budget_after(60), 32);
  EXPECT_EQ(budget_after(60), 64);
  EXPECT_EQ(budget_after(40), 64);  // never above max_tokens_per_step
  EXPECT_EQ(budget_after(82), 32);  // and hot again
  device.close();
  c.wait();
  EXPECT_EQ(c.last.finish, FinishReason::kLength);
  EXPECT_EQ(c.tokens.size(), 280u);
  e.shutdown();
}

TEST(EngineThermal, NoLimitNeverReadsTheSensor) {
  ScriptedTelemetryDevice device(*test::device_named("cpu"));
  device.close();  // a read would not block, but must not happen
  EngineOptions opt;
  opt.max_tokens_per_step = 64;
  auto engine = Engine::create(load_on(device), opt);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Collector c;
  ASSERT_TRUE((*engine)->submit(greedy({1, 80, 147}, 40), c.callback()).ok());
  c.wait();
  EXPECT_EQ((*engine)->stats().token_budget, 64);
  EXPECT_EQ(device.reads(), 0);
}

}  // namespace
}  // namespace cai
