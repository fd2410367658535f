// Normalizers of HF tokenizer.json (NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace, Strip, Sequence).
#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "tokenizer/pattern.h"
#include "tokenizer/unicode.h"

namespace cai::tok {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(int options) : options_(options) {}
  void apply(std::string& text) const override {
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                     &out, static_cast<utf8proc_option_t>(options_));
    if (n >= 0) text.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);  // on error (only for invalid UTF-8, which callers never pass) the text is left as it was
  }

 private:
  int options_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void apply(std::string& text) const override {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
      const uint32_t cp = next_code_point(text, pos);
      append_utf8(out, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    }
    text = std::move(out);
  }
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void apply(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void apply(std::string& text) const override { text = pattern_.replace_all(text, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

// Strips white space (PCRE2 \s with Unicode properties) at either end.
class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void apply(std::string& text) const override {
    static const Pattern kLeft = Pattern::regex("^\\s+").value();
    static const Pattern kRight = Pattern::regex("\\s+\\z").value();
    if (right_) text = kRight.replace_all(text, "");
    if (left_) text = kLeft.replace_all(text, "");
  }

 private:
  bool left_, right_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void apply(std::string& text) const override {
    for (const auto& p : parts_) p->apply(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix) {
  return std::make_unique<PrependNormalizer>(std::move(prefix));
}

std::unique_ptr<Normalizer> make_literal_replace_normalizer(std::string from, std::string to) {
  return std::make_unique<ReplaceNormalizer>(Pattern::literal(from), std::move(to));
}

std::unique_ptr<Normalizer> make_sequence_normalizer(std::vector<std::unique_ptr<Normalizer>> parts) {
  return std::make_unique<SequenceNormalizer>(std::move(parts));
}

Result<std::unique_ptr<Normalizer>> normalizer_from_json(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<Normalizer>();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return corrupt("tokenizer.json: normalizer without a \"type\"");
  const std::string type = j["type"].get<std::string>();
  if (type == "NFC") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (type == "NFD") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  if (type == "NFKC")
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  if (type == "NFKD")
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new LowercaseNormalizer());
  if (type == "Prepend") return make_prepend_normalizer(j.at("prepend").get<std::string>());
  if (type == "Strip")
    return std::unique_ptr<Normalizer>(new StripNormalizer(j.value("left", true), j.value("right", true)));
  if (type == "Replace") {
    CAI_ASSIGN_OR_RETURN(Pattern pattern, pattern_from_json(j.at("pattern")));
    return std::unique_ptr<Normalizer>(new ReplaceNormalizer(std::move(pattern), j.at("content").get<std::string>()));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const auto& child : j.at("normalizers")) {
      CAI_ASSIGN_OR_RETURN(auto part, normalizer_from_json(child));
      if (part) parts.push_back(std::move(part));
    }
    return make_sequence_normalizer(std::move(parts));
  }
  return unsupported("tokenizer.json: normalizer type '{}' is not supported", type);
}

}  // namespace cai::tok
