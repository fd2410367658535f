// Device profiles: what CAI knows about one chip (facts with their sources, and the policies it applies there),
// read from one JSON file per chip under data/chips/. Unknown facts stay empty; every consumer copes with that.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace cai::chips {

// How the generic engine treats this chip. Absent fields keep the engine's defaults.
struct ChipPolicies {
  std::string backend;   // the CAI backend plugin that serves it ("cpu", "cuda", "hip", ...); "" = none yet
  std::string kv_dtype;  // KV cache element type ("f16", "bf16", "q8_0", ...); "" = the device's default
  // Offload KV layers to host memory when the device's free memory after weights falls below this fraction of what
  // the requested context needs (0..1); empty = never offload.
  std::optional<double> host_offload_below;
  std::vector<int64_t> pool_length_buckets;  // prompt-length bucket edges for separate pools; empty = one pool
  bool expert_prewarm = false;               // touch every MoE expert's weights at load
  bool sync_launch = false;                  // wait for each kernel launch (chips whose async queues misbehave)
  std::optional<double> thermal_limit_c;     // step budget halves above this temperature
};

// What CAI itself achieved on this chip with one backend and weight type, from `cai bench`: decode bytes/s over the
// bandwidth the planner divides by, prefill FLOP/s over the chip's peak (the planner's own byte and FLOP counts). The
// planner uses it in place of its default assumptions (docs/chips.md#measured-efficiency).
struct MeasuredEfficiency {
  std::string backend;  // "cpu", "cuda", ...
  std::string weights;  // the model's main weight type: "q4_0", "q8_0", "bf16", ...
  int threads = 0;      // CPU entries: the threads it was measured with; 0 = any
  std::optional<double> decode, prefill;
  std::string source;  // the command, machine and date it came from
};

struct DeviceProfile {
  std::string id;  // "h200", "ascend-910b4", "cpu-x86-64": the file name without .json
  std::string vendor;
  std::string name;
  std::optional<uint16_t> pci_vendor_id;
  std::vector<uint16_t> pci_device_ids;        // empty with a pci_class = any device of that vendor and class
  std::optional<uint32_t> pci_class;           // 24-bit class code (0x030200 3D controller, 0x120000 processing accel)
  std::vector<std::string> runtime_libraries;  // sonames probed with dlopen ("libcudart.so.12", "libascendcl.so")
  std::string stack;
  std::optional<double> memory_gib;
  std::optional<double> bandwidth_gbs;
  std::optional<double> sram_mib;
  std::optional<double> bf16_tflops;
  std::optional<double> int8_tops;
  std::optional<bool> fp8;
  std::string interconnect;
  // The card's peer link bandwidth in GB/s, each direction (half a quoted bidirectional figure): what the planner's
  // communication term divides by. Empty: communication is not modelled for this chip.
  std::optional<double> interconnect_gbs;
  std::string collectives;
  std::string smi_tool;
  std::string
      k8s_resource;  // the Kubernetes resource its vendor's device plugin registers ("nvidia.com/gpu"); "" = unknown
  std::string notes;
  std::vector<std::string> sources;
  ChipPolicies policies;
  std::vector<MeasuredEfficiency> measured_efficiency;
  std::string file;  // the file it was read from, for error messages
};

// Parses one profile; errors name `file` and the offending field ("data/chips/h200.json: memory_gib: ...").
Result<DeviceProfile> parse_profile(const std::string& json_text, const std::string& file);
// One profile file (any name: `cai bench --save-profile` writes copies); errors as parse_profile's, or io_error.
Result<DeviceProfile> load_profile(const std::string& path);
// Every *.json in `dir`, sorted by id; a malformed file fails the whole load, naming it.
Result<std::vector<DeviceProfile>> load_profiles(const std::string& dir);
// $CAI_CHIPS_DIR, else <exe dir>/../share/cai/chips when installed, else the source tree's data/chips.
std::string default_profile_dir();
const DeviceProfile* find_profile(const std::vector<DeviceProfile>& profiles, const std::string& id);

}  // namespace cai::chips
