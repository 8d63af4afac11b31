// ASCII lower-casing, as file names and extensions are compared whatever their case (.TXT, .Hdf5).
#pragma once

#include <cctype>
#include <string>

namespace bertc::support {

inline std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace bertc::support
