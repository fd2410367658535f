// `cai bench --spec`: what speculative decoding costs and gains on this model and machine.
#pragma once

#include "verbs.h"

namespace cai::cli {

// n token ids spread over the vocabulary: the synthetic prompts and contexts of `cai bench` (bench.cpp).
std::vector<int32_t> bench_tokens(int n, int vocab);

struct SpecBenchOptions {
  SpecOptions spec;
  int batch = 1;          // sequences decoded together
  int n_gen = 64;         // generated tokens per sequence
  int n_prompt = 128;     // synthetic prompt tokens (without --text)
  int repeats = 3;        // the best of this many runs is reported
  std::string text;       // a real prompt, tokenized with the model's tokenizer
  std::string precision;  // reported as given (--precision)
  bool json = false;
};

// Verification cost (a step of n positions per sequence over one of 1, at the given batch), acceptance, and the
// decode rate with and without speculation, with the speed-up that acceptance and cost predict.
// `draft`: the --spec draft model (empty otherwise).
Status bench_spec(const LoadedModel& lm, const LoadedModel& draft, const SpecBenchOptions& o);

}  // namespace cai::cli
