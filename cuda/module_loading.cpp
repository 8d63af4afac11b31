// cuModuleLoadDataEx with the JIT's logs (see module_loading.h).
#include "cuda/module_loading.h"

#include <cstdint>
#include <vector>

#include "cuda/vendor_abi.h"

namespace bertc::cuda {

namespace {

constexpr size_t kLogBytes = 16384;

std::string until_nul(const std::vector<char>& buffer) {
  std::string text(buffer.data());  // (the driver NUL-terminates; the buffer's last byte stays 0)
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

ModuleLoad load_module(LoadDataExFn load, void** module, const void* image) {
  std::vector<char> error(kLogBytes + 1, '\0'), info(kLogBytes + 1, '\0');
  int options[] = {abi::kJitErrorLogBuffer, abi::kJitErrorLogBufferSizeBytes, abi::kJitInfoLogBuffer,
                   abi::kJitInfoLogBufferSizeBytes};
  // The sizes travel as the option's pointer-sized value itself (cuda.h: "unsigned int").
  void* values[] = {error.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(kLogBytes)), info.data(),
                    reinterpret_cast<void*>(static_cast<uintptr_t>(kLogBytes))};
  ModuleLoad out;
  out.result = load(module, image, 4, options, values);
  out.error_log = until_nul(error);
  out.info_log = until_nul(info);
  return out;
}

std::string jit_log_text(const ModuleLoad& load) {
  std::string log = load.error_log.empty() ? load.info_log : load.error_log;
  if (log.empty()) return "";
  constexpr size_t kKept = 4000;
  if (log.size() > kKept) log = log.substr(0, kKept) + " [...]";
  return "; the driver's JIT said: " + log;
}

}  // namespace bertc::cuda
