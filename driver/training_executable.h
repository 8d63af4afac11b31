// Self-contained training executables (bertc compile --executable): this program's own file with
// a compiled program (.bertx bytes) appended, then the program's size and a magic. Run, the
// executable finds the program in itself and trains it as bertc train FILE.bertx would.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace bertc::driver {

// Writes the running program's executable with `bertx` (encode_bertx's bytes) appended to `path`,
// atomically, executable (mode 0755 less the umask). Throws std::runtime_error naming the file on failure.
void write_training_executable(const std::filesystem::path& path, std::string_view bertx);

// The .bertx bytes appended to the executable `path` (by default the running one), nullopt when
// it carries none (bertc itself, or any other file). Throws std::runtime_error naming the file
// when the trailer is there but the program is cut short.
std::optional<std::string> embedded_program(const std::filesystem::path& path = "/proc/self/exe");

}  // namespace bertc::driver
