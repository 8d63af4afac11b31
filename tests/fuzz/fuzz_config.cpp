// Fuzz harness of the TOML config reader (run_config/config.h): parse_config and validate.
#include "run_config/config.h"
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bertc::fuzz::accepted("config", "fuzz.toml",
                        [&] { bertc::run_config::validate(bertc::run_config::parse_config(text, "fuzz.toml")); });
  return 0;
}
