// What a refused call says: the message of the `Error` it threw, or "(accepted)" when it threw
// nothing (any other exception goes on to fail the test).
#pragma once

#include <functional>
#include <string>

namespace bertc::testing {

template <typename Error>
std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace bertc::testing
