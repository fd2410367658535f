// `cai detect` output (JSON and a human table) and the `--device auto` choice, both from one DetectReport.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "chips/detect.h"

namespace cai::chips {

// "0x10de" (digits = 4) / "0x030200" (digits = 6): lowercase, zero-padded.
std::string hex_id(uint32_t value, int digits);

// {"cpu": {...}, "accelerators": [{"pci_address", "vendor_id", "device_id", "profile", "backend",
// "backend_available", ...}], "backends": [{"name", "devices": [...]}]}
nlohmann::ordered_json report_json(const DetectReport& report);
// The same for people: the CPU line, one row per accelerator, then the loaded backends.
std::string report_table(const DetectReport& report);

struct AutoDevice {
  std::string device;  // a Registry::find_device spec: "cuda:0", or "cpu"
  std::string reason;  // one line for the log
};
// The device of an available accelerator backend with the most memory; else the CPU, saying why.
AutoDevice choose_auto_device(const DetectReport& report);

}  // namespace cai::chips
