// The Host device (see host_device.h).
#include "runtime/host_device.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include "codegen/launch_limits.h"
#include "ir/out_of_memory.h"
#include "runtime/host_call_sums.h"

namespace bertc::runtime {

namespace {

std::uint64_t block_order_seed_from_environment() {
  const char* text = std::getenv("BERTC_BLOCK_ORDER_SEED");
  if (!text || !*text) return 1;
  char* end = nullptr;
  errno = 0;
  const unsigned long long seed = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || text[0] == '-')
    throw std::invalid_argument(std::string("BERTC_BLOCK_ORDER_SEED=") + text +
                                " is not a seed: give a non-negative integer (0: blocks in grid order)");
  return seed;
}

}  // namespace

HostDevice::HostDevice(std::filesystem::path cache, int sm, codegen::ThreadOrder order)
    : cache_(std::move(cache)), sm_(sm), order_(order), block_order_seed_(block_order_seed_from_environment()) {}
HostDevice::~HostDevice() = default;

void* HostDevice::allocate(size_t bytes, std::string_view what) {
  void* p = poisoned_block(bytes, what);
  allocated_ += bytes;
  return p;
}

void* HostDevice::allocate_host(size_t bytes, std::string_view what) { return poisoned_block(bytes, what); }

void* HostDevice::poisoned_block(size_t bytes, std::string_view what) {
  constexpr size_t kAlign = 256;
  try {
    blocks_.push_back(std::make_unique<unsigned char[]>(bytes + kAlign));
  } catch (const std::bad_alloc&) {
    throw ir::OutOfMemory("host", what, bytes, name());
  }
  unsigned char* p = blocks_.back().get();
  p += (kAlign - reinterpret_cast<uintptr_t>(p) % kAlign) % kAlign;
  std::memset(p, 0xff, bytes);  // poisoned (NaN as floats) until written, as a GPU's memory is garbage
  return p;
}

// A recorded graph: the work in the order it was issued.
struct HostGraph : DeviceGraph {
  std::vector<std::function<void()>> work;
  GraphCensus counted;
  GraphCensus census() const override { return counted; }
};

void HostDevice::issue(std::function<void()> work, int64_t GraphCensus::*kind) {
  if (!recording_) {
    work();
    return;
  }
  recording_->work.push_back(std::move(work));
  ++(recording_->counted.*kind);
}

void HostDevice::refuse_while_recording(const char* what) const {
  // As a CUDA stream capture fails on a synchronous copy: a recorded graph cannot hold host data.
  if (recording_) throw std::logic_error(std::string(what) + " while recording a device graph");
}

size_t host_available_bytes() {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t available = static_cast<size_t>(::sysconf(_SC_AVPHYS_PAGES)) * page;
  // What this process may still map under its address-space limit (ulimit -v), and what its
  // cgroup (a container, a Slurm job) may still use: either can be far below the machine's free memory.
  rlimit limit{};
  size_t mapped_pages = 0;
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      (std::ifstream("/proc/self/statm") >> mapped_pages)) {
    const size_t mapped = mapped_pages * page, allowed = static_cast<size_t>(limit.rlim_cur);
    available = std::min(available, allowed > mapped ? allowed - mapped : 0);
  }
  size_t most = 0, used = 0;
  if ((std::ifstream("/sys/fs/cgroup/memory.max") >> most) && (std::ifstream("/sys/fs/cgroup/memory.current") >> used))
    available = std::min(available, most > used ? most - used : 0);  // ("max", no limit, reads as no number)
  return available;
}

void HostDevice::upload(void* device, const void* host, size_t bytes) {
  refuse_while_recording("upload");
  std::memcpy(device, host, bytes);
}

void HostDevice::download(void* host, const void* device, size_t bytes) {
  refuse_while_recording("download");
  std::memcpy(host, device, bytes);
}

void HostDevice::upload_async(void* device, const void* host, size_t bytes) {
  refuse_while_recording("upload");
  std::memcpy(device, host, bytes);
}

void HostDevice::fill(void* device, unsigned char byte, size_t bytes) {
  issue([=] { std::memset(device, byte, bytes); }, &GraphCensus::sets);
}

void HostDevice::copy(void* to, const void* from, size_t bytes) {
  issue([=] { std::memmove(to, from, bytes); }, &GraphCensus::copies);
}

CollectiveOpening HostDevice::open_collective(distributed::Communicator& comm, double /*timeout_seconds*/) {
  return {std::make_unique<HostCallSums>(*this, comm), "", ""};
}

std::vector<double> HostDevice::time_each(const std::vector<std::function<void()>>& works) {
  refuse_while_recording("timing");
  std::vector<double> seconds;
  for (const auto& work : works) {
    const auto start = std::chrono::steady_clock::now();
    work();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return seconds;
}

std::unique_ptr<DeviceGraph> HostDevice::record(const std::function<void()>& body) {
  if (recording_) throw std::logic_error("recording a device graph inside another");
  auto graph = std::make_unique<HostGraph>();
  recording_ = graph.get();
  try {
    body();
  } catch (...) {
    recording_ = nullptr;
    throw;
  }
  recording_ = nullptr;
  return graph;
}

void HostDevice::replay(DeviceGraph& graph) {
  refuse_while_recording("replaying a graph");
  for (const auto& work : dynamic_cast<HostGraph&>(graph).work) work();
}

// The emulation runs each kernel's source compiled for the CPU; a GPU image is nothing it can run.
void HostDevice::use_images(std::map<std::string, codegen::GpuImage> /*images*/, const std::string& /*compiler_version*/) {}

void HostDevice::load(const std::vector<const codegen::KernelSpec*>& kernels) {
  std::vector<const codegen::KernelSpec*> fresh;
  for (const codegen::KernelSpec* k : kernels)
    if (!k->source.empty() && !entries_.count(k->name)) fresh.push_back(k);
  if (fresh.empty()) return;
  libraries_.push_back(std::make_unique<codegen::HostKernelLibrary>(
      codegen::compile_for_host(codegen::host_source(fresh), cache_, emulator_.api())));
  for (const codegen::KernelSpec* k : fresh) entries_[k->name] = {libraries_.back()->entry(k->name), libraries_.back().get()};
}

void HostDevice::launch(const codegen::KernelSpec& k, void** args) {
  // What a GPU of the arch would refuse is refused here too (the emulation would run any shape).
  if (const auto problem = codegen::launch_problem(k, sm_))
    throw std::runtime_error(
        fmt::format("kernel {} ({}): a GPU would refuse its launch: {}", k.name, k.label, *problem));
  // args[i] points at argument i (as cuLaunchKernel takes them); host entries take the values,
  // read now (a recorded launch keeps them, as a CUDA Graph's kernel node does).
  std::vector<void*> values;
  for (size_t i = 0; i < k.params.size(); ++i) values.push_back(*static_cast<void**>(args[i]));
  const auto it = entries_.find(k.name);
  if (it == entries_.end()) throw std::logic_error("kernel " + k.name + " was not loaded");
  const Loaded loaded = it->second;
  issue([this, &k, loaded, values]() mutable {
    loaded.library->install(emulator_.api());  // another Host device may have loaded the same library file
    emulator_.launch(k.name, loaded.entry, values.data(), {k.grid, k.block, k.cooperative, order_, block_order_seed_});
  }, &GraphCensus::kernels);
}

void HostDevice::library_product(const codegen::LibraryProductArgs& args, const void* first, const void* second, void* c) {
  // cuBLAS sets itself up on its first product (kernels, heuristics), which a stream capture
  // cannot hold: a plan must have issued a product eagerly before it records one.
  if (recording_ && !products_issued_)
    throw std::logic_error("cuBLAS's first product inside a device graph capture: run the plan once eagerly first");
  if (!recording_) products_issued_ = true;
  issue([=] { codegen::run_library_product_on_host(args, first, second, c); }, &GraphCensus::kernels);
}

}  // namespace bertc::runtime
