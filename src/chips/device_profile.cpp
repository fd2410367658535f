// Device profiles: reading and validating data/chips/<id>.json, and finding the directory that holds them.
#include "chips/device_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "chips/data_dir.h"
#include "model/kv_cache.h"

namespace cai::chips {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The JSON value as an error message shows it: scalars as written, containers by kind (no deep dumps).
std::string describe(const Json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  std::string s = v.dump();
  if (s.size() <= 40) return s;
  size_t cut = 37;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;  // never split a UTF-8 sequence
  return s.substr(0, cut) + "...";
}

// Reads the fields of one JSON object, naming "<file>: <prefix><field>" in every error.
class FieldReader {
 public:
  FieldReader(const Json& obj, std::string file, std::string prefix)
      : obj_(obj), file_(std::move(file)), prefix_(std::move(prefix)) {}

  Status error(const std::string& field, const std::string& what) const {
    return invalid_argument("{}: {}{}: {}", file_, prefix_, field, what);
  }
  Status expected(const std::string& field, const char* kind, const Json& got) const {
    return error(field, "expected " + std::string(kind) + ", got " + describe(got));
  }
  // Every key must be one of `known`.
  Status check_keys(std::initializer_list<const char*> known) const {
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      const std::string& key = it.key();
      if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
        return error(key, "unknown field");
    }
    return {};
  }
  // Absent or null → the value stays as it is.
  const Json* get(const char* field) const {
    auto it = obj_.find(field);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }

  Status string(const char* field, std::string& out) const {
    const Json* v = get(field);
    if (!v) return {};
    if (!v->is_string()) return expected(field, "a string", *v);
    out = v->get<std::string>();
    return {};
  }
  Status required_string(const char* field, std::string& out) const {
    CAI_TRY(string(field, out));
    if (out.empty()) return error(field, "required, a non-empty string");
    return {};
  }
  Status boolean(const char* field, bool& out) const {
    const Json* v = get(field);
    if (!v) return {};
    if (!v->is_boolean()) return expected(field, "true or false", *v);
    out = v->get<bool>();
    return {};
  }
  Status optional_bool(const char* field, std::optional<bool>& out) const {
    bool b = false;
    CAI_TRY(boolean(field, b));
    if (get(field)) out = b;
    return {};
  }
  // A finite number above 0 (at least 0 with allow_zero), at most `max`.
  Status positive(const char* field, std::optional<double>& out, double max = 1e12, bool allow_zero = false) const {
    const Json* v = get(field);
    if (!v) return {};
    if (!v->is_number()) return expected(field, "a number", *v);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < 0 || (x == 0 && !allow_zero) || x > max)
      return error(field,
                   fmt::format("{} is out of range ({} to {})", describe(*v), allow_zero ? "0" : "above 0", max));
    out = x;
    return {};
  }
  Status strings(const char* field, std::vector<std::string>& out) const {
    const Json* v = get(field);
    if (!v) return {};
    if (!v->is_array()) return expected(field, "an array of strings", *v);
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) return expected(fmt::format("{}[{}]", field, i), "a string", (*v)[i]);
      out.push_back((*v)[i].get<std::string>());
    }
    return {};
  }
  // "0x" and exactly `digits` hex digits ("0x19e5", class "0x120000").
  Status hex(const std::string& field, const Json& v, int digits, uint32_t& out) const {
    const char* kind = digits == 4 ? "a hex id like \"0x10de\"" : "a hex class like \"0x120000\"";
    if (!v.is_string()) return expected(field, kind, v);
    const std::string s = v.get<std::string>();
    const bool ok =
        s.size() == static_cast<size_t>(digits) + 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
        std::all_of(s.begin() + 2, s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
    if (!ok) return expected(field, kind, v);
    out = static_cast<uint32_t>(std::stoul(s.substr(2), nullptr, 16));
    return {};
  }

  const Json& obj() const { return obj_; }

 private:
  const Json& obj_;
  std::string file_;
  std::string prefix_;
};

// "<DNS subdomain>/<name>": the domain has a dot, lowercase alphanumerics, '-' and '.'; the name alphanumerics with
// '-', '_', '.' inside (Kubernetes' extended resource names, as device plugins register them).
bool is_extended_resource_name(const std::string& s) {
  const size_t slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= s.size() || s.size() > 253 + 1 + 63) return false;
  const std::string domain = s.substr(0, slash), name = s.substr(slash + 1);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  const bool domain_ok = domain.find('.') != std::string::npos && alnum(domain.front()) && alnum(domain.back()) &&
                         std::all_of(domain.begin(), domain.end(), [&](char c) {
                           return (alnum(c) && !std::isupper(static_cast<unsigned char>(c))) || c == '-' || c == '.';
                         });
  const bool name_ok =
      name.size() <= 63 && alnum(name.front()) && alnum(name.back()) &&
      std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
  return domain_ok && name_ok;
}

Status parse_pci(const FieldReader& r, DeviceProfile& p) {
  uint32_t v = 0;
  if (const Json* j = r.get("pci_vendor_id")) {
    CAI_TRY(r.hex("pci_vendor_id", *j, 4, v));
    p.pci_vendor_id = static_cast<uint16_t>(v);
  }
  if (const Json* j = r.get("pci_device_ids")) {
    if (!j->is_array()) return r.expected("pci_device_ids", "an array of hex ids", *j);
    for (size_t i = 0; i < j->size(); ++i) {
      CAI_TRY(r.hex(fmt::format("pci_device_ids[{}]", i), (*j)[i], 4, v));
      p.pci_device_ids.push_back(static_cast<uint16_t>(v));
    }
  }
  if (const Json* j = r.get("pci_class")) {
    CAI_TRY(r.hex("pci_class", *j, 6, v));
    p.pci_class = v;
  }
  if (!p.pci_vendor_id && (!p.pci_device_ids.empty() || p.pci_class))
    return r.error("pci_vendor_id", "required when pci_device_ids or pci_class is given");
  return {};
}

Status parse_policies(const Json& j, const std::string& file, ChipPolicies& pol) {
  FieldReader r(j, file, "policies.");
  if (!j.is_object()) return invalid_argument("{}: policies: expected an object, got {}", file, describe(j));
  CAI_TRY(r.check_keys({"backend", "kv_dtype", "host_offload_below", "pool_length_buckets", "expert_prewarm",
                        "sync_launch", "thermal_limit_c"}));
  CAI_TRY(r.string("backend", pol.backend));
  if (!std::all_of(pol.backend.begin(), pol.backend.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
      }))
    return r.error("backend", fmt::format("\"{}\" is not a backend name (lowercase letters, digits, _)", pol.backend));
  CAI_TRY(r.string("kv_dtype", pol.kv_dtype));
  if (!pol.kv_dtype.empty())
    if (auto t = parse_kv_dtype(pol.kv_dtype); !t.ok()) return r.error("kv_dtype", t.status().message());
  CAI_TRY(r.positive("host_offload_below", pol.host_offload_below, 1.0, /*allow_zero=*/true));
  if (const Json* b = r.get("pool_length_buckets")) {
    if (!b->is_array()) return r.expected("pool_length_buckets", "an array of token counts", *b);
    for (size_t i = 0; i < b->size(); ++i) {
      const Json& e = (*b)[i];
      const std::string name = fmt::format("pool_length_buckets[{}]", i);
      if (!e.is_number_integer() || e.get<int64_t>() <= 0) return r.expected(name, "a positive integer", e);
      if (!pol.pool_length_buckets.empty() && e.get<int64_t>() <= pol.pool_length_buckets.back())
        return r.error(name, "bucket edges must increase");
      pol.pool_length_buckets.push_back(e.get<int64_t>());
    }
  }
  CAI_TRY(r.boolean("expert_prewarm", pol.expert_prewarm));
  CAI_TRY(r.boolean("sync_launch", pol.sync_launch));
  CAI_TRY(r.positive("thermal_limit_c", pol.thermal_limit_c, 150.0));
  return {};
}

Status parse_measured(const Json& j, const std::string& file, std::vector<MeasuredEfficiency>& out) {
  if (!j.is_array()) return invalid_argument("{}: measured_efficiency: expected an array, got {}", file, describe(j));
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string prefix = fmt::format("measured_efficiency[{}].", i);
    FieldReader r(j[i], file, prefix);
    if (!j[i].is_object()) return invalid_argument("{}: {}: expected an object", file, prefix);
    CAI_TRY(r.check_keys({"backend", "weights", "threads", "decode", "prefill", "source"}));
    MeasuredEfficiency m;
    CAI_TRY(r.required_string("backend", m.backend));
    CAI_TRY(r.required_string("weights", m.weights));
    if (const Json* t = r.get("threads")) {
      if (!t->is_number_integer() || t->get<int64_t>() < 0 || t->get<int64_t>() > 4096)
        return r.expected("threads", "a thread count (0 = any)", *t);
      m.threads = t->get<int>();
    }
    CAI_TRY(r.positive("decode", m.decode, 2.0));
    CAI_TRY(r.positive("prefill", m.prefill, 2.0));
    if (!m.decode && !m.prefill) return r.error("decode", "an entry needs decode, prefill or both");
    CAI_TRY(r.required_string("source", m.source));
    out.push_back(std::move(m));
  }
  return {};
}

}  // namespace

Result<DeviceProfile> parse_profile(const std::string& json_text, const std::string& file) {
  const Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument("{}: not valid JSON", file);
  if (!j.is_object()) return invalid_argument("{}: expected a JSON object, got {}", file, describe(j));
  FieldReader r(j, file, "");
  CAI_TRY(r.check_keys({"id",
                        "vendor",
                        "name",
                        "pci_vendor_id",
                        "pci_device_ids",
                        "pci_class",
                        "runtime_libraries",
                        "stack",
                        "memory_gib",
                        "bandwidth_gbs",
                        "sram_mib",
                        "bf16_tflops",
                        "int8_tops",
                        "fp8",
                        "interconnect",
                        "interconnect_gbs",
                        "collectives",
                        "smi_tool",
                        "k8s_resource",
                        "notes",
                        "sources",
                        "policies",
                        "measured_efficiency"}));
  DeviceProfile p;
  p.file = file;
  CAI_TRY(r.required_string("id", p.id));
  if (!std::all_of(p.id.begin(), p.id.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
               c == '_';
      }))
    return r.error("id", fmt::format("\"{}\" must be lowercase letters, digits, '-' and '_'", p.id));
  CAI_TRY(r.required_string("vendor", p.vendor));
  CAI_TRY(r.required_string("name", p.name));
  CAI_TRY(parse_pci(r, p));
  CAI_TRY(r.strings("runtime_libraries", p.runtime_libraries));
  for (const std::string& lib : p.runtime_libraries)
    if (lib.empty() || lib.find('/') != std::string::npos)
      return r.error("runtime_libraries", fmt::format("\"{}\" is not a library file name", lib));
  CAI_TRY(r.string("stack", p.stack));
  CAI_TRY(r.positive("memory_gib", p.memory_gib, 1e6));
  CAI_TRY(r.positive("bandwidth_gbs", p.bandwidth_gbs));
  CAI_TRY(r.positive("sram_mib", p.sram_mib));
  CAI_TRY(r.positive("bf16_tflops", p.bf16_tflops));
  CAI_TRY(r.positive("int8_tops", p.int8_tops));
  CAI_TRY(r.optional_bool("fp8", p.fp8));
  CAI_TRY(r.string("interconnect", p.interconnect));
  CAI_TRY(r.positive("interconnect_gbs", p.interconnect_gbs));
  CAI_TRY(r.string("collectives", p.collectives));
  CAI_TRY(r.string("smi_tool", p.smi_tool));
  CAI_TRY(r.string("k8s_resource", p.k8s_resource));
  if (!p.k8s_resource.empty() && !is_extended_resource_name(p.k8s_resource))
    return r.error("k8s_resource", fmt::format("\"{}\" is not a Kubernetes extended resource name (vendor-domain/name, "
                                               "e.g. nvidia.com/gpu)",
                                               p.k8s_resource));
  CAI_TRY(r.string("notes", p.notes));
  CAI_TRY(r.strings("sources", p.sources));
  if (const Json* pol = r.get("policies")) CAI_TRY(parse_policies(*pol, file, p.policies));
  if (const Json* m = r.get("measured_efficiency")) CAI_TRY(parse_measured(*m, file, p.measured_efficiency));
  return p;
}

Result<DeviceProfile> load_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read {}", path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_profile(text.str(), path);
}

Result<std::vector<DeviceProfile>> load_profiles(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& ent : fs::directory_iterator(dir, ec))
    if (ent.path().extension() == ".json") files.push_back(ent.path());
  if (ec) return not_found("device profile directory {}: {}", dir, ec.message());
  std::sort(files.begin(), files.end());
  std::vector<DeviceProfile> profiles;
  for (const fs::path& path : files) {
    CAI_ASSIGN_OR_RETURN(DeviceProfile p, load_profile(path.string()));
    if (p.id != path.stem().string())
      return invalid_argument("{}: id: \"{}\" must equal the file name \"{}\"", path.string(), p.id,
                              path.stem().string());
    profiles.push_back(std::move(p));
  }
  std::sort(profiles.begin(), profiles.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return profiles;
}

// CAI_CHIPS_SOURCE_DIR: the source tree's data/chips (CMakeLists.txt), for runs from the build tree.
std::string default_profile_dir() { return find_data_dir("CAI_CHIPS_DIR", "chips", CAI_CHIPS_SOURCE_DIR); }

const DeviceProfile* find_profile(const std::vector<DeviceProfile>& profiles, const std::string& id) {
  for (const DeviceProfile& p : profiles)
    if (p.id == id) return &p;
  return nullptr;
}

}  // namespace cai::chips
