// bertc's version, from CMake's project(VERSION): what --version, a training executable's --help
// and the records of compiled programs say.
#pragma once

namespace bertc::driver {

const char* bertc_version();

}  // namespace bertc::driver
