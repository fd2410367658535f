// `cai tokenize`: text → token ids, for one prompt (-p) or a JSONL file of {"text": ...} lines.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "model/loaders/gguf.h"
#include "verbs.h"

namespace cai::cli {

namespace {

namespace fs = std::filesystem;

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  std::string jsonl;
  bool with_bos = false;
};

// A bare tokenizer.json, a model directory, or a .gguf (only its metadata is read).
Result<std::unique_ptr<Tokenizer>> open_tokenizer(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path dir(path);
    if (!fs::exists(dir / "tokenizer.json")) return not_found("no tokenizer.json in {}", path);
    return Tokenizer::from_hf_json((dir / "tokenizer.json").string(), (dir / "tokenizer_config.json").string());
  }
  if (fs::path(path).extension() == ".json") {
    const fs::path cfg = fs::path(path).parent_path() / "tokenizer_config.json";
    return Tokenizer::from_hf_json(path, cfg.string());
  }
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::open(path));
  return Tokenizer::from_gguf_metadata(f->metadata());
}

nlohmann::json line_for(const Tokenizer& tok, const std::string& text, bool with_bos) {
  return {{"text", text}, {"ids", tok.encode(text, with_bos, /*parse_special=*/true)}};
}

Status tokenize(const TokenizeOptions& o) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, open_tokenizer(o.model));
  const auto dump = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (o.jsonl.empty()) {
    std::cout << dump(line_for(*tok, o.prompt, o.with_bos)) << "\n";
    return {};
  }
  std::ifstream in(o.jsonl);
  if (!in) return io_error("cannot open {}", o.jsonl);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("text") || !j["text"].is_string())
      return invalid_argument("{}:{}: expected a JSON object with a string \"text\"", o.jsonl, n);
    std::cout << dump(line_for(*tok, j["text"].get<std::string>(), o.with_bos)) << "\n";
  }
  return {};
}

}  // namespace

void register_tokenize(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "print token ids of text (no BOS/EOS unless --bos)");
  cmd->add_option("-m,--model", o->model, "a .gguf file, a model directory or a tokenizer.json")->required();
  auto* p = cmd->add_option("-p,--prompt", o->prompt, "text to tokenize");
  auto* j = cmd->add_option("--jsonl", o->jsonl, "file of {\"text\": ...} lines; prints {\"text\", \"ids\"} lines");
  p->excludes(j);
  cmd->add_flag("--bos", o->with_bos, "prepend BOS when the model uses one");
  cmd->callback([o, p, j, &exit_code] {
    if (p->count() == 0 && j->count() == 0) {
      exit_code = fail(invalid_argument("give -p TEXT or --jsonl FILE"));
      return;
    }
    Status st = tokenize(*o);
    if (!st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
