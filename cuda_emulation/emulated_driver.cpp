// The emulated CUDA driver's rules (see emulated_driver.h). The error codes are cuda.h's; where
// NVIDIA documents which call returns which, that is followed, and where it does not (the code a
// forbidden call during capture gets), the choice is said beside it.
#include "cuda_emulation/emulated_driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "ptx/counts_words.h"

namespace bertc::cuda_emulation {
namespace {

constexpr uint64_t kAlignment = 256;  // cuMemAlloc's alignment (the Programming Guide's)
constexpr size_t kMostCounted = 100000;  // launches' counts kept between two takes (about 50 MiB)

// Which device pointers a launch's parameters may hold: the emulator sees every allocation.
uint64_t address(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Whether [p, p + bytes) lies inside one of `allocations` (base -> bytes).
bool within(const std::map<uint64_t, size_t>& allocations, uint64_t p, size_t bytes) {
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin()) return false;
  --it;
  return p + bytes <= it->first + it->second;
}

bool legacy(CUstream s) { return s == nullptr || s == CU_STREAM_LEGACY; }

uint64_t seed_from_environment() {
  const char* s = std::getenv("BERTC_EMULATED_SEED");
  return s && *s ? std::strtoull(s, nullptr, 10) : 1;
}

}  // namespace

Driver& Driver::get() {
  static Driver* driver = new Driver;  // (never destroyed: other libraries' destructors may still call in)
  return *driver;
}

CUresult Driver::init() {
  if (!initialised_) {
    profile_ = profile_from_environment(&no_gpu_);
    if (!profile_) std::fprintf(stderr, "bertc emulated CUDA driver: %s\n", no_gpu_.c_str());
    const uint64_t seed = seed_from_environment();
    order_.seed(seed);
    launch_seed_ = seed;
    initialised_ = true;
  }
  return profile_ ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult Driver::ready() const {
  if (!initialised_) return CUDA_ERROR_NOT_INITIALIZED;
  if (!profile_) return CUDA_ERROR_NO_DEVICE;
  return sticky_;
}

CUresult Driver::device_count(int* count) {
  if (!initialised_) return CUDA_ERROR_NOT_INITIALIZED;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = profile_ ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult Driver::device_get(CUdevice* device, int ordinal) {
  if (const CUresult rc = ready()) return rc;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult Driver::device_name(char* name, int length, CUdevice device) {
  if (const CUresult rc = ready()) return rc;
  if (!is_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (!name || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  // (the name says what it is: a program printing it must not pass it off as the GPU)
  const std::string text = fmt::format("{} (bertc's emulated driver)", profile_->title);
  std::snprintf(name, static_cast<size_t>(length), "%s", text.c_str());
  return CUDA_SUCCESS;
}

CUresult Driver::device_attribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (const CUresult rc = ready()) return rc;
  if (!is_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  const GpuProfile& p = *profile_;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = p.sm / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = p.sm % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = p.multiprocessors; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = static_cast<int>(p.shared_bytes_per_block); break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = static_cast<int>(p.shared_bytes_per_block_optin);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *value = static_cast<int>(p.shared_bytes_per_multiprocessor);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = static_cast<int>(p.threads_per_multiprocessor); break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = static_cast<int>(p.registers_per_block); break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = p.clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *value = 1; break;
    default:
      // (an attribute this emulation does not know: said, not guessed)
      std::fprintf(stderr, "bertc emulated CUDA driver: device attribute %d is not emulated\n", static_cast<int>(attribute));
      return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

CUresult Driver::device_total_memory(size_t* bytes, CUdevice device) {
  if (const CUresult rc = ready()) return rc;
  if (!is_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = profile_->memory_bytes;
  return CUDA_SUCCESS;
}

CUresult Driver::primary_context_retain(CUcontext* context, CUdevice device) {
  if (const CUresult rc = ready()) return rc;
  if (!is_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (!context) return CUDA_ERROR_INVALID_VALUE;
  ++primary_.retained;
  *context = &primary_;
  return CUDA_SUCCESS;
}

CUresult Driver::primary_context_release(CUdevice device) {
  if (const CUresult rc = ready()) return rc;
  if (!is_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  // (released more often than retained: the documentation's CUDA_ERROR_INVALID_CONTEXT)
  if (primary_.retained == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --primary_.retained;
  return CUDA_SUCCESS;
}

CUresult Driver::context_set_current(CUcontext context) {
  if (const CUresult rc = ready()) return rc;
  if (context != nullptr && (context != &primary_ || primary_.retained == 0)) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}

CUresult Driver::unsafe_during_capture() {
  std::vector<std::shared_ptr<Capture>> conflicting;
  for (const std::shared_ptr<Capture>& c : captures_) {
    const bool mine = c->thread == std::this_thread::get_id() && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    // (this thread's own mode is the default, global: any thread's global capture forbids it)
    if (mine || c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL) conflicting.push_back(c);
  }
  for (const std::shared_ptr<Capture>& c : conflicting) invalidate(c);
  return conflicting.empty() ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

void Driver::invalidate(const std::shared_ptr<Capture>& capture) { capture->invalidated = true; }

CUresult Driver::memory_allocate(CUdeviceptr* pointer, size_t bytes) {
  if (const CUresult rc = ready()) return rc;
  if (!pointer || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = unsafe_during_capture()) return rc;
  const uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (allocated_ + rounded > profile_->memory_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  allocated_ += rounded;
  device_allocations_[address(p)] = rounded;
  written_->track(address(p), rounded);  // (a fresh allocation holds whatever was there: initcheck's)
  for (CUmod_st* m : modules_) m->emulator.add_global(p, rounded);
  *pointer = address(p);
  return CUDA_SUCCESS;
}

CUresult Driver::memory_free(CUdeviceptr pointer) {
  if (const CUresult rc = ready()) return rc;
  if (pointer == 0) return CUDA_SUCCESS;
  const auto it = device_allocations_.find(pointer);
  if (it == device_allocations_.end()) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = unsafe_during_capture()) return rc;
  run_all();  // (work still queued may use it: cuMemFree waits for the device as the driver does)
  allocated_ -= it->second;
  written_->forget(pointer, it->second);
  device_allocations_.erase(it);
  for (CUmod_st* m : modules_) {
    m->emulator.clear_globals();
    for (const auto& [base, bytes] : device_allocations_) m->emulator.add_global(reinterpret_cast<void*>(base), bytes);
  }
  std::free(reinterpret_cast<void*>(pointer));
  return CUDA_SUCCESS;
}

CUresult Driver::memory_info(size_t* free, size_t* total) {
  if (const CUresult rc = ready()) return rc;
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  *total = profile_->memory_bytes;
  *free = profile_->memory_bytes - allocated_;
  return CUDA_SUCCESS;
}

CUresult Driver::host_allocate(void** pointer, size_t bytes, unsigned flags) {
  if (const CUresult rc = ready()) return rc;
  if (!pointer || bytes == 0 || flags > 7) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = unsafe_during_capture()) return rc;
  void* p = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  host_allocations_[address(p)] = bytes;
  *pointer = p;
  return CUDA_SUCCESS;
}

CUresult Driver::host_free(void* pointer) {
  if (const CUresult rc = ready()) return rc;
  const auto it = host_allocations_.find(address(pointer));
  if (it == host_allocations_.end()) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = unsafe_during_capture()) return rc;
  run_all();  // (a queued copy may still read it)
  host_allocations_.erase(it);
  std::free(pointer);
  return CUDA_SUCCESS;
}

bool Driver::pinned(const void* p, size_t bytes) const { return within(host_allocations_, address(p), bytes); }

bool Driver::device_memory(CUdeviceptr p, size_t bytes) const { return within(device_allocations_, p, bytes); }

CUstream_st* Driver::stream_of(CUstream stream, CUresult* rc) {
  *rc = CUDA_SUCCESS;
  if (stream == CU_STREAM_PER_THREAD) return &legacy_;  // (one host thread's work here: as the legacy stream)
  if (!legacy(stream)) {
    if (!streams_.count(stream)) {
      *rc = CUDA_ERROR_INVALID_HANDLE;
      return nullptr;
    }
    return stream;
  }
  // The legacy stream waits for every blocking stream: while one of them captures, using it would
  // make it depend on the capture (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, the capture invalidated).
  for (CUstream_st* s : streams_)
    if (s->capture && !(s->flags & CU_STREAM_NON_BLOCKING)) {
      invalidate(s->capture);
      *rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      return nullptr;
    }
  return &legacy_;
}

CUresult Driver::issue(CUstream_st* stream, Work work) {
  if (stream->capture) {
    Capture& c = *stream->capture;
    if (c.invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    auto node = std::make_unique<CUgraphNode_st>();
    node->work = std::move(work);
    node->after = stream->frontier;
    stream->frontier = {node.get()};
    c.graph->nodes.push_back(std::move(node));
    return CUDA_SUCCESS;
  }
  stream->pending.push_back({std::move(work), nullptr, 0, nullptr});
  return CUDA_SUCCESS;
}

CUresult Driver::copy_to_device_async(CUdeviceptr to, const void* from, size_t bytes, CUstream hstream) {
  if (const CUresult rc = ready()) return rc;
  if (!device_memory(to, bytes) || (!from && bytes)) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  if (pinned(from, bytes)) {
    // Pinned: read when the copy runs, so the caller must leave the bytes alone until then.
    return issue(s, {CU_GRAPH_NODE_TYPE_MEMCPY, [this, to, from, bytes] {
                       std::memcpy(reinterpret_cast<void*>(to), from, bytes);
                       written_->written(to, bytes);
                       return CUDA_SUCCESS;
                     },
                     "a copy to the device"});
  }
  // Pageable: staged when called (the caller may change its bytes once the call returns).
  if (s->capture) {  // (a graph's copy from pageable memory cannot be staged once for every launch)
    invalidate(s->capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(from),
                                                             static_cast<const unsigned char*>(from) + bytes);
  return issue(s, {CU_GRAPH_NODE_TYPE_MEMCPY, [this, to, staged] {
                     std::memcpy(reinterpret_cast<void*>(to), staged->data(), staged->size());
                     written_->written(to, staged->size());
                     return CUDA_SUCCESS;
                   },
                   "a copy to the device"});
}

CUresult Driver::copy_to_host_async(void* to, CUdeviceptr from, size_t bytes, CUstream hstream) {
  if (const CUresult rc = ready()) return rc;
  if (!device_memory(from, bytes) || (!to && bytes)) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  const bool to_pinned = pinned(to, bytes);
  if (!to_pinned && s->capture) {
    invalidate(s->capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (const CUresult issued = issue(s, {CU_GRAPH_NODE_TYPE_MEMCPY, [to, from, bytes] {
                                          std::memcpy(to, reinterpret_cast<const void*>(from), bytes);
                                          return CUDA_SUCCESS;
                                        },
                                        "a copy to the host"}))
    return issued;
  // To pageable memory the call returns once the copy is made (the documentation's synchronous
  // case): its stream runs up to it.
  if (!to_pinned) {
    run_until([s] { return s->pending.empty(); });
    return sticky_;
  }
  return CUDA_SUCCESS;
}

CUresult Driver::copy_on_device_async(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream hstream) {
  if (const CUresult rc = ready()) return rc;
  if (!device_memory(to, bytes) || !device_memory(from, bytes)) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  return issue(s, {CU_GRAPH_NODE_TYPE_MEMCPY, [this, to, from, bytes] {
                     std::memmove(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes);
                     written_->copied(to, from, bytes);
                     return CUDA_SUCCESS;
                   },
                   "a copy on the device"});
}

CUresult Driver::set_async(CUdeviceptr to, unsigned char byte, size_t bytes, CUstream hstream) {
  if (const CUresult rc = ready()) return rc;
  if (!device_memory(to, bytes)) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  return issue(s, {CU_GRAPH_NODE_TYPE_MEMSET, [this, to, byte, bytes] {
                     std::memset(reinterpret_cast<void*>(to), byte, bytes);
                     written_->written(to, bytes);
                     return CUDA_SUCCESS;
                   },
                   "a memset"});
}

CUresult Driver::module_load(CUmodule* module, const void* image, unsigned options, CUjit_option* keys, void** values) {
  if (const CUresult rc = ready()) return rc;
  if (!module || !image || (options && (!keys || !values))) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = unsafe_during_capture()) return rc;
  char* log = nullptr;
  size_t log_bytes = 0;
  for (unsigned i = 0; i < options; ++i) {
    if (keys[i] == CU_JIT_ERROR_LOG_BUFFER) log = static_cast<char*>(values[i]);
    if (keys[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) log_bytes = reinterpret_cast<uintptr_t>(values[i]);
  }
  auto say = [&](const std::string& text) {
    if (log && log_bytes > 0) std::snprintf(log, log_bytes, "%s", text.c_str());
    std::fprintf(stderr, "bertc emulated CUDA driver: %s\n", text.c_str());
  };
  // A cubin (ELF) or fatbinary holds machine code, which the emulator does not run: refused as a
  // driver refuses an image with no code for its GPU; PTX is what it JIT-compiles (here: runs).
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F') {
    say("a cubin's machine code cannot run on the PTX emulator: load the kernels' PTX");
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  try {
    ptx::Module parsed = ptx::parse_module(static_cast<const char*>(image), "module");
    if (parsed.sm > profile_->sm) {
      say(fmt::format("the PTX targets sm_{}, newer than the {} (sm_{})", parsed.sm, profile_->title, profile_->sm));
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    auto m = std::make_unique<CUmod_st>(std::move(parsed));
    for (const auto& [base, size] : device_allocations_) m->emulator.add_global(reinterpret_cast<void*>(base), size);
    m->emulator.check_global_initialization(written_);
    *module = m.get();
    modules_.insert(m.release());
    return CUDA_SUCCESS;
  } catch (const std::exception& e) {  // (ptx::Error: what the reader refuses, with its line)
    say(fmt::format("the PTX does not compile: {}", e.what()));
    return CUDA_ERROR_INVALID_PTX;
  }
}

CUresult Driver::module_function(CUfunction* function, CUmodule module, const char* name) {
  if (const CUresult rc = ready()) return rc;
  if (!function || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!modules_.count(module)) return CUDA_ERROR_INVALID_HANDLE;
  const ptx::Entry* entry = module->emulator.module().entry(name);
  if (!entry) return CUDA_ERROR_NOT_FOUND;
  functions_.push_back(std::make_unique<CUfunc_st>(CUfunc_st{module, entry}));
  *function = functions_.back().get();
  return CUDA_SUCCESS;
}

CUresult Driver::module_unload(CUmodule module) {
  if (const CUresult rc = ready()) return rc;
  if (!modules_.count(module)) return CUDA_ERROR_INVALID_HANDLE;
  if (const CUresult rc = unsafe_during_capture()) return rc;
  run_all();  // (queued launches of its kernels run first)
  std::erase_if(functions_, [module](const std::unique_ptr<CUfunc_st>& f) { return f->module == module; });
  modules_.erase(module);
  delete module;
  return CUDA_SUCCESS;
}

ptx::ArchLimits Driver::arch_limits() const {
  ptx::ArchLimits l;
  l.gpu = fmt::format("{} (sm_{})", profile_->title, profile_->sm);
  // (no cuFuncSetAttribute here to opt in past the default per-block shared memory)
  l.max_shared_bytes = profile_->shared_bytes_per_block;
  l.registers_per_block = profile_->registers_per_block;
  l.multiprocessors = static_cast<uint32_t>(profile_->multiprocessors);
  l.warps_per_multiprocessor = profile_->threads_per_multiprocessor / 32;
  return l;
}

CUresult Driver::launch(CUfunction f, const ptx::Dim3& grid, const ptx::Dim3& block, unsigned shared_bytes,
                        CUstream hstream, void** params, void** extra) {
  if (const CUresult rc = ready()) return rc;
  const bool known = std::any_of(functions_.begin(), functions_.end(),
                                 [f](const std::unique_ptr<CUfunc_st>& g) { return g.get() == f; });
  if (!known) return CUDA_ERROR_INVALID_HANDLE;
  if (params && extra) return CUDA_ERROR_INVALID_VALUE;  // (the documentation: one or the other)
  // Shapes a GPU refuses: CUDA_ERROR_INVALID_VALUE, as the driver answers them.
  if (grid.count() == 0 || block.count() == 0 || block.count() > 1024 || block.x > 1024 || block.y > 1024 ||
      block.z > 64 || grid.y > 65535 || grid.z > 65535)
    return CUDA_ERROR_INVALID_VALUE;
  // The parameters' bytes, as the entry's .param list lays them out.
  const ptx::Entry& entry = *f->entry;
  size_t total = 0;
  for (const ptx::Param& p : entry.params) total = std::max<size_t>(total, p.offset + p.bytes);
  std::vector<uint8_t> packed(total);
  if (params) {
    for (size_t i = 0; i < entry.params.size(); ++i)
      std::memcpy(packed.data() + entry.params[i].offset, params[i], entry.params[i].bytes);
  } else if (extra) {
    const void* buffer = nullptr;
    const size_t* size = nullptr;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = static_cast<const size_t*>(extra[i + 1]);
      else return CUDA_ERROR_INVALID_VALUE;
    }
    if (buffer && size) std::memcpy(packed.data(), buffer, std::min(*size, total));
  } else if (!entry.params.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  ptx::LaunchConfig config{grid, block, shared_bytes, launch_seed_, arch_limits()};
  const std::string name = entry.name;
  CUmod_st* module = f->module;
  return issue(s, {CU_GRAPH_NODE_TYPE_KERNEL, [this, module, name, packed, config] {
                     const ptx::LaunchCounts counts = module->emulator.launch(name, packed, config);
                     // (bounded: counting goes on after a profile's step, which nothing takes)
                     if (counting_ && counted_.size() < kMostCounted)
                       counted_.emplace_back(name, ptx::counts_to_words(counts));
                     return CUDA_SUCCESS;
                   },
                   "kernel " + name});
}

CUresult Driver::take_launch_counts(bertcEmulatedCountedLaunch each, void* user) {
  if (const CUresult rc = ready()) return rc;
  if (!each) return CUDA_ERROR_INVALID_VALUE;
  run_all();
  if (const CUresult rc = ready()) return rc;  // (a finding while running)
  for (const auto& [kernel, words] : std::exchange(counted_, {})) each(user, kernel.c_str(), words.data(), words.size());
  counting_ = true;
  return CUDA_SUCCESS;
}

CUresult Driver::library_kernel(CUstream hstream, std::string what, std::vector<bertcEmulatedAccess> accesses,
                                std::function<std::string()> run) {
  if (const CUresult rc = ready()) return rc;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  return issue(s, {CU_GRAPH_NODE_TYPE_KERNEL, [this, accesses, run] {
                     for (const bertcEmulatedAccess& a : accesses) check_access(a, false);
                     if (std::string why = run(); !why.empty()) throw std::runtime_error(why);
                     for (const bertcEmulatedAccess& a : accesses) check_access(a, true);
                     return CUDA_SUCCESS;
                   },
                   "kernel " + what});
}

void Driver::check_access(const bertcEmulatedAccess& access, bool after) {
  for (uint64_t i = 0; i < access.count; ++i) {
    const uint64_t at = access.base + i * access.stride;
    if (after) {
      if (access.writes) written_->written(at, access.bytes);
      continue;
    }
    const char* verb = access.writes ? "writes" : "reads";
    if (!device_memory(at, access.bytes))
      throw std::runtime_error(fmt::format("{} {} bytes at {:#x}, outside every allocation (an illegal address)", verb,
                                           access.bytes, at));
    if (access.writes) continue;
    if (const auto unwritten = written_->first_unwritten(at, access.bytes))
      throw std::runtime_error(fmt::format("reads byte {:#x} ({} bytes into an allocation of {}), which nothing wrote "
                                           "(an uninitialized read)",
                                           unwritten->address, unwritten->address - unwritten->base, unwritten->bytes));
  }
}

CUresult Driver::run_work(const Work& work) {
  try {
    return work.run();
  } catch (const std::exception& e) {
    // A kernel's finding (ptx::Error): said (a real GPU would say less), and, as a device fault
    // does, every call after it fails.
    std::fprintf(stderr, "bertc emulated CUDA driver: %s: %s\n", work.what.c_str(), e.what());
    sticky_ = CUDA_ERROR_LAUNCH_FAILED;
    return sticky_;
  }
}

void Driver::run_until(const std::function<bool()>& done) {
  std::vector<CUstream_st*> all(streams_.begin(), streams_.end());
  all.push_back(&legacy_);
  while (!done() && sticky_ == CUDA_SUCCESS) {
    // The streams whose next work may run: not waiting for an event's record still queued.
    std::vector<CUstream_st*> ready_streams;
    for (CUstream_st* s : all)
      if (!s->pending.empty() && (!s->pending.front().waits || s->pending.front().waits->done >= s->pending.front().generation))
        ready_streams.push_back(s);
    if (ready_streams.empty()) return;  // (nothing queued: every wait is for a record issued before it)
    CUstream_st* s = ready_streams[order_() % ready_streams.size()];
    CUstream_st::Op op = std::move(s->pending.front());
    s->pending.pop_front();
    if (op.work.run) run_work(op.work);
    if (op.records) ++op.records->done;
  }
}

CUresult Driver::stream_create(CUstream* stream, unsigned flags) {
  if (const CUresult rc = ready()) return rc;
  if (!stream || (flags & ~unsigned{CU_STREAM_NON_BLOCKING})) return CUDA_ERROR_INVALID_VALUE;
  auto s = std::make_unique<CUstream_st>();
  s->flags = flags;
  *stream = s.get();
  streams_.insert(s.release());
  return CUDA_SUCCESS;
}

CUresult Driver::stream_destroy(CUstream stream) {
  if (const CUresult rc = ready()) return rc;
  if (!streams_.count(stream)) return CUDA_ERROR_INVALID_HANDLE;
  // (its queued work still runs: the documentation lets a stream be destroyed with work pending)
  run_until([stream] { return stream->pending.empty(); });
  streams_.erase(stream);
  delete stream;
  return CUDA_SUCCESS;
}

CUresult Driver::stream_synchronize(CUstream hstream) {
  if (const CUresult rc = ready()) return rc;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  // Waiting for a capturing stream waits for work that is not scheduled: not allowed (the
  // Programming Guide's "Prohibited and Unhandled Operations"), and the capture is invalidated.
  if (s->capture) {
    invalidate(s->capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  run_until([s] { return s->pending.empty(); });
  return sticky_;
}

CUresult Driver::stream_wait_event(CUstream hstream, CUevent event, unsigned flags) {
  if (const CUresult rc = ready()) return rc;
  if (!events_.count(event) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  if (event->capture && !captures_.count(event->capture))
    return CUDA_ERROR_CAPTURED_EVENT;  // (last recorded in a capture that has ended: no work to wait for)
  if (event->capture) {
    // A captured event: the stream joins its capture (or, in it already, depends on its nodes).
    if (s->capture && s->capture != event->capture) {
      invalidate(s->capture);
      return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    if (event->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (!s->capture) {
      s->capture = event->capture;
      s->capture->streams.insert(s);
      s->frontier.clear();
    }
    for (CUgraphNode_st* n : event->nodes)
      if (std::find(s->frontier.begin(), s->frontier.end(), n) == s->frontier.end()) s->frontier.push_back(n);
    return CUDA_SUCCESS;
  }
  if (s->capture) {
    // A capturing stream waiting for work outside its capture: the isolation the guide forbids.
    invalidate(s->capture);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  s->pending.push_back({{}, event, event->issued, nullptr});  // (its latest record when called)
  return CUDA_SUCCESS;
}

CUresult Driver::event_create(CUevent* event, unsigned flags) {
  if (const CUresult rc = ready()) return rc;
  if (!event || flags > 0xf) return CUDA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<CUevent_st>();
  e->flags = flags;
  *event = e.get();
  events_.insert(e.release());
  return CUDA_SUCCESS;
}

CUresult Driver::event_record(CUevent event, CUstream hstream) {
  if (const CUresult rc = ready()) return rc;
  if (!events_.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  if (s->capture) {
    if (s->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    event->capture = s->capture;
    event->nodes = s->frontier;
    return CUDA_SUCCESS;
  }
  event->capture.reset();
  event->nodes.clear();
  ++event->issued;
  s->pending.push_back({{}, nullptr, 0, event});
  return CUDA_SUCCESS;
}

CUresult Driver::event_synchronize(CUevent event) {
  if (const CUresult rc = ready()) return rc;
  if (!events_.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  if (event->capture) {  // (its record is a graph's nodes, not scheduled work)
    invalidate(event->capture);
    return CUDA_ERROR_CAPTURED_EVENT;
  }
  const uint64_t until = event->issued;
  run_until([event, until] { return event->done >= until; });
  return sticky_;
}

CUresult Driver::event_destroy(CUevent event) {
  if (const CUresult rc = ready()) return rc;
  if (!events_.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  run_all();  // (a queued wait or record still names it)
  events_.erase(event);
  delete event;
  return CUDA_SUCCESS;
}

CUresult Driver::begin_capture(CUstream hstream, CUstreamCaptureMode mode) {
  if (const CUresult rc = ready()) return rc;
  if (legacy(hstream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // (not the legacy stream)
  if (!streams_.count(hstream)) return CUDA_ERROR_INVALID_HANDLE;
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  if (hstream->capture) return CUDA_ERROR_ILLEGAL_STATE;  // (capturing already)
  auto c = std::make_shared<Capture>();
  c->graph = std::make_unique<CUgraph_st>();
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = hstream;
  c->streams.insert(hstream);
  hstream->capture = c;
  hstream->frontier.clear();
  captures_.insert(c);
  return CUDA_SUCCESS;
}

CUresult Driver::end_capture(CUstream hstream, CUgraph* graph) {
  if (const CUresult rc = ready()) return rc;
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  if (!streams_.count(hstream) || !hstream->capture) return CUDA_ERROR_ILLEGAL_STATE;
  std::shared_ptr<Capture> c = hstream->capture;
  if (c->origin != hstream) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  // Every stream drawn in must have been joined back: its last nodes among what the origin's
  // last nodes depend on.
  std::set<CUgraphNode_st*> reached;
  std::vector<CUgraphNode_st*> todo = hstream->frontier;
  while (!todo.empty()) {
    CUgraphNode_st* n = todo.back();
    todo.pop_back();
    if (reached.insert(n).second) todo.insert(todo.end(), n->after.begin(), n->after.end());
  }
  bool unjoined = false;
  for (CUstream_st* s : c->streams)
    if (s != hstream)
      for (CUgraphNode_st* n : s->frontier) unjoined = unjoined || !reached.count(n);
  for (CUstream_st* s : c->streams) {
    s->capture.reset();
    s->frontier.clear();
  }
  captures_.erase(c);
  *graph = nullptr;
  if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (unjoined) return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  *graph = c->graph.release();
  return CUDA_SUCCESS;
}

CUresult Driver::graph_instantiate(CUgraphExec* exec, CUgraph graph) {
  if (const CUresult rc = ready()) return rc;
  if (!exec || !graph) return CUDA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<CUgraphExec_st>();
  std::map<const CUgraphNode_st*, size_t> index;
  for (const auto& n : graph->nodes) index[n.get()] = index.size();
  for (const auto& n : graph->nodes) {
    e->work.push_back(n->work);
    e->after.emplace_back();
    for (const CUgraphNode_st* d : n->after) e->after.back().push_back(index.at(d));
  }
  *exec = e.release();
  return CUDA_SUCCESS;
}

CUresult Driver::graph_launch(CUgraphExec exec, CUstream hstream) {
  if (const CUresult rc = ready()) return rc;
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc;
  CUstream_st* s = stream_of(hstream, &rc);
  if (!s) return rc;
  if (s->capture) return CUDA_ERROR_NOT_SUPPORTED;  // (a graph launched into a capture: not emulated)
  // One piece of stream work: the nodes in a seeded order their dependences allow.
  return issue(s, {CU_GRAPH_NODE_TYPE_GRAPH, [this, exec] {
                     const size_t n = exec->work.size();
                     std::vector<size_t> waiting(n);
                     std::vector<std::vector<size_t>> before(n);
                     for (size_t i = 0; i < n; ++i)
                       for (size_t d : exec->after[i]) ++waiting[i], before[d].push_back(i);
                     std::vector<size_t> ready_nodes;
                     for (size_t i = 0; i < n; ++i)
                       if (waiting[i] == 0) ready_nodes.push_back(i);
                     while (!ready_nodes.empty()) {
                       const size_t pick = order_() % ready_nodes.size();
                       const size_t i = ready_nodes[pick];
                       ready_nodes.erase(ready_nodes.begin() + static_cast<std::ptrdiff_t>(pick));
                       if (const CUresult r = run_work(exec->work[i])) return r;
                       for (size_t next : before[i])
                         if (--waiting[next] == 0) ready_nodes.push_back(next);
                     }
                     return CUDA_SUCCESS;
                   },
                   "a graph"});
}

CUresult Driver::graph_exec_destroy(CUgraphExec exec) {
  if (const CUresult rc = ready()) return rc;
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  run_all();  // (a queued launch of it may still run)
  delete exec;
  return CUDA_SUCCESS;
}

CUresult Driver::graph_destroy(CUgraph graph) {
  if (const CUresult rc = ready()) return rc;
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  delete graph;
  return CUDA_SUCCESS;
}

CUresult Driver::graph_nodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  if (const CUresult rc = ready()) return rc;
  if (!graph || !count) return CUDA_ERROR_INVALID_VALUE;
  if (nodes)
    for (size_t i = 0; i < std::min(*count, graph->nodes.size()); ++i) nodes[i] = graph->nodes[i].get();
  *count = graph->nodes.size();
  return CUDA_SUCCESS;
}

CUresult Driver::node_type(CUgraphNode node, CUgraphNodeType* type) {
  if (const CUresult rc = ready()) return rc;
  if (!node || !type) return CUDA_ERROR_INVALID_VALUE;
  *type = node->work.type;
  return CUDA_SUCCESS;
}

}  // namespace bertc::cuda_emulation
