// One-pass reader of HF tokenizer.json: the big BPE vocab and merges stream into flat vectors, the rest is a DOM.
#include "tokenizer/hf_json_reader.h"

namespace cai::tok {
namespace {

using nlohmann::json;

// SAX handler that builds the DOM itself, except under model.vocab (object) and model.merges (array).
class Handler final : public nlohmann::json_sax<json> {
 public:
  explicit Handler(HfJsonDocument& doc) : doc_(doc) {}
  const std::string& error() const { return error_; }

  bool null() override { return value(json()); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v); }
  bool number_float(number_float_t v, const string_t&) override { return value(v); }
  bool binary(binary_t&) override { return fail("binary values are not JSON"); }

  bool string(string_t& s) override {
    if (mode_ == Mode::kMerges) {
      const size_t space = s.find(' ', 1);
      if (space == std::string::npos) return fail("merge '" + s + "' has no space");
      doc_.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      return true;
    }
    if (mode_ == Mode::kMergePair) {
      pair_parts_.push_back(std::move(s));
      return pair_parts_.size() <= 2 || fail("a merge pair has more than two parts");
    }
    return value(json(std::move(s)));
  }

  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }

  bool start_object(std::size_t) override {
    if (mode_ != Mode::kDom)
      return fail(mode_ == Mode::kVocab ? "a vocab id is not a number" : "a merge is not a string");
    if (in_model() && key_ == "vocab") {
      mode_ = Mode::kVocab;
      doc_.has_vocab_object = true;
      return true;
    }
    return open(json::object());
  }

  bool end_object() override {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      return true;
    }
    stack_.pop_back();
    return true;
  }

  bool start_array(std::size_t) override {
    if (mode_ == Mode::kVocab) return fail("a vocab id is not a number");
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_parts_.clear();
      return true;
    }
    if (mode_ == Mode::kMergePair) return fail("a merge pair holds an array");
    if (in_model() && key_ == "merges") {
      mode_ = Mode::kMerges;
      doc_.has_merges = true;
      return true;
    }
    return open(json::array());
  }

  bool end_array() override {
    if (mode_ == Mode::kMergePair) {
      if (pair_parts_.size() != 2) return fail("a merge pair must hold two strings");
      doc_.merges.emplace_back(std::move(pair_parts_[0]), std::move(pair_parts_[1]));
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kDom;
      return true;
    }
    stack_.pop_back();
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    return fail(e.what());
  }

 private:
  enum class Mode { kDom, kVocab, kMerges, kMergePair };

  // Directly inside the top-level "model" object.
  bool in_model() const { return stack_.size() == 2 && model_open_; }

  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  // Places `v` where the parser is: the root, the next array element, or under the last key.
  json* place(json&& v) {
    if (stack_.empty()) {
      doc_.dom = std::move(v);
      return &doc_.dom;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }

  bool value(json&& v) {
    if (mode_ == Mode::kVocab) {
      if (!v.is_number_integer()) return fail("vocab id for '" + key_ + "' is not an integer");
      doc_.vocab.emplace_back(std::move(key_), v.get<int64_t>());
      return true;
    }
    if (mode_ != Mode::kDom) return fail("a merge is not a string");
    place(std::move(v));
    return true;
  }

  bool open(json&& container) {
    if (stack_.size() == 1) model_open_ = key_ == "model" && container.is_object();
    stack_.push_back(place(std::move(container)));
    return true;
  }

  HfJsonDocument& doc_;
  std::vector<json*> stack_;  // open containers; pointers stay valid while a container is open
  std::string key_;
  Mode mode_ = Mode::kDom;
  bool model_open_ = false;  // stack_[1] is the top-level "model" object
  std::vector<std::string> pair_parts_;
  std::string error_;
};

}  // namespace

Result<HfJsonDocument> read_hf_tokenizer_json(std::string_view text) {
  HfJsonDocument doc;
  Handler handler(doc);
  const bool ok = json::sax_parse(text.begin(), text.end(), &handler, json::input_format_t::json, true);
  if (!ok) return corrupt("tokenizer.json: {}", handler.error().empty() ? "not valid JSON" : handler.error());
  return doc;
}

}  // namespace cai::tok
