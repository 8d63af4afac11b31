// Ending the process at once, without unwinding (a rank that must stop every rank now), while
// still leaving the records of a clean end: files registered here are emptied first.
#pragma once

namespace bertc::support {

// Empties `fd`'s file on an abrupt_exit (a run folder's lock, whose pid left in it reads as a
// process that was killed). Up to 8 at a time; async-signal-safe to act on.
void empty_on_abrupt_exit(int fd);
void forget_on_abrupt_exit(int fd);

// Empties the registered files (before an exit not made by abrupt_exit: MPI_Abort's).
void empty_registered_files();

// Empties the registered files, then _Exit(code).
[[noreturn]] void abrupt_exit(int code);

}  // namespace bertc::support
