// Files written so that a crash at any moment leaves either the old file or the new one (kernel
// caches, checkpoints, outputs).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bertc::support {

// Writes `bytes` to a temporary file beside `path`, fsyncs it, renames it over `path` and fsyncs
// the folder. Throws support::FileError (errno's code and `path`: file_errors.h) naming the file and
// the failing step.
// `executable`: made with mode 0755 instead of 0644 (less the umask), before the rename, so that
// the file is never there without it.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes, bool executable = false);

// As write_file_atomically, but never over a file: an output that must be new (a vocabulary)
// may have been made by something else in the hours its computation took, after the command
// checked its name. The temporary is linked to `path` (link fails where a name exists; rename
// would replace it); FileError with EEXIST, and nothing left behind, when `path` is there.
void write_new_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Where a write of `path` goes first, beside it: ".NAME.tmp.PID", NAME cut short (ending in '~')
// where the whole would pass the 255 bytes a file name may have: an output whose own name fits
// must not fail for its temporary's.
std::filesystem::path temporary_beside(const std::filesystem::path& path);

// Removes `folder`, a staging or scratch folder of `what` (a command of bertc's) that a stopped run
// left, when it holds only plain files whose names `own` accepts (what that command writes there);
// returns the bytes it held. Anything else in it — a folder, a link, a file of another name — is
// not bertc's: nothing is removed, and a std::runtime_error names what is there and the fix (move
// it out).
uint64_t remove_left_folder(const std::filesystem::path& folder, const std::function<bool(const std::string&)>& own,
                            const std::string& what);

// The folders on the way to `folder` (itself included) that are not there yet, innermost first:
// what a command that makes `folder` removes again when it fails (--output a/b/c with no a makes
// a too).
std::vector<std::filesystem::path> missing_folders(const std::filesystem::path& folder);
// Where a folder `to` is made whole before place_folder puts it there: beside it while `to` is not
// there; inside it (hidden, ".NAME.tmp.PID") when `to` is a folder already, whose files then go
// in: the user's folder is kept, with its mode, owner, ACLs, and a mount point's file system.
std::filesystem::path staging_folder_for(const std::filesystem::path& to);
// Puts the folder `from` (made by staging_folder_for(to)) in place as `to`: beside it, renamed
// whole; inside it, its files moved up one by one, never over a name, and `from` removed. True when
// placed; false when `to` is there and holds anything else (another process put something there
// meanwhile), which is kept as it is, `from` too. Throws FileError naming `to` on any other failure.
bool place_folder(const std::filesystem::path& from, const std::filesystem::path& to);

// Removes those of `made` (missing_folders' list, innermost first) that are empty: a failed command
// takes away the folders it made, never what another process put in them meanwhile.
void remove_made_folders(const std::vector<std::filesystem::path>& made);

// Removes the temporaries write_file_atomically (and write_new_file_atomically) is writing right
// now, calling `removed` with each one's path: for a process that ends at once (a second stop
// signal), which would otherwise leave a half-written checkpoint of up to gigabytes behind. Safe
// in a signal handler (no lock, no allocation).
void remove_temporaries_being_written(void (*removed)(const char* path));

}  // namespace bertc::support
