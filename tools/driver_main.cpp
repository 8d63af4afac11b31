// main() of a model program: the driver with the model that BERTC_MODEL defined.
#include "tools/driver.h"
#include "train/stop_request.h"

namespace {

// Runs before every shared library's initializer: OpenBLAS starts its threads in its own, and they
// must block the stop signals as every thread of bertc does (train/stop_request.h).
void block_stop_signals_first(int, char**, char**) { bertc::train::block_stop_signals(); }
__attribute__((section(".preinit_array"), used)) void (*block_first)(int, char**, char**) = block_stop_signals_first;

}  // namespace

int main(int argc, char** argv) { return bertc::tools::run_driver(argc, argv, bertc::frontend::model_definition()); }
