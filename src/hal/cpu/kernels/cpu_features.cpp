// Run-time ISA detection (__builtin_cpu_supports on x86-64, the kernel's HWCAP bits on ARM64, scalar elsewhere) and the
// active-ISA switch.
#include "hal/cpu/kernels/cpu_features.h"

#include <atomic>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif
#include <cstdlib>

#include "core/log.h"

namespace cai::hal::cpu {

namespace {

constexpr int kUnset = -1;
std::atomic<int> g_active{kUnset};

#if defined(__x86_64__)
// F16C (CPUID leaf 1, ECX bit 29): clang's __builtin_cpu_supports does not know the name.
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
#endif

CpuIsa detect() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) return CpuIsa::kAvx512;
  if (avx2) return CpuIsa::kAvx2;
#endif
#if defined(__aarch64__) && defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  const bool dotprod = (hwcap & HWCAP_ASIMD) && (hwcap & HWCAP_ASIMDDP);
  const bool i8mm = dotprod && (hwcap2 & HWCAP2_I8MM);
  if (i8mm && (sve_vector_bits() == 256 || sve_vector_bits() == 512)) return CpuIsa::kSve;
  if (i8mm) return CpuIsa::kI8mm;
  if (dotprod) return CpuIsa::kDotprod;
  if (hwcap & HWCAP_ASIMD) return CpuIsa::kNeon;
#endif
  return CpuIsa::kScalar;
}

bool arm_family(CpuIsa isa) {
  return isa == CpuIsa::kNeon || isa == CpuIsa::kDotprod || isa == CpuIsa::kI8mm || isa == CpuIsa::kSve;
}

// best_cpu_isa() lowered by CAI_CPU_ISA when it names a supported family.
CpuIsa initial_isa() {
  CpuIsa best = best_cpu_isa();
  const char* env = std::getenv("CAI_CPU_ISA");
  if (!env || !*env) return best;
  std::optional<CpuIsa> want = cpu_isa_from_name(env);
  if (!want) {
    CAI_LOG_WARN("CAI_CPU_ISA={} is not one of scalar|avx2|avx512|neon|dotprod|i8mm|sve; using {}", env,
                 cpu_isa_name(best));
    return best;
  }
  if (!cpu_isa_available(*want)) {
    CAI_LOG_WARN("CAI_CPU_ISA={}: this CPU only supports {}", env, cpu_isa_name(best));
    return best;
  }
  return *want;
}

}  // namespace

std::string_view cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
    case CpuIsa::kNeon: return "neon";
    case CpuIsa::kDotprod: return "dotprod";
    case CpuIsa::kI8mm: return "i8mm";
    case CpuIsa::kSve: return "sve";
  }
  return "?";
}

std::optional<CpuIsa> cpu_isa_from_name(std::string_view name) {
  for (CpuIsa isa :
       {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kNeon, CpuIsa::kDotprod, CpuIsa::kI8mm, CpuIsa::kSve})
    if (cpu_isa_name(isa) == name) return isa;
  return std::nullopt;
}

bool cpu_isa_available(CpuIsa isa) {
  const CpuIsa best = best_cpu_isa();
  return isa == CpuIsa::kScalar || (arm_family(isa) == arm_family(best) && isa <= best);
}

std::vector<CpuIsa> cpu_isas_of_this_architecture() {
#if defined(__x86_64__)
  return {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512};
#elif defined(__aarch64__)
  return {CpuIsa::kScalar, CpuIsa::kNeon, CpuIsa::kDotprod, CpuIsa::kI8mm, CpuIsa::kSve};
#else
  return {CpuIsa::kScalar};
#endif
}

int sve_vector_bits() {
#if defined(__aarch64__) && defined(__linux__)
  static const int bits = [] {
    if (!(getauxval(AT_HWCAP) & HWCAP_SVE)) return 0;
    const int vl = prctl(PR_SVE_GET_VL);  // bytes, with flags above PR_SVE_VL_LEN_MASK
    return vl < 0 ? 0 : 8 * (vl & PR_SVE_VL_LEN_MASK);
  }();
  return bits;
#else
  return 0;
#endif
}

CpuIsa best_cpu_isa() {
  static const CpuIsa best = detect();
  return best;
}

CpuIsa active_cpu_isa() {
  int v = g_active.load(std::memory_order_relaxed);
  if (v == kUnset) {
    int init = static_cast<int>(initial_isa());
    g_active.compare_exchange_strong(v, init);  // first caller wins; a racing set_active_cpu_isa() is kept
    v = g_active.load(std::memory_order_relaxed);
  }
  return static_cast<CpuIsa>(v);
}

Status set_active_cpu_isa(CpuIsa isa) {
  if (!cpu_isa_available(isa))
    return unsupported("CPU ISA {} is not available here (best: {})", cpu_isa_name(isa), cpu_isa_name(best_cpu_isa()));
  g_active.store(static_cast<int>(isa), std::memory_order_relaxed);
  return {};
}

}  // namespace cai::hal::cpu
