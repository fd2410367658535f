// The tokenizer of the real TinyStories-656K model (tests/data/models), read from its GGUF metadata.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "model/loaders/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace cai::test {

inline std::unique_ptr<Tokenizer> tiny_tokenizer() {
  auto gguf = GgufFile::open(data_path("models/TinyStories-656K-Q8_0.gguf"));
  EXPECT_TRUE(gguf.ok());
  auto tok = Tokenizer::from_gguf_metadata(gguf.value()->metadata());
  EXPECT_TRUE(tok.ok());
  return std::move(tok).value();
}

}  // namespace cai::test
