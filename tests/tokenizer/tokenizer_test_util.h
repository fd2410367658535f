// Shared helpers of the tokenizer tests (header-only): cached tokenizers and the reference-case file readers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/loaders/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace cai::test {

struct TokenCase {
  std::string text;
  std::vector<int32_t> ids;
};

// tests/data/tokenizer/<name>/tokenizer.json (+ tokenizer_config.json), loaded once per test binary.
inline const Tokenizer& hf_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    const std::string dir = data_path("tokenizer/" + name + "/");
    auto t = Tokenizer::from_hf_json(dir + "tokenizer.json", dir + "tokenizer_config.json");
    if (!t.ok()) throw std::runtime_error(t.status().to_string());
    slot = std::move(t).value();
  }
  return *slot;
}

// A GGUF file's tokenizer (path relative to tests/data), loaded once per test binary.
inline const Tokenizer& gguf_tokenizer(const std::string& rel_path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[rel_path];
  if (!slot) {
    auto file = GgufFile::open(data_path(rel_path));
    if (!file.ok()) throw std::runtime_error(file.status().to_string());
    auto t = Tokenizer::from_gguf_metadata((*file)->metadata());
    if (!t.ok()) throw std::runtime_error(t.status().to_string());
    slot = std::move(t).value();
  }
  return *slot;
}

// cases.jsonl: {"text": ..., "ids": [...]} per line.
inline std::vector<TokenCase> read_jsonl_cases(const std::string& path) {
  std::vector<TokenCase> cases;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    cases.push_back({j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>()});
  }
  return cases;
}

// llama.cpp vocab test pair: .inp chunks each followed by "\n__ggml_vocab_test__\n"; .out one line of
// space-separated ids per chunk.
inline std::vector<TokenCase> read_vocab_cases(const std::string& inp_path, const std::string& out_path) {
  static const std::string kSep = "\n__ggml_vocab_test__\n";
  const std::string inp = read_file(inp_path);
  std::vector<TokenCase> cases;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t end = inp.find(kSep, pos);
    if (end == std::string::npos) break;  // only the empty tail after the last separator
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + kSep.size();
  }
  std::istringstream out(read_file(out_path));
  size_t i = 0;
  for (std::string line; std::getline(out, line); ++i) {
    if (i >= cases.size()) throw std::runtime_error(out_path + " has more lines than " + inp_path + " has chunks");
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) cases[i].ids.push_back(id);
  }
  if (i != cases.size()) throw std::runtime_error(out_path + " has fewer lines than " + inp_path + " has chunks");
  return cases;
}

}  // namespace cai::test
