// What every reader's fuzz harness (tests/fuzz/fuzz_*.cpp) asserts of any bytes: the reader
// returns or throws a std::runtime_error whose message names the file; no crash, no sanitizer
// report, no other exception (a std::out_of_range or a json::exception that escapes is a size,
// index or field the reader did not check).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>

// The entry point of each harness: libFuzzer's, so that clang's -fsanitize=fuzzer can drive one,
// as mutation_main.cpp does otherwise.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace bertc::fuzz {

// Inputs some reader accepted since the start (the mutation driver keeps those to mutate further).
extern size_t accepted_inputs;

// Prints the reader, the defect and the input's size, then aborts: a crash to the fuzz driver.
[[noreturn]] void fail(const std::string& reader, const std::string& defect);

// Runs `read` and returns whether it accepted the input: a refusal is a std::runtime_error whose
// message contains `source` (the file name the reader was given); anything else fails.
template <typename Read>
bool accepted(const std::string& reader, const std::string& source, Read&& read) {
  try {
    read();
    ++accepted_inputs;
    return true;
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()).find(source) == std::string_view::npos)
      fail(reader, "a refusal that does not name the file '" + source + "': " + e.what());
    return false;
  } catch (const std::exception& e) {
    fail(reader, std::string("an exception that is not a refusal (") + typeid(e).name() + "): " + e.what());
  } catch (...) {
    fail(reader, "an exception of unknown type");
  }
}

// A file holding `bytes` under the process's scratch folder, for readers that take a path; the
// same path on every call with the same `name`.
std::filesystem::path scratch_file(std::string_view bytes, const std::string& name);

// `bytes` with the little-endian 64-bit word at `at` replaced (it must fit).
void put_u64(std::string& bytes, size_t at, uint64_t value);

}  // namespace bertc::fuzz
