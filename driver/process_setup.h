// What a bertc process sets up before any command runs: the stop signals, the BLAS library's
// threads, and file size limits said as errors.
#pragma once

namespace bertc::driver {

// Blocks the stop signals in the calling thread (run_folder/stop_request.h); main()'s first act, before
// any shared library's initializer starts a thread that would inherit them unblocked.
void block_stop_signals();

// Before parsing: one BLAS thread under an address-space limit (which may execute the program
// again, at once, with `argv`), the stop signals taken (before any thread is started), and a write
// past a file size limit (ulimit -f) failing with EFBIG, which every writer reports and cleans up
// after as it does a full disk, instead of SIGXFSZ killing the process halfway through a file.
void set_up_process(char** argv);

}  // namespace bertc::driver
