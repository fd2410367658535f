/* A TCG plugin for qemu-aarch64 (user mode) that counts the guest instructions a program executes: each translated
   block adds its instruction count to one counter every time it runs (an inline add, no callback), and the total is
   printed to stderr at exit as "instructions executed: N". The counter is not atomic: run the program with one
   thread. scripts/arm64-insn-count.sh builds it for the host and loads it with `qemu-aarch64 -plugin`.

   QEMU's plugin API (version 1, QEMU 4.2 to 8.x) is declared here, the few calls this file makes, because Debian
   ships no header for it. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info_t;
typedef void (*tb_translated_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*at_exit_cb)(qemu_plugin_id_t id, void* userdata);
enum { kInlineAddU64 = 0 }; /* QEMU_PLUGIN_INLINE_ADD_U64 */

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_translated_cb cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, int op, void* ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, at_exit_cb cb, void* userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t executed;

static void on_translated(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, kInlineAddU64, &executed, qemu_plugin_tb_n_insns(tb));
}

static void on_exit(qemu_plugin_id_t id, void* userdata) {
  (void)id;
  (void)userdata;
  fprintf(stderr, "instructions executed: %" PRIu64 "\n", executed);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t* info,
                                                               int argc, char** argv) {
  (void)info;
  (void)argc;
  (void)argv;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translated);
  qemu_plugin_register_atexit_cb(id, on_exit, NULL);
  return 0;
}
