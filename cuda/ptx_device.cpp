// The PTX device (see ptx_device.h).
#include "cuda/ptx_device.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/launch_limits.h"
#include "cuda/nvrtc_compiler.h"
#include "codegen/render.h"
#include "ir/kernel_family.h"
#include "ptx/module.h"

namespace bertc::cuda {

using runtime::DeviceCapabilities;
using runtime::GraphCensus;
using runtime::HostDevice;
using runtime::InRunSums;
using runtime::LaunchFootprint;
using runtime::PtxLaunchRecord;

// The NVRTC compilers for the arch: PTX for the emulator, and cubins where one reaches the arch
// (ptxas's register counts: the launch limit and occupancy the driver applies).
struct PtxDevice::Compilers {
  cuda::NvrtcCompiler ptx;
  std::optional<cuda::NvrtcCompiler> cubin;
};

// A loaded kernel: its PTX in an emulator of its own, with every allocation registered.
struct PtxDevice::Loaded {
  ptx::Emulator emulator;
  ptx::ArchLimits limits;
  uint32_t register_bound = 0;  // (where no cubin gives ptxas's count: the launch bounds')
};

namespace {

// The kernel source's lines a finding names (ptx::Error's, from NVRTC's .loc), as they read: what
// the user looks at (`bertc compile --emit cuda` prints the whole source).
std::string source_lines_text(const codegen::KernelSpec& k, const ptx::Error& e) {
  if (e.source_line == 0) return "";
  const std::string source = codegen::device_source(k);
  auto line = [&](int n) {
    std::istringstream in(source);
    std::string text;
    for (int i = 0; i < n; ++i)
      if (!std::getline(in, text)) return std::string("(past the source's end)");
    text.erase(0, std::min(text.size(), text.find_first_not_of(" \t")));
    return text;
  };
  std::string out = fmt::format("\n  source line {}: {}", e.source_line, line(e.source_line));
  if (e.caller_line) out += fmt::format("\n  inlined at line {}: {}", e.caller_line, line(e.caller_line));
  return out;
}

ptx::Dim3 dim3_of(const codegen::Dim3& d) {
  return {static_cast<uint32_t>(d.x), static_cast<uint32_t>(d.y), static_cast<uint32_t>(d.z)};
}

// The driver's limits for sm_`sm` (its first GPU of the table), with the kernel's registers.
ptx::ArchLimits arch_limits(int sm, uint32_t registers) {
  const codegen::LaunchLimits l = codegen::launch_limits(sm);
  return {l.gpu, static_cast<uint64_t>(l.shared_bytes_per_block), static_cast<uint32_t>(l.registers_per_block),
          registers, static_cast<uint32_t>(l.multiprocessors), static_cast<uint32_t>(l.warps_per_multiprocessor)};
}

std::optional<cuda::NvrtcCompiler> cubin_compiler(int sm) {
  try {
    cuda::NvrtcCompiler c = cuda::NvrtcCompiler::for_arch(sm);
    if (!c.ptx()) return c;
  } catch (const std::runtime_error&) {  // (none reaches the arch as a cubin: registers not known, said)
  }
  return std::nullopt;
}

}  // namespace

ptx::Latencies ptx_latencies(int sm) {
  const auto l = codegen::launch_limits(sm).latency;
  auto cycles = [](int n) { return static_cast<uint32_t>(n); };
  return {cycles(l.alu), cycles(l.special), cycles(l.shared), cycles(l.global), cycles(l.mma), cycles(l.barrier)};
}

PtxDevice::PtxDevice(std::filesystem::path cache, int sm)
    : HostDevice(cache, sm),
      sm_(sm == 0 ? 61 : sm),
      cache_(std::move(cache)),
      compilers_(std::make_unique<Compilers>(Compilers{cuda::NvrtcCompiler::ptx_for_arch(sm_), cubin_compiler(sm_)})) {
  compilers_->ptx.add_line_info();  // (findings then name the kernel source's line)
  registers_known_ = compilers_->cubin.has_value();
}

PtxDevice::~PtxDevice() = default;

std::string PtxDevice::name() const {
  return fmt::format("PTX emulator (sm_{}, PTX of NVRTC {}; not a GPU)", sm_, compilers_->ptx.version());
}

DeviceCapabilities PtxDevice::capabilities() const {
  return {false, sm_, "the PTX emulator runs bertc's own kernels, not cuBLAS's", InRunSums::HostCalls};
}

void* PtxDevice::allocate(size_t bytes, std::string_view what) {
  void* p = HostDevice::allocate(bytes, what);
  memory_.emplace_back(p, bytes);
  for (auto& [name, loaded] : loaded_) loaded->emulator.add_global(p, bytes);
  if (sample_blocks_ == 0) written_->track(reinterpret_cast<uint64_t>(p), bytes);
  return p;
}

void PtxDevice::upload(void* device, const void* host, size_t bytes) {
  written_->written(reinterpret_cast<uint64_t>(device), bytes);
  HostDevice::upload(device, host, bytes);
}

void PtxDevice::upload_async(void* device, const void* host, size_t bytes) {
  written_->written(reinterpret_cast<uint64_t>(device), bytes);
  HostDevice::upload_async(device, host, bytes);
}

// (marked when issued: the first run of a plan issues its work in order, eagerly, and replays
// repeat it)
void PtxDevice::fill(void* device, unsigned char byte, size_t bytes) {
  written_->written(reinterpret_cast<uint64_t>(device), bytes);
  HostDevice::fill(device, byte, bytes);
}

void PtxDevice::copy(void* to, const void* from, size_t bytes) {
  written_->copied(reinterpret_cast<uint64_t>(to), reinterpret_cast<uint64_t>(from), bytes);
  HostDevice::copy(to, from, bytes);
}

void PtxDevice::use_images(std::map<std::string, codegen::GpuImage> /*images*/, const std::string& /*compiler_version*/) {}

void PtxDevice::load(const std::vector<const codegen::KernelSpec*>& kernels) {
  // (a compiled program's products in cuBLAS: refused before anything runs, as the CUDA device
  // refuses them without a cuBLAS; a config's plans keep off cuBLAS here: device_render_target)
  const auto library =
      std::count_if(kernels.begin(), kernels.end(), [](const codegen::KernelSpec* k) { return k->library.has_value(); });
  if (library > 0)
    throw std::runtime_error(fmt::format("the program runs {} matrix product(s) in cuBLAS, and {}: compile it again with "
                                         "--matmul generated (bertc compile CONFIG --matmul generated -o FILE.bertx)",
                                         library, capabilities().no_library));
  std::vector<codegen::KernelSource> sources;
  std::set<std::string> seen;
  for (const codegen::KernelSpec* k : kernels)
    if (!k->source.empty() && !loaded_.count(k->name) && seen.insert(k->name).second)
      sources.push_back({k->name, codegen::device_source(*k)});
  if (sources.empty()) return;
  std::map<std::string, uint32_t> registers;
  if (compilers_->cubin)
    for (const codegen::GpuImage& image : cuda::compile_all(*compilers_->cubin, sources, cache_))
      registers[image.name] = static_cast<uint32_t>(image.ptxas.registers);
  for (const codegen::GpuImage& image : cuda::compile_all(compilers_->ptx, sources, cache_)) {
    const auto counted = registers.find(image.name);  // (none: no cubin, the launch bounds' cap below)
    auto loaded = std::make_unique<Loaded>(
        Loaded{ptx::Emulator(ptx::parse_module(image.image, image.name)),
               arch_limits(sm_, counted == registers.end() ? 0 : counted->second)});
    if (counted == registers.end())
      if (const ptx::Entry* entry = loaded->emulator.module().entry(image.name))
        loaded->register_bound =  // (64 K: a block's most, a multiprocessor's too on every GPU here)
            ptx::launch_bounds_registers(*entry, loaded->limits.registers_per_block);
    for (const auto& [base, bytes] : memory_) loaded->emulator.add_global(base, bytes);
    loaded->emulator.check_global_initialization(written_);
    loaded_[image.name] = std::move(loaded);
  }
}

void PtxDevice::launch(const codegen::KernelSpec& k, void** args) { issue_launch(k, args, nullptr); }

void PtxDevice::launch_within(const codegen::KernelSpec& k, void** args, const LaunchFootprint& footprint) {
  issue_launch(k, args, &footprint);
}

void PtxDevice::issue_launch(const codegen::KernelSpec& k, void** args, const LaunchFootprint* footprint) {
  // (said as the Host and CUDA devices say it; the emulator's own check is the driver's, by PTX)
  if (const auto problem = codegen::launch_problem(k, sm_))
    throw std::runtime_error(fmt::format("kernel {} ({}): a GPU would refuse its launch: {}", k.name, k.label, *problem));
  const auto it = loaded_.find(k.name);
  if (it == loaded_.end()) throw std::logic_error("kernel " + k.name + " was not loaded");
  Loaded* loaded = it->second.get();
  // args[i] points at argument i, pointer-sized (as the Host device reads them); the entry's
  // .param list says each one's size.
  std::vector<uint64_t> values;
  for (size_t i = 0; i < k.params.size(); ++i) values.push_back(reinterpret_cast<uint64_t>(*static_cast<void**>(args[i])));
  std::vector<ptx::Buffer> buffers;
  std::vector<std::pair<uint64_t, uint64_t>> fresh;
  if (footprint) {
    for (const LaunchFootprint::Buffer& b : footprint->buffers)
      buffers.push_back({reinterpret_cast<uint64_t>(b.base), b.bytes, b.what});
    for (const LaunchFootprint::Buffer& b : footprint->fresh) fresh.emplace_back(reinterpret_cast<uint64_t>(b.base), b.bytes);
  }
  issue(
      [this, &k, loaded, values, buffers = std::move(buffers), fresh = std::move(fresh)] {
        PtxLaunchRecord record{k.name, k.label, std::string(ir::enum_name(k.family)), k.op_index,
                               loaded->limits.kernel_registers, loaded->register_bound, {}, false};
        const bool sampled = sample_blocks_ > 0 && codegen::blocks_do_alike_work(k.family) && !k.work_follows_data;
        if (const PtxLaunchRecord* first = sampled ? counted_before(k) : nullptr) {
          record.counts = first->counts, record.repeat = true;
          this->record(std::move(record));
          return;
        }
        // (blocks and warps shuffled by the seed: a kernel that is right gives the same in any order)
        ptx::LaunchConfig config{dim3_of(k.grid), dim3_of(k.block), 0, seed_, loaded->limits};
        config.latencies = ptx_latencies(sm_);  // (the arch's first GPU's: its projections are latency-aware)
        config.approx = approx_;
        config.resident_blocks = resident_blocks_;
        // (a family whose blocks' work is the data's runs whole, every launch: a sample would count
        // its heavy blocks as the grid's, e.g. scatter_add's heads of runs of 2048 equal token types)
        if (sampled) config.sample_blocks = sample_blocks_;
        config.global_initcheck = sample_blocks_ == 0;
        config.buffers = buffers;
        for (const auto& [base, bytes] : fresh) written_->forget(base, bytes);  // (each replay too)
        try {
          record.counts = loaded->emulator.launch(k.name, loaded->emulator.pack_params(k.name, values), config);
        } catch (const ptx::Error& e) {
          throw std::runtime_error(fmt::format("kernel {} ({}) on the PTX emulator for sm_{}: {}{}", k.name, k.label,
                                               sm_, e.what(), source_lines_text(k, e)));
        }
        this->record(std::move(record));
      },
      &GraphCensus::kernels);
}

void PtxDevice::record(PtxLaunchRecord r) {
  if (launches_.size() < kMaxLaunchRecords) launches_.push_back(std::move(r));
  else ++unrecorded_;
}

const PtxLaunchRecord* PtxDevice::counted_before(const codegen::KernelSpec& k) const {
  const ptx::Dim3 grid = dim3_of(k.grid), block = dim3_of(k.block);
  for (const PtxLaunchRecord& r : launches_)
    if (!r.repeat && r.kernel == k.name && r.counts.blocks == grid.count() &&
        r.counts.block_threads == block.count())
      return &r;
  return nullptr;
}

void PtxDevice::library_product(const codegen::LibraryProductArgs&, const void*, const void*, void*) {
  throw std::logic_error("a cuBLAS product on the PTX device, whose capabilities say it runs none");
}

}  // namespace bertc::cuda
