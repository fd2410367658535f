// Numbers (minimum, maximum, exclusiveMinimum, exclusiveMaximum: exact for integers and decimals) and strings
// (minLength, maxLength, format, pattern) of the JSON-Schema compiler.
#include <memory>

#include "runtime/grammar/grammar_node.h"
#include "runtime/grammar/json_grammar.h"
#include "runtime/grammar/json_schema_compiler.h"
#include "runtime/grammar/string_formats.h"

namespace cai::grammar {

namespace {
namespace schema_scalars {

const Decimal kLargest{false, std::to_string(kMaxIntegerBound), ""};
const Decimal kSmallest{true, std::to_string(kMaxIntegerBound), ""};

// A bound and the keyword it came from.
struct KeyedBound {
  NumberBound bound;
  std::string key;
};

// The lower (`lower`) or upper bound of `s`: the tighter of minimum and exclusiveMinimum (as a number, or draft 4's
// boolean that makes minimum exclusive); nullopt when there is none.
Result<std::optional<KeyedBound>> bound_of(const Json& s, bool lower) {
  const std::string inclusive_key = lower ? "minimum" : "maximum";
  const std::string exclusive_key = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  const Json* inclusive = schema_member(s, inclusive_key);
  const Json* exclusive = schema_member(s, exclusive_key);
  std::optional<KeyedBound> out;
  if (exclusive && !exclusive->is_boolean() && !exclusive->is_number())
    return invalid_argument("{}: must be a number", exclusive_key);
  if (inclusive) {
    std::optional<Decimal> d = decimal_of(*inclusive);
    if (!d) return invalid_argument("{}: must be a number", inclusive_key);
    const bool draft4_exclusive = exclusive && exclusive->is_boolean() && exclusive->get<bool>();
    out = KeyedBound{{*d, !draft4_exclusive}, inclusive_key};
  }
  if (exclusive && exclusive->is_number()) {
    std::optional<Decimal> d = decimal_of(*exclusive);
    if (!d) return invalid_argument("{}: must be a number", exclusive_key);
    const int order = out ? compare_decimals(*d, out->bound.value) : 0;
    if (!out || (lower ? order >= 0 : order <= 0)) out = KeyedBound{{*d, false}, exclusive_key};
  }
  if (!out) return out;
  // Bounds past ±(2^53 - 1): outward ones are pulled in (larger values are not generated), inward ones refused.
  const Decimal& v = out->bound.value;
  if (compare_decimals(v, lower ? kLargest : kSmallest) * (lower ? 1 : -1) > 0)
    return invalid_argument("{}: bounds beyond ±{} are not supported", out->key, kMaxIntegerBound);
  if (compare_decimals(v, lower ? kSmallest : kLargest) * (lower ? 1 : -1) < 0)
    out->bound = NumberBound{lower ? kSmallest : kLargest, true};
  return out;
}

// The smallest integer above a lower bound / largest below an upper bound (|bound| <= kMaxIntegerBound).
int64_t integer_within(const NumberBound& b, bool lower) {
  const int64_t magnitude = std::stoll(b.value.integer);
  const int64_t truncated = b.value.negative ? -magnitude : magnitude;
  if (b.value.fraction.empty()) return b.inclusive ? truncated : truncated + (lower ? 1 : -1);
  if (lower) return b.value.negative ? truncated : truncated + 1;
  return b.value.negative ? truncated - 1 : truncated;
}

}  // namespace schema_scalars
}  // namespace

Result<Grammar> SchemaCompiler::compile_number(const Json& s, bool integer) {
  using schema_scalars::KeyedBound;
  CAI_ASSIGN_OR_RETURN(std::optional<KeyedBound> lo, schema_scalars::bound_of(s, true));
  CAI_ASSIGN_OR_RETURN(std::optional<KeyedBound> hi, schema_scalars::bound_of(s, false));
  if (!lo && !hi) return integer ? json_integer() : json_number();
  const std::string key = lo ? lo->key : hi->key;
  if (integer) {
    std::optional<int64_t> ilo, ihi;
    if (lo) ilo = schema_scalars::integer_within(lo->bound, true);
    if (hi) ihi = schema_scalars::integer_within(hi->bound, false);
    if (ilo && ihi && *ilo > *ihi) return invalid_argument("{}: no integer lies within the bounds", key);
    return json_integer_range(ilo, ihi);
  }
  std::optional<NumberBound> nlo, nhi;
  if (lo) nlo = lo->bound;
  if (hi) nhi = hi->bound;
  std::optional<Grammar> g = json_number_range(nlo, nhi);
  if (!g) return invalid_argument("{}: no number lies within the bounds", key);
  return *g;
}

Result<Grammar> SchemaCompiler::compile_string(const Json& s) {
  CAI_ASSIGN_OR_RETURN(std::optional<int64_t> min, schema_count(s, "minLength", kMaxStringLengthBound));
  CAI_ASSIGN_OR_RETURN(std::optional<int64_t> max, schema_count(s, "maxLength", kMaxStringLengthBound));
  if (min && max && *min > *max) return invalid_argument("minLength: greater than maxLength");
  // The automata every string must match: the format's (where enforced) and each pattern's.
  std::vector<std::shared_ptr<const ContentDfa>> parts;
  std::string keyword;  // the keyword named when they leave no string
  if (const Json* format = schema_member(s, "format")) {
    if (!format->is_string()) return invalid_argument("format: must be a string");
    if (std::shared_ptr<const ContentDfa> f = format_automaton(format->get<std::string>())) {
      parts.push_back(std::move(f));
      keyword = "format";
    }
  }
  if (const Json* pattern = schema_member(s, "pattern")) {
    // One pattern, or the list merging several schemas built (json_schema_merge.cpp).
    const std::vector<Json> list =
        pattern->is_array() ? std::vector<Json>(pattern->begin(), pattern->end()) : std::vector<Json>{*pattern};
    for (const Json& p : list) {
      if (!p.is_string()) return invalid_argument("pattern: must be a string");
      CAI_ASSIGN_OR_RETURN(ContentDfa dfa, compile_regex(p.get<std::string>()));
      parts.push_back(std::make_shared<const ContentDfa>(std::move(dfa)));
    }
    keyword = "pattern";
  }
  if (parts.empty()) return json_string(static_cast<int>(min.value_or(0)), max ? static_cast<int>(*max) : -1);
  const Status too_complex =
      invalid_argument("{}: too complex once combined (more than {} automaton states)", keyword, kMaxAutomatonStates);
  std::shared_ptr<const ContentDfa> dfa = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    std::optional<ContentDfa> both = intersect(*dfa, *parts[i]);
    if (!both) return too_complex;
    dfa = std::make_shared<const ContentDfa>(std::move(*both));
  }
  // Lengths count characters; skip a limit every string already meets (a character is 1 to 4 bytes).
  const auto [fewest_bytes, most_bytes] = byte_length_bounds(*dfa);
  const bool need_min = min && *min > 0 && fewest_bytes < 4 * *min;
  const bool need_max = max && (most_bytes < 0 || most_bytes > *max);
  if (need_min || need_max) {
    std::optional<ContentDfa> limited =
        limit_length(*dfa, need_min ? static_cast<int>(*min) : 0, need_max ? static_cast<int>(*max) : -1);
    if (!limited) return too_complex;
    dfa = std::make_shared<const ContentDfa>(std::move(*limited));
  }
  if (dfa->empty())
    return invalid_argument("{}: no string satisfies it together with the schema's other string keywords", keyword);
  return Grammar::sequence({Grammar::literal("\""), automaton(std::move(dfa)), Grammar::literal("\"")});
}

}  // namespace cai::grammar
