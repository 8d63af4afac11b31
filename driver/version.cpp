// bertc's version (see version.h).
#include "driver/version.h"

namespace bertc::driver {

const char* bertc_version() { return BERTC_VERSION; }  // (CMake's project(VERSION), a compile definition)

}  // namespace bertc::driver
