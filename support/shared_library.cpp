// dlopen/dlsym wrapper that also reports which file the dynamic linker picked.
#include "support/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include <utility>

namespace bertc::support {

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

SharedLibrary::~SharedLibrary() {
  if (handle_) dlclose(handle_);
}

SharedLibrary SharedLibrary::open(const std::string& name, std::string* error, Lifetime lifetime) {
  SharedLibrary lib;
  lib.handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | (lifetime == Lifetime::Process ? RTLD_NODELETE : 0));
  if (!lib.handle_) {
    if (error) *error = dlerror();
    return lib;
  }
  link_map* map = nullptr;
  lib.path_ = (dlinfo(lib.handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) ? map->l_name : name;
  return lib;
}

void* SharedLibrary::symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

}  // namespace bertc::support
