// Registry: the built-in CPU backend, plugin discovery (next to the binary, ../lib/cai, CAI_BACKEND_PATH), lookup.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/log.h"
#include "hal/cpu/cpu_backend.h"
#include "hal/hal.h"
#include "hal/plugin_device.h"

namespace cai::hal {

namespace fs = std::filesystem;

Registry& Registry::global() {
  static Registry* registry = [] {
    auto* r = new Registry();
    r->add(cpu::make_cpu_backend());
    return r;
  }();
  return *registry;
}

void Registry::add(std::unique_ptr<Backend> backend) { backends_.push_back(std::move(backend)); }

Backend* Registry::find_backend(const std::string& name) const {
  for (const auto& b : backends_)
    if (b->name() == name) return b.get();
  return nullptr;
}

Backend* Registry::backend_of(const Device& device) const {
  for (const auto& b : backends_)
    for (const Device* d : b->devices())
      if (d == &device) return b.get();
  return nullptr;
}

Result<Device*> Registry::find_device(const std::string& spec) const {
  std::string name = spec;
  int index = 0;
  if (auto colon = spec.find(':'); colon != std::string::npos) {
    name = spec.substr(0, colon);
    char* end = nullptr;
    long v = std::strtol(spec.c_str() + colon + 1, &end, 10);
    if (end == spec.c_str() + colon + 1 || *end != '\0' || v < 0) return invalid_argument("bad device '{}'", spec);
    index = static_cast<int>(v);
  }
  Backend* b = find_backend(name);
  if (!b) {
    std::string known;
    for (const auto& x : backends_) known += (known.empty() ? "" : ", ") + x->name();
    return not_found("no backend '{}' (available: {}; devices: {})", name, known, device_names());
  }
  auto devs = b->devices();
  if (index >= static_cast<int>(devs.size()))
    return not_found("backend '{}' has {} device(s), asked for index {} (devices: {})", name, devs.size(), index,
                     device_names());
  return devs[static_cast<size_t>(index)];
}

std::string Registry::device_names() const {
  std::vector<Device*> all;
  for (const auto& b : backends_)
    for (Device* d : b->devices()) all.push_back(d);
  return hal::device_names(all, ", ");
}

Result<std::vector<Device*>> Registry::find_devices(const std::string& list) const {
  std::vector<Device*> out;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    std::vector<std::string> specs{item};
    const size_t colon = item.find(':'), dash = item.find('-', colon == std::string::npos ? 0 : colon);
    if (colon != std::string::npos && dash != std::string::npos) {  // "cuda:0-7"
      char* end = nullptr;
      const long first = std::strtol(item.c_str() + colon + 1, &end, 10);
      const bool first_ok = end == item.c_str() + dash;
      const long last = std::strtol(item.c_str() + dash + 1, &end, 10);
      if (!first_ok || *end != '\0' || dash + 1 == item.size() || first < 0 || last < first)
        return invalid_argument("bad device range '{}' in '{}' (expected e.g. cuda:0-7)", item, list);
      specs.clear();
      for (long i = first; i <= last; ++i) specs.push_back(item.substr(0, colon + 1) + std::to_string(i));
    }
    for (const std::string& spec : specs) {
      CAI_ASSIGN_OR_RETURN(Device * d, find_device(spec));
      if (std::find(out.begin(), out.end(), d) != out.end())
        return invalid_argument("device {} is named twice in '{}'", d->name(), list);
      out.push_back(d);
    }
  }
  if (out.empty()) return invalid_argument("empty device list '{}'", list);
  return out;
}

// The handle stays open once the plugin's code has run (create() may start threads); only a file that is not a
// usable plugin is closed again.
Status Registry::load_plugin(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return io_error("cannot load backend plugin {}: {}", path, dlerror());
  auto entry_fn = reinterpret_cast<CaiBackendEntryFn>(dlsym(handle, CAI_BACKEND_ENTRY_SYMBOL));
  if (!entry_fn) {
    const bool older = dlsym(handle, "cai_backend_entry_v2") != nullptr;  // ABI v2: attention_mla took kv_b
    dlclose(handle);
    if (older)
      return unsupported(
          "plugin {} was built for backend ABI v2, this engine needs v{}: rebuild it against this "
          "cai/backend_abi.h",
          path, CAI_BACKEND_ABI_VERSION);
    return unsupported("{} is not a CAI backend plugin (no {} symbol)", path, CAI_BACKEND_ENTRY_SYMBOL);
  }
  const CaiBackendEntry* entry = entry_fn();
  if (Status st = check_plugin_entry(entry, path); !st.ok()) {
    dlclose(handle);
    return st;
  }
  if (find_backend(entry->name)) {
    Status st = invalid_argument("plugin {} provides backend '{}', which is already registered", path, entry->name);
    dlclose(handle);
    return st;
  }
  handles_.push_back(handle);
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<PluginBackend> backend, PluginBackend::create(*entry, path));
  CAI_LOG_INFO("loaded backend plugin '{}' from {} ({} device(s))", backend->name(), path, backend->devices().size());
  add(std::move(backend));
  return {};
}

namespace {

std::vector<fs::path> plugin_dirs() {
  std::vector<fs::path> dirs;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path());
    dirs.push_back(exe.parent_path().parent_path() / "lib" / "cai");  // installed layout: bin/cai, lib/cai/*.so
  }
  if (const char* env = std::getenv("CAI_BACKEND_PATH")) {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ':'))
      if (!item.empty()) dirs.emplace_back(item);
  }
  // Each directory once, however it is spelled, so no plugin is offered twice.
  std::vector<fs::path> unique;
  for (const fs::path& d : dirs) {
    fs::path canonical = fs::weakly_canonical(d, ec);
    if (ec) canonical = d;
    if (std::find(unique.begin(), unique.end(), canonical) == unique.end()) unique.push_back(canonical);
  }
  return unique;
}

}  // namespace

int Registry::load_plugins_from_default_paths() {
  int n_loaded = 0;
  for (const fs::path& dir : plugin_dirs()) {
    std::error_code ec;
    for (const auto& ent : fs::directory_iterator(dir, ec)) {
      std::string fname = ent.path().filename().string();
      if (fname.rfind("libcai-backend-", 0) != 0 || ent.path().extension() != ".so") continue;
      Status st = load_plugin(ent.path().string());
      if (st.ok())
        ++n_loaded;
      else if (st.code() == StatusCode::kUnavailable)
        CAI_LOG_INFO("skipping backend plugin: {}", st.message());
      else
        CAI_LOG_WARN("skipping backend plugin: {}", st.to_string());
    }
  }
  return n_loaded;
}

}  // namespace cai::hal
