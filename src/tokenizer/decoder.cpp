// Decoders: token text → bytes, one token at a time (HF ByteLevel/Metaspace/Replace/ByteFallback/Fuse/Strip/Sequence).
#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"

namespace cai::tok {
namespace {

constexpr const char kSpmSpace[] = "\xE2\x96\x81";  // ▁ U+2581

// "<0xAB>" → 0xAB; -1 for any other text.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9')
      value |= c - '0';
    else if (c >= 'A' && c <= 'F')
      value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      value |= c - 'a' + 10;
    else
      return -1;
  }
  return value;
}

Decoder::Step plain_step(Decoder::StepKind kind) { return {kind, Pattern::literal(""), std::string(), 0}; }

Decoder::Step replace_step(Pattern pattern, std::string content) {
  return {Decoder::StepKind::kReplace, std::move(pattern), std::move(content), 0};
}

Decoder::Step strip_step(std::string content, size_t n) {
  return {Decoder::StepKind::kStrip, Pattern::literal(""), std::move(content), n};
}

Status append_steps(const nlohmann::json& j, std::vector<Decoder::Step>& steps) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return corrupt("tokenizer.json: decoder without a \"type\"");
  const std::string type = j["type"].get<std::string>();
  if (type == "ByteLevel") {
    steps.push_back(plain_step(Decoder::StepKind::kByteLevel));
  } else if (type == "ByteFallback") {
    steps.push_back(plain_step(Decoder::StepKind::kByteFallback));
  } else if (type == "Fuse") {
    // Concatenation is what decoding token by token does anyway.
  } else if (type == "Replace") {
    CAI_ASSIGN_OR_RETURN(Pattern pattern, pattern_from_json(j.at("pattern")));
    steps.push_back(replace_step(std::move(pattern), j.at("content").get<std::string>()));
  } else if (type == "Strip") {
    if (j.value("stop", 0) != 0) return unsupported("tokenizer.json: Strip decoder with stop > 0 is not supported");
    steps.push_back(strip_step(j.at("content").get<std::string>(), j.value("start", 0)));
  } else if (type == "Metaspace") {
    const std::string replacement = j.value("replacement", std::string(kSpmSpace));
    bool prepends = j.value("add_prefix_space", true);
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) prepends = j["prepend_scheme"] != "never";
    steps.push_back(replace_step(Pattern::literal(replacement), " "));
    if (prepends) steps.push_back(strip_step(" ", 1));
  } else if (type == "Sequence") {
    for (const auto& child : j.at("decoders")) CAI_TRY(append_steps(child, steps));
  } else {
    return unsupported("tokenizer.json: decoder type '{}' is not supported", type);
  }
  return Status::ok_status();
}

}  // namespace

Decoder Decoder::join_with_space() {
  Decoder d;
  d.join_with_space_ = true;
  return d;
}

Decoder Decoder::from_steps(std::vector<Step> steps) {
  Decoder d;
  d.steps_ = std::move(steps);
  return d;
}

Decoder Decoder::byte_level() { return from_steps({plain_step(StepKind::kByteLevel)}); }

Decoder Decoder::sentencepiece(bool strip_leading_space) {
  std::vector<Step> steps;
  steps.push_back(replace_step(Pattern::literal(kSpmSpace), " "));
  steps.push_back(plain_step(StepKind::kByteFallback));
  if (strip_leading_space) steps.push_back(strip_step(" ", 1));
  return from_steps(std::move(steps));
}

void Decoder::decode_token(std::string_view text, bool first, std::string& out) const {
  if (join_with_space_) {
    if (!first) out.push_back(' ');
    out.append(text);
    return;
  }
  std::string cur(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case StepKind::kByteLevel: {
        std::string bytes;
        if (byte_level_decode(cur, bytes)) cur = std::move(bytes);  // else: not byte-level text, kept as is
        break;
      }
      case StepKind::kReplace: cur = step.pattern.replace_all(cur, step.content); break;
      case StepKind::kByteFallback:
        if (const int b = parse_byte_token(cur); b >= 0) cur.assign(1, static_cast<char>(b));
        break;
      case StepKind::kStrip:
        for (size_t i = 0; first && i < step.n_strip && !step.content.empty() && cur.starts_with(step.content); ++i)
          cur.erase(0, step.content.size());
        break;
    }
  }
  out += cur;
}

Result<Decoder> decoder_from_json(const nlohmann::json& j) {
  if (j.is_null()) return Decoder::join_with_space();
  std::vector<Decoder::Step> steps;
  CAI_TRY(append_steps(j, steps));
  return Decoder::from_steps(std::move(steps));
}

}  // namespace cai::tok
