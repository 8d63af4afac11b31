// A dlopen'ed shared library: how bertc reaches NVRTC and the CUDA driver without linking them,
// so its binaries start on machines that have neither.
#pragma once

#include <string>

namespace bertc::support {

class SharedLibrary {
 public:
  SharedLibrary() = default;
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  // Whether the library may be unloaded when its last SharedLibrary goes.
  enum class Lifetime {
    Scoped,
    // Stays loaded for the whole process (RTLD_NODELETE): a driver or cuBLAS, once initialized,
    // owns threads and state that its unloading would leave behind, or crash.
    Process,
  };

  // Loads `name` (a soname searched the usual way, or a path); on failure returns an empty
  // library and puts dlerror()'s text in *error.
  static SharedLibrary open(const std::string& name, std::string* error, Lifetime lifetime = Lifetime::Scoped);

  bool loaded() const { return handle_ != nullptr; }
  // The file actually loaded (after the dynamic linker's search).
  const std::string& path() const { return path_; }
  // The symbol, or nullptr.
  void* symbol(const char* name) const;

  template <typename Fn>
  Fn function(const char* name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace bertc::support
