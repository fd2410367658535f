// The chat template of a real model family from tests/data/tokenizer/<family>/tokenizer_config.json.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "test_paths.h"

namespace cai::server::test_support {

inline std::string real_chat_template(const std::string& family) {
  auto config =
      nlohmann::json::parse(test::read_file(test::data_path("tokenizer/" + family + "/tokenizer_config.json")));
  return config.at("chat_template").get<std::string>();
}

}  // namespace cai::server::test_support
