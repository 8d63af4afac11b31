// Fuzz harness of the TOML config reader (frontend/config.h): parse_config and validate.
#include "frontend/config.h"
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bertc::fuzz::accepted("config", "fuzz.toml",
                        [&] { bertc::frontend::validate(bertc::frontend::parse_config(text, "fuzz.toml")); });
  return 0;
}
