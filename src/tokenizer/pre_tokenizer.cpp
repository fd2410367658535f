// Pre-tokenizers: cut normalized text into pieces before the model (HF Split/ByteLevel/Metaspace/Digits/... and
// Sequence).
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"

namespace cai::tok {

const char kGpt2Regex[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

namespace {

struct Segment {
  size_t begin, end;
  bool is_match;
};

// The piece as alternating gaps and matches covering all of it (HF find_matches).
std::vector<Segment> segments_of(const Pattern& pattern, std::string_view piece, bool invert) {
  std::vector<Segment> segs;
  size_t last = 0;
  for (const Span& m : pattern.find_all(piece)) {
    if (m.begin > last) segs.push_back({last, m.begin, invert});
    segs.push_back({m.begin, m.end, !invert});
    last = m.end;
  }
  if (last < piece.size()) segs.push_back({last, piece.size(), invert});
  return segs;
}

// Applies a SplitBehavior to one piece's segments (the fold rules of HF NormalizedString::split).
std::vector<Span> apply_behavior(const std::vector<Segment>& segs, SplitBehavior behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Segment& s : segs)
        if (!s.is_match) out.push_back({s.begin, s.end});
      break;
    case SplitBehavior::kIsolated:
      for (const Segment& s : segs) out.push_back({s.begin, s.end});
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Segment& s : segs) {
        if (s.is_match && !previous_match && !out.empty())
          out.back().end = s.end;
        else
          out.push_back({s.begin, s.end});
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty())
          out.back().begin = it->begin;
        else
          out.push_back({it->begin, it->end});
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    case SplitBehavior::kContiguous:
      for (const Segment& s : segs) {
        if (s.is_match == previous_match && !out.empty())
          out.back().end = s.end;
        else
          out.push_back({s.begin, s.end});
        previous_match = s.is_match;
      }
      break;
  }
  return out;
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  void split(std::vector<std::string>& pieces, bool) const override {
    std::vector<std::string> out;
    out.reserve(pieces.size());
    for (const std::string& piece : pieces) {
      for (const Span& s : apply_behavior(segments_of(pattern_, piece, invert_), behavior_))
        if (s.end > s.begin) out.emplace_back(piece, s.begin, s.end - s.begin);
    }
    pieces = std::move(out);
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex)
      gpt2_ = make_split_pre_tokenizer(Pattern::regex(kGpt2Regex).value(), SplitBehavior::kIsolated, false);
  }

  void split(std::vector<std::string>& pieces, bool first_segment) const override {
    if (add_prefix_space_)
      for (std::string& p : pieces)
        if (p.empty() || p[0] != ' ') p.insert(0, " ");
    if (gpt2_) gpt2_->split(pieces, first_segment);
    for (std::string& p : pieces) p = byte_level_encode(p);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<PreTokenizer> gpt2_;
};

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend) {
    if (split)
      splitter_ = make_split_pre_tokenizer(Pattern::literal(replacement_), SplitBehavior::kMergedWithNext, false);
  }

  void split(std::vector<std::string>& pieces, bool first_segment) const override {
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string& p = pieces[i];
      for (size_t at = p.find(' '); at != std::string::npos; at = p.find(' ', at + replacement_.size()))
        p.replace(at, 1, replacement_);
      const bool want = prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && first_segment && i == 0);
      if (want && p.compare(0, replacement_.size(), replacement_) != 0) p.insert(0, replacement_);
    }
    if (splitter_) splitter_->split(pieces, first_segment);
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  std::unique_ptr<PreTokenizer> splitter_;  // on the replacement, merged with the next piece; null if no split
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void split(std::vector<std::string>& pieces, bool first_segment) const override {
    for (const auto& p : parts_) p->split(pieces, first_segment);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

Result<SplitBehavior> behavior_from_name(const std::string& name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return corrupt("tokenizer.json: unknown Split behavior '{}'", name);
}

Result<std::unique_ptr<PreTokenizer>> regex_split(const char* regex, SplitBehavior behavior, bool invert) {
  CAI_ASSIGN_OR_RETURN(Pattern pattern, Pattern::regex(regex));
  return make_split_pre_tokenizer(std::move(pattern), behavior, invert);
}

Result<std::unique_ptr<PreTokenizer>> metaspace_from_json(const nlohmann::json& j) {
  using Prepend = MetaspacePreTokenizer::Prepend;
  Prepend prepend = j.value("add_prefix_space", true) ? Prepend::kAlways : Prepend::kNever;  // older files
  if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
    const std::string scheme = j["prepend_scheme"].get<std::string>();
    if (scheme == "first")
      prepend = Prepend::kFirst;
    else if (scheme == "never")
      prepend = Prepend::kNever;
    else if (scheme == "always")
      prepend = Prepend::kAlways;
    else
      return corrupt("tokenizer.json: unknown Metaspace prepend_scheme '{}'", scheme);
  }
  return std::unique_ptr<PreTokenizer>(
      new MetaspacePreTokenizer(j.value("replacement", std::string("\xE2\x96\x81")), prepend, j.value("split", true)));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_split_pre_tokenizer(Pattern pattern, SplitBehavior behavior, bool invert) {
  return std::make_unique<SplitPreTokenizer>(std::move(pattern), behavior, invert);
}

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
  return std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, use_regex);
}

std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) {
  return std::make_unique<SequencePreTokenizer>(std::move(parts));
}

Result<std::unique_ptr<PreTokenizer>> pre_tokenizer_from_json(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<PreTokenizer>();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return corrupt("tokenizer.json: pre_tokenizer without a \"type\"");
  const std::string type = j["type"].get<std::string>();
  if (type == "Split") {
    CAI_ASSIGN_OR_RETURN(Pattern pattern, pattern_from_json(j.at("pattern")));
    CAI_ASSIGN_OR_RETURN(SplitBehavior behavior, behavior_from_name(j.at("behavior").get<std::string>()));
    return make_split_pre_tokenizer(std::move(pattern), behavior, j.value("invert", false));
  }
  if (type == "ByteLevel")
    return make_byte_level_pre_tokenizer(j.value("add_prefix_space", false), j.value("use_regex", true));
  if (type == "Metaspace") return metaspace_from_json(j);
  if (type == "Digits")
    return regex_split(
        "\\p{N}", j.value("individual_digits", false) ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false);
  if (type == "Whitespace") return regex_split("\\w+|[^\\w\\s]+", SplitBehavior::kRemoved, true);
  if (type == "WhitespaceSplit") return regex_split("\\s+", SplitBehavior::kRemoved, false);
  if (type == "Punctuation") {
    CAI_ASSIGN_OR_RETURN(SplitBehavior behavior, behavior_from_name(j.value("behavior", std::string("Isolated"))));
    return regex_split("[\\p{P}!-/:-@\\[-`{-~]", behavior, false);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const auto& child : j.at("pretokenizers")) {
      CAI_ASSIGN_OR_RETURN(auto part, pre_tokenizer_from_json(child));
      if (part) parts.push_back(std::move(part));
    }
    return make_sequence_pre_tokenizer(std::move(parts));
  }
  return unsupported("tokenizer.json: pre_tokenizer type '{}' is not supported", type);
}

}  // namespace cai::tok
