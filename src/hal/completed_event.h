// CompletedEvent: the Event of a stream whose work is done by the time it returns (the CPU's eager stream, a remote
// device's stand-in that runs nothing): already done, nothing to wait for.
#pragma once

#include "hal/hal.h"

namespace cai::hal {

class CompletedEvent final : public Event {
 public:
  Status wait() override { return {}; }
  bool done() const override { return true; }
};

}  // namespace cai::hal
