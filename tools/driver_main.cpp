// main() of a model program: the driver with the model that BERTC_MODEL defined.
#include "tools/command_line.h"
#include "driver/process_setup.h"

namespace {

// Runs before every shared library's initializer: OpenBLAS starts its threads in its own, and they
// must block the stop signals as every thread of bertc does (driver/process_setup.h).
void block_stop_signals_first(int, char**, char**) { bertc::driver::block_stop_signals(); }
__attribute__((section(".preinit_array"), used)) void (*block_first)(int, char**, char**) = block_stop_signals_first;

}  // namespace

int main(int argc, char** argv) { return bertc::tools::run_command_line(argc, argv, bertc::frontend::model_definition()); }
