// Helpers for the engine tests on a real model (header-only: the test glob builds only *_test.cpp files).
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cai/engine.h"
#include "hal/hal.h"
#include "runtime/device_under_test.h"
#include "test_paths.h"

namespace cai::test {

inline LoadedModel load(const std::string& rel, const std::string& device = "cpu") {
  hal::Device* dev = device_named(device);
  Result<LoadedModel> m = load_model(data_path(rel), *dev);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

// Collects one request's events, per choice; wait() returns when every choice's final event arrived.
struct Collector {
  explicit Collector(int n_choices = 1) : choices(static_cast<size_t>(n_choices)) {}
  struct Choice {
    std::vector<int32_t> tokens;
    std::string text;
    StreamEvent last;
    bool done = false;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Choice> choices;
  int n_done = 0;
  // Choice 0, the only one of an n = 1 request.
  std::vector<int32_t>& tokens = choices[0].tokens;
  std::string& text = choices[0].text;
  StreamEvent& last = choices[0].last;

  EventCallback callback() {
    return [this](const StreamEvent& ev) {
      std::lock_guard<std::mutex> lock(mu);
      ASSERT_LT(static_cast<size_t>(ev.index), choices.size());
      Choice& c = choices[static_cast<size_t>(ev.index)];
      ASSERT_FALSE(c.done) << "an event after choice " << ev.index << " finished";
      c.tokens.insert(c.tokens.end(), ev.tokens.begin(), ev.tokens.end());
      c.text += ev.text;
      if (ev.finish != FinishReason::kNone) {
        c.last = ev;
        c.done = true;
        if (++n_done == static_cast<int>(choices.size())) cv.notify_all();
      }
    };
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(120), [&] { return n_done == static_cast<int>(choices.size()); }));
  }
};

inline GenerationRequest greedy(std::vector<int32_t> prompt, int max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

inline std::vector<int32_t> prompt_for(int i, int len) {
  std::vector<int32_t> p = {1};
  for (int j = 0; j < len; ++j) p.push_back(static_cast<int32_t>((i * 131 + j * 17 + 5) % 2000 + 3));
  return p;
}

inline std::vector<int32_t> run_alone(Engine& e, const GenerationRequest& r) {
  Collector c;
  EXPECT_TRUE(e.submit(r, c.callback()).ok());
  c.wait();
  return c.tokens;
}

}  // namespace cai::test
