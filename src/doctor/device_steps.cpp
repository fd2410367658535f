// The steps that need no model: the device answers, memory holds a pattern, and its bandwidth.
#include <cstring>
#include <random>

#include "core/membw.h"
#include "doctor/doctor.h"
#include "ops/device_bandwidth.h"

namespace cai::doctor {

namespace {

double mib(size_t bytes) { return static_cast<double>(bytes) / double(1 << 20); }

std::string telemetry_text(const hal::Telemetry& t) {
  std::string out;
  const auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (t.temperature_c) add(fmt::format("{:.0f} °C", *t.temperature_c));
  if (t.power_w) add(fmt::format("{:.0f} W", *t.power_w));
  if (t.clock_mhz) add(fmt::format("{:.0f} MHz", *t.clock_mhz));
  if (t.utilization) add(fmt::format("{:.0f}% busy", *t.utilization * 100));
  return out.empty() ? "no telemetry" : out;
}

}  // namespace

StepResult check_backend(hal::Device& device, const CheckOptions& options) {
  StepResult r{"backend", false, ""};
  if (Status st = device.default_stream().synchronize(); !st.ok()) {
    r.detail = "the device's stream does not synchronize: " + st.to_string();
    return r;
  }
  const hal::MemoryInfo mem = device.memory_info();
  if (mem.total_bytes == 0) {
    r.detail = "the device reports no memory";
    return r;
  }
  r.ok = true;
  r.detail = fmt::format("{}; {}; {:.0f} of {:.0f} MiB free; {}", options.runtime, device.description(),
                         mib(mem.free_bytes), mib(mem.total_bytes), telemetry_text(device.telemetry()));
  return r;
}

StepResult check_memory(hal::Device& device, const CheckOptions& options) {
  StepResult r{"memory", false, ""};
  const size_t n = options.memory_bytes;
  Result<hal::Buffer> buf = device.allocate(n);
  if (!buf.ok()) {
    r.detail = fmt::format("allocating {:.0f} MiB ({:.0f} MiB free): {}", mib(n), mib(device.memory_info().free_bytes),
                           buf.status().to_string());
    return r;
  }
  std::vector<uint32_t> pattern(n / sizeof(uint32_t)), back(pattern.size());
  std::mt19937 rng(7);
  for (uint32_t& w : pattern) w = rng();
  hal::Stream& s = device.default_stream();
  if (Status st = s.copy_to_device(buf->data(), pattern.data(), n); !st.ok()) {
    r.detail = "copying to the device: " + st.to_string();
    return r;
  }
  if (Status st = s.copy_to_host(back.data(), buf->data(), n); !st.ok()) {
    r.detail = "copying back to the host: " + st.to_string();
    return r;
  }
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (back[i] != pattern[i]) {
      r.detail = fmt::format("the round trip changed word {} of {} (0x{:08x} came back as 0x{:08x})", i, pattern.size(),
                             pattern[i], back[i]);
      return r;
    }
  }
  r.ok = true;
  r.detail = fmt::format("{:.0f} MiB allocated; a pattern went to the device and back unchanged", mib(n));
  return r;
}

StepResult check_bandwidth(hal::Device& device, const CheckOptions& options) {
  StepResult r{"bandwidth", false, ""};
  double gbs = 0;
  if (device.host_visible()) {
    gbs = measure_read_bandwidth_gbps(device.op_context().pool);
  } else {
    // The probe's three buffers: the memory step's size each, at most half the free memory in all.
    const size_t bytes = std::min(options.memory_bytes, device.memory_info().free_bytes / 6);
    Result<double> m = ops::measure_device_bandwidth_gbps(device, bytes);
    if (!m.ok()) {
      r.detail = "measuring: " + m.status().to_string();
      return r;
    }
    gbs = *m;
  }
  const chips::DeviceProfile* p = options.profile;
  if (!p || !p->bandwidth_gbs) {
    r.ok = gbs > 0;
    r.detail = fmt::format("{:.1f} GB/s; {}", gbs,
                           p ? "profile " + p->id + " has no bandwidth figure to compare" : "no profile to compare");
    return r;
  }
  const double fraction = gbs / *p->bandwidth_gbs;
  r.ok = fraction >= options.min_bandwidth_fraction;
  r.detail =
      fmt::format("{:.1f} GB/s, {:.0f}% of profile {}'s {:.0f} GB/s{}", gbs, fraction * 100, p->id, *p->bandwidth_gbs,
                  r.ok ? ""
                       : fmt::format(" (below {:.0f}%: check the memory population, the PCIe link or "
                                     "the power state)",
                                     options.min_bandwidth_fraction * 100));
  return r;
}

}  // namespace cai::doctor
