// Ctrl-C (SIGINT) as a flag the `cai chat` loop polls, instead of the default of ending the process.
#pragma once

namespace cai::cli {

// Installs the SIGINT handler without SA_RESTART, so a read() of the terminal returns EINTR when Ctrl-C is pressed.
// The caller should have blocked SIGINT in every other thread (they inherit the mask they are created with), so the
// signal reaches this one.
void catch_interrupts();
// Whether Ctrl-C was pressed since the last call; clears the flag.
bool take_interrupt();

}  // namespace cai::cli
