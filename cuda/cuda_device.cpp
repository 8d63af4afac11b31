// The CUDA device over the dlopen'ed driver API and cuBLAS (see cuda_device.h). The values of
// cuda.h, library_types.h and cublas_api.h it passes are cuda/vendor_abi.h's.
#include "cuda/cuda_device.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/launch_limits.h"
#include "codegen/library_gemm.h"
#include "cuda/nvrtc_compiler.h"
#include "ir/out_of_memory.h"
#include "support/shared_library.h"
#include "cuda/cublas_library.h"
#include "cuda/driver_counts.h"
#include "cuda/module_loading.h"
#include "cuda/nccl_sums.h"
#include "cuda/cuda_driver.h"
#include "cuda/vendor_abi.h"

namespace bertc::cuda {

using runtime::DeviceCapabilities;
using runtime::DeviceGraph;
using runtime::DeviceRequest;
using runtime::GraphCensus;
using runtime::InRunSums;

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;  // CUcontext, CUmodule, CUfunction, CUstream, cublasHandle_t

using namespace abi;  // (the header values bertc passes, cuda/vendor_abi.h)
struct CudaDevice::Api {
  support::SharedLibrary cuda;
  CublasProbe cublas;  // found when the device opens (one the driver runs), created when first needed
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(Handle*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(Handle);
  LoadDataExFn cuModuleLoadDataEx;
  CUresult (*cuModuleGetFunction)(Handle*, Handle, const char*);
  CUresult (*cuModuleUnload)(Handle);
  CUresult (*cuStreamDestroy)(Handle);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
  CUresult (*cuMemGetInfo)(size_t*, size_t*);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, Handle);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, Handle);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, Handle);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, Handle);
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle, void**,
                             void**);
  CUresult (*cuStreamCreate)(Handle*, unsigned);
  CUresult (*cuStreamSynchronize)(Handle);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuStreamBeginCapture)(Handle, int);
  CUresult (*cuStreamEndCapture)(Handle, Handle*);
  CUresult (*cuGraphInstantiateWithFlags)(Handle*, Handle, unsigned long long);
  CUresult (*cuGraphLaunch)(Handle, Handle);
  CUresult (*cuGraphExecDestroy)(Handle);
  CUresult (*cuGraphDestroy)(Handle);
  CUresult (*cuGraphGetNodes)(Handle, Handle*, size_t*);
  CUresult (*cuGraphNodeGetType)(Handle, int*);
  CUresult (*cuEventCreate)(Handle*, unsigned);
  CUresult (*cuEventRecord)(Handle, Handle);
  CUresult (*cuEventSynchronize)(Handle);
  CUresult (*cuEventElapsedTime)(float*, Handle, Handle);
  CUresult (*cuEventDestroy)(Handle);
  CUresult (*cuStreamWaitEvent)(Handle, Handle, unsigned);
  int (*cublasCreate)(Handle*) = nullptr;
  int (*cublasDestroy)(Handle) = nullptr;
  int (*cublasSetStream)(Handle, Handle) = nullptr;
  int (*cublasSetWorkspace)(Handle, void*, size_t) = nullptr;
  int (*cublasGemmStridedBatchedEx)(Handle, int, int, int, int, int, const void*, const void*, int, int, long long,
                                    const void*, int, int, long long, const void*, void*, int, int, long long, int, int,
                                    int) = nullptr;

  CudaDeviceInfo info;
  int driver_version = 0;  // cuDriverGetVersion's: which NVRTC's output this driver loads
  int kernel_arch = 0;     // the arch whose kernels run: the GPU's, or an older one's as PTX
  bool timed = false;      // the driver times work (cuEventElapsedTime answers)
  CUdevice device = 0;
  Handle context = nullptr, stream = nullptr, blas = nullptr;
  Handle side = nullptr, forked = nullptr, joined = nullptr;  // the side stream and its two events
  std::vector<CUdeviceptr> allocations;
  std::vector<void*> host_allocations;
  size_t allocated = 0;
  std::vector<Handle> modules;
  std::map<std::string, Handle> functions;
  std::optional<std::filesystem::path> cache;
  std::optional<std::map<std::string, codegen::GpuImage>> given_images;  // use_images(): no compiling
  std::unique_ptr<DriverCounts> counts;  // where the driver gives its kernels' counts

  void check(CUresult rc, const std::string& what) const {
    if (rc == 0) return;
    const char* text = nullptr;
    if (cuGetErrorString) cuGetErrorString(rc, &text);
    throw std::runtime_error(fmt::format("CUDA: {} failed: {} ({})", what, text ? text : "unknown error", rc));
  }

  void ensure_blas();
  // The images of `sources`: compiled by NVRTC (through the cache), or taken from given_images.
  std::vector<codegen::GpuImage> compile(const std::vector<codegen::KernelSource>& sources) const;
  std::vector<codegen::GpuImage> images_of(const std::vector<codegen::KernelSource>& sources) const;

  template <typename Fn>
  void bind(Fn& fn, const support::SharedLibrary& lib, const char* symbol) {
    fn = lib.function<Fn>(symbol);
    if (!fn) throw std::runtime_error(fmt::format("{} lacks {} (a driver or cuBLAS older than CUDA 12?)", lib.path(), symbol));
  }
};

namespace {

// cuBLAS's cudaDataType of a matrix type (codegen::library_product_args allows these three).
int cuda_type(ir::DType t) {
  if (t == ir::DType::F32) return kCudaR32F;
  if (t == ir::DType::F16) return kCudaR16F;
  if (t == ir::DType::BF16) return kCudaR16BF;
  throw std::invalid_argument(fmt::format("cuBLAS takes no {} matrices", ir::dtype_name(t)));
}

// Whether the driver times work: two events recorded on the stream and the time between them
// asked for (a driver that keeps no time, as bertc's emulated one, refuses the question).
bool driver_times_work(CudaDevice::Api& a) {
  Handle first = nullptr, second = nullptr;
  a.check(a.cuEventCreate(&first, 0), "cuEventCreate");
  a.check(a.cuEventCreate(&second, 0), "cuEventCreate");
  a.check(a.cuEventRecord(first, a.stream), "cuEventRecord");
  a.check(a.cuEventRecord(second, a.stream), "cuEventRecord");
  a.check(a.cuEventSynchronize(second), "cuEventSynchronize");
  float ms = 0;
  const bool timed = a.cuEventElapsedTime(&ms, first, second) == 0;
  a.cuEventDestroy(first);
  a.cuEventDestroy(second);
  return timed;
}

}  // namespace

CudaDevice::CudaDevice(const DeviceRequest& request) : api_(std::make_unique<Api>()) {
  Api& a = *api_;
  a.cache = request.kernel_cache;
  int ordinal = request.ordinal;
  const int sm = request.sm;
  const CudaDriverProbe probe = probe_cuda_driver();
  // One visible GPU is every rank's own (CUDA_VISIBLE_DEVICES per rank, Slurm's --gpus-per-task).
  if (probe.devices.size() == 1) ordinal = 0;
  if (probe.devices.empty())
    throw std::runtime_error(fmt::format("--device cuda: no usable GPU ({}): {}", probe.error, request.instead));
  if (probe.devices.size() <= static_cast<size_t>(ordinal))
    throw std::runtime_error(fmt::format("GPU {} is wanted (a data-parallel rank takes the GPU of its local rank), but "
                                         "this machine shows {}: start at most {} ranks per machine, or give each "
                                         "rank its GPU with CUDA_VISIBLE_DEVICES",
                                         ordinal, probe.devices.size(), probe.devices.size()));
  a.info = probe.devices[static_cast<size_t>(ordinal)];
  a.driver_version = probe.version;
  if (sm > a.info.arch)
    throw std::runtime_error(fmt::format("the program is for sm_{}, newer than {} (sm_{}): {}", sm, a.info.name,
                                         a.info.arch, fmt::format(fmt::runtime(request.older_gpu), a.info.arch)));
  a.kernel_arch = sm == 0 ? a.info.arch : sm;
  std::string error;
  a.cuda = open_cuda_driver(&error);
  if (!a.cuda.loaded())
    throw std::runtime_error(fmt::format("--device cuda: no CUDA driver ({}): {}", error, request.instead));
  a.bind(a.cuInit, a.cuda, "cuInit");
  a.bind(a.cuDeviceGet, a.cuda, "cuDeviceGet");
  a.bind(a.cuDevicePrimaryCtxRetain, a.cuda, "cuDevicePrimaryCtxRetain");
  a.bind(a.cuDevicePrimaryCtxRelease, a.cuda, "cuDevicePrimaryCtxRelease_v2");
  a.bind(a.cuCtxSetCurrent, a.cuda, "cuCtxSetCurrent");
  a.bind(a.cuModuleLoadDataEx, a.cuda, "cuModuleLoadDataEx");
  a.bind(a.cuModuleGetFunction, a.cuda, "cuModuleGetFunction");
  a.bind(a.cuModuleUnload, a.cuda, "cuModuleUnload");
  a.bind(a.cuStreamDestroy, a.cuda, "cuStreamDestroy_v2");
  a.bind(a.cuMemAlloc, a.cuda, "cuMemAlloc_v2");
  a.bind(a.cuMemFree, a.cuda, "cuMemFree_v2");
  a.bind(a.cuMemcpyHtoDAsync, a.cuda, "cuMemcpyHtoDAsync_v2");
  a.bind(a.cuMemcpyDtoHAsync, a.cuda, "cuMemcpyDtoHAsync_v2");
  a.bind(a.cuMemsetD8Async, a.cuda, "cuMemsetD8Async");
  a.bind(a.cuMemcpyDtoDAsync, a.cuda, "cuMemcpyDtoDAsync_v2");
  a.bind(a.cuLaunchKernel, a.cuda, "cuLaunchKernel");
  a.bind(a.cuStreamCreate, a.cuda, "cuStreamCreate");
  a.bind(a.cuStreamSynchronize, a.cuda, "cuStreamSynchronize");
  a.bind(a.cuGetErrorString, a.cuda, "cuGetErrorString");
  a.bind(a.cuMemHostAlloc, a.cuda, "cuMemHostAlloc");
  a.bind(a.cuMemGetInfo, a.cuda, "cuMemGetInfo_v2");
  a.bind(a.cuMemFreeHost, a.cuda, "cuMemFreeHost");
  a.bind(a.cuStreamBeginCapture, a.cuda, "cuStreamBeginCapture_v2");
  a.bind(a.cuStreamEndCapture, a.cuda, "cuStreamEndCapture");
  a.bind(a.cuGraphInstantiateWithFlags, a.cuda, "cuGraphInstantiateWithFlags");
  a.bind(a.cuGraphLaunch, a.cuda, "cuGraphLaunch");
  a.bind(a.cuGraphExecDestroy, a.cuda, "cuGraphExecDestroy");
  a.bind(a.cuGraphDestroy, a.cuda, "cuGraphDestroy");
  a.bind(a.cuGraphGetNodes, a.cuda, "cuGraphGetNodes");
  a.bind(a.cuGraphNodeGetType, a.cuda, "cuGraphNodeGetType");
  a.bind(a.cuEventCreate, a.cuda, "cuEventCreate");
  a.bind(a.cuEventRecord, a.cuda, "cuEventRecord");
  a.bind(a.cuEventSynchronize, a.cuda, "cuEventSynchronize");
  a.bind(a.cuEventElapsedTime, a.cuda, "cuEventElapsedTime");
  a.bind(a.cuEventDestroy, a.cuda, "cuEventDestroy_v2");
  a.bind(a.cuStreamWaitEvent, a.cuda, "cuStreamWaitEvent");
  a.check(a.cuInit(0), "cuInit");
  a.check(a.cuDeviceGet(&a.device, ordinal), "cuDeviceGet");
  a.check(a.cuDevicePrimaryCtxRetain(&a.context, a.device), "cuDevicePrimaryCtxRetain");
  a.check(a.cuCtxSetCurrent(a.context), "cuCtxSetCurrent");
  a.check(a.cuStreamCreate(&a.stream, kStreamNonBlocking), "cuStreamCreate");
  a.timed = driver_times_work(a);
  a.counts = DriverCounts::of_driver(a.cuda);
  a.cublas = find_cublas(a.driver_version);
}

// Torn down in the reverse order of set-up, everything before the context it lives in: cuBLAS's
// handle (it holds device memory and streams of its own), the modules, the memory, the stream.
// The libraries themselves stay loaded for the process (SharedLibrary::Lifetime::Process).
// Recorded graphs belong to the plans, which go before their device.
CudaDevice::~CudaDevice() {
  Api& a = *api_;
  if (!a.context) return;
  a.cuCtxSetCurrent(a.context);
  if (a.stream) a.cuStreamSynchronize(a.stream);
  if (a.blas) a.cublasDestroy(a.blas);
  for (Handle m : a.modules) a.cuModuleUnload(m);
  for (CUdeviceptr p : a.allocations) a.cuMemFree(p);
  for (void* p : a.host_allocations) a.cuMemFreeHost(p);
  if (a.side) a.cuStreamSynchronize(a.side);
  for (Handle e : {a.forked, a.joined})
    if (e) a.cuEventDestroy(e);
  if (a.side) a.cuStreamDestroy(a.side);
  if (a.stream) a.cuStreamDestroy(a.stream);
  a.cuDevicePrimaryCtxRelease(a.device);
}

std::string CudaDevice::name() const {
  const Api& a = *api_;
  return a.kernel_arch == a.info.arch ? fmt::format("{} (sm_{})", a.info.name, a.info.arch)
                                      : fmt::format("{} (sm_{}), running sm_{}'s kernels as PTX", a.info.name,
                                                    a.info.arch, a.kernel_arch);
}
DeviceCapabilities CudaDevice::capabilities() const {
  const Api& a = *api_;
  return {true, a.kernel_arch,
          a.cublas.library.loaded()
              ? ""
              : fmt::format("no cuBLAS that this driver runs was found (tried {}); set BERTC_CUBLAS to a libcublas.so",
                            fmt::join(a.cublas.tried, "; ")),
          InRunSums::SideQueue, kNcclReserveBytes, a.timed};
}
runtime::CollectiveOpening CudaDevice::open_collective(distributed::Communicator& comm, double timeout_seconds) {
  return open_nccl_sums(*this, comm, timeout_seconds);
}
void* CudaDevice::stream() const { return api_->stream; }

void* CudaDevice::side_stream() {
  Api& a = *api_;
  if (a.side) return a.side;
  // (only ordering is wanted of these events)
  a.check(a.cuStreamCreate(&a.side, kStreamNonBlocking), "cuStreamCreate (side stream)");
  a.check(a.cuEventCreate(&a.forked, kEventDisableTiming), "cuEventCreate");
  a.check(a.cuEventCreate(&a.joined, kEventDisableTiming), "cuEventCreate");
  return a.side;
}

// A wait takes the event's latest record at the time it is issued, so one event serves every
// fork (and one every join): each record is waited for at once.
void CudaDevice::fork() {
  Api& a = *api_;
  side_stream();
  a.check(a.cuEventRecord(a.forked, a.stream), "cuEventRecord (fork)");
  a.check(a.cuStreamWaitEvent(a.side, a.forked, 0), "cuStreamWaitEvent (fork)");
}

void CudaDevice::join() {
  Api& a = *api_;
  side_stream();
  a.check(a.cuEventRecord(a.joined, a.side), "cuEventRecord (join)");
  a.check(a.cuStreamWaitEvent(a.stream, a.joined, 0), "cuStreamWaitEvent (join)");
}

void* CudaDevice::allocate(size_t bytes, std::string_view what) {
  CUdeviceptr p = 0;
  const CUresult rc = api_->cuMemAlloc(&p, bytes);
  if (rc == kCudaErrorOutOfMemory) throw ir::OutOfMemory("GPU", what, bytes, name());
  api_->check(rc, fmt::format("cuMemAlloc of {} bytes", bytes));
  api_->allocations.push_back(p);
  api_->allocated += bytes;
  return reinterpret_cast<void*>(p);  // cuMemAlloc aligns to 256 bytes at least
}

void CudaDevice::upload(void* device, const void* host, size_t bytes) {
  api_->check(api_->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(device), host, bytes, api_->stream), "upload");
  synchronize();  // the host buffer may go away when this returns
}

void CudaDevice::download(void* host, const void* device, size_t bytes) {
  api_->check(api_->cuMemcpyDtoHAsync(host, reinterpret_cast<CUdeviceptr>(device), bytes, api_->stream), "download");
  synchronize();
}

void* CudaDevice::allocate_host(size_t bytes, std::string_view what) {
  void* p = nullptr;
  const CUresult rc = api_->cuMemHostAlloc(&p, std::max<size_t>(bytes, 1), 0);
  if (rc == kCudaErrorOutOfMemory) throw ir::OutOfMemory("pinned host", what, bytes, name());
  api_->check(rc, fmt::format("cuMemHostAlloc of {} bytes", bytes));
  api_->host_allocations.push_back(p);
  return p;
}

void CudaDevice::upload_async(void* device, const void* host, size_t bytes) {
  api_->check(api_->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(device), host, bytes, api_->stream), "upload");
}

void CudaDevice::fill(void* device, unsigned char byte, size_t bytes) {
  api_->check(api_->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(device), byte, bytes, api_->stream), "memset");
}

void CudaDevice::copy(void* to, const void* from, size_t bytes) {
  api_->check(api_->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(to), reinterpret_cast<CUdeviceptr>(from), bytes,
                                      api_->stream),
              "device copy");
}

void CudaDevice::load(const std::vector<const codegen::KernelSpec*>& kernels) {
  Api& a = *api_;
  std::vector<codegen::KernelSource> sources;
  std::set<std::string> seen;
  for (const codegen::KernelSpec* k : kernels)
    if (k->library) a.ensure_blas();  // now, not inside a graph capture (cublasCreate cannot be captured)
  for (const codegen::KernelSpec* k : kernels)
    if (!k->source.empty() && seen.insert(k->name).second) sources.push_back({k->name, codegen::device_source(*k)});
  for (const codegen::GpuImage& image : a.given_images ? a.images_of(sources) : a.compile(sources)) {
    Handle module = nullptr, function = nullptr;
    const ModuleLoad loaded = load_module(a.cuModuleLoadDataEx, &module, image.image.c_str());
    // A compiled program's cubins where the driver runs none (bertc's emulated driver runs PTX only).
    if (loaded.result == kCudaErrorNoBinaryForGpu && a.given_images && !image.ptx)
      throw std::runtime_error(fmt::format("this driver ({}) loads no cubin of the program's kernels (kernel {}{}): "
                                           "compile the program with its kernels as PTX (bertc compile CONFIG --arch "
                                           "sm_{} --images ptx -o FILE.bertx), which the driver compiles itself",
                                           a.info.name, image.name, jit_log_text(loaded), a.kernel_arch));
    a.check(loaded.result, fmt::format("loading kernel {} ({} for sm_{}){}", image.name,
                                       image.ptx ? "PTX, compiled by the driver's JIT" : "a cubin", a.kernel_arch,
                                       jit_log_text(loaded)));
    a.modules.push_back(module);
    a.check(a.cuModuleGetFunction(&function, module, image.name.c_str()), "finding kernel " + image.name);
    a.functions[image.name] = function;
  }
}

void CudaDevice::use_images(std::map<std::string, codegen::GpuImage> images, const std::string& nvrtc_version) {
  Api& a = *api_;
  // Refused before anything loads: cuModuleLoadDataEx would fail kernel by kernel, saying only
  // CUDA_ERROR_UNSUPPORTED_PTX_VERSION or NO_BINARY_FOR_GPU.
  for (const auto& [name, image] : images)
    if (!cuda::driver_loads(nvrtc_version, a.driver_version, image.ptx))
      throw std::runtime_error(fmt::format(
          "the program's kernels were compiled by NVRTC {} (as {}), and this driver supports CUDA {}.{}, too old to load "
          "them: update the driver, or compile the program with an NVRTC no newer than the driver (BERTC_NVRTC=PATH "
          "bertc compile ...)",
          nvrtc_version, image.ptx ? "PTX" : "cubins", a.driver_version / 1000, a.driver_version % 1000 / 10));
  a.given_images = std::move(images);
}

// BERTC_CUDA_PTX=1: the driver is handed PTX to compile itself rather than NVRTC's cubins (its
// JIT, as for a GPU newer than NVRTC knows; bertc's emulated driver runs PTX only).
bool driver_compiles_ptx() {
  const char* v = std::getenv("BERTC_CUDA_PTX");
  return v && std::string(v) == "1";
}

std::vector<codegen::GpuImage> CudaDevice::Api::compile(const std::vector<codegen::KernelSource>& sources) const {
  const cuda::NvrtcCompiler compiler = kernel_arch == info.arch && !driver_compiles_ptx()
                                              ? cuda::NvrtcCompiler::for_arch(info.arch, driver_version)
                                              : cuda::NvrtcCompiler::ptx_for_arch(kernel_arch, driver_version);
  return cuda::compile_all(compiler, sources, cache);
}

std::vector<codegen::GpuImage> CudaDevice::Api::images_of(const std::vector<codegen::KernelSource>& sources) const {
  std::vector<codegen::GpuImage> out;
  for (const codegen::KernelSource& s : sources) {
    const auto it = given_images->find(s.name);
    if (it == given_images->end())
      throw std::runtime_error(fmt::format("kernel {} has no compiled image in the program: compile it again", s.name));
    // A cubin runs on its own arch only; PTX is compiled by the driver for the GPU present.
    if (!it->second.ptx && kernel_arch != info.arch)
      throw std::runtime_error(fmt::format("the program was compiled for sm_{} and this GPU ({}) is sm_{}: compile it "
                                           "for this GPU (bertc compile CONFIG --arch sm_{} -o FILE.bertx)",
                                           kernel_arch, info.name, info.arch, info.arch));
    out.push_back(it->second);
  }
  return out;
}

void CudaDevice::launch(const codegen::KernelSpec& k, void** args) {
  Api& a = *api_;
  const auto it = a.functions.find(k.name);
  if (it == a.functions.end()) throw std::logic_error("kernel " + k.name + " was not loaded");
  if (a.counts) a.counts->note(k);
  if (const auto problem = codegen::launch_problem(k, a.kernel_arch))  // (the driver would say only INVALID_VALUE)
    throw std::runtime_error(fmt::format("kernel {} ({}): its launch is refused: {}", k.name, k.label, *problem));
  a.check(a.cuLaunchKernel(it->second, static_cast<unsigned>(k.grid.x), static_cast<unsigned>(k.grid.y),
                           static_cast<unsigned>(k.grid.z), static_cast<unsigned>(k.block.x),
                           static_cast<unsigned>(k.block.y), static_cast<unsigned>(k.block.z), 0, a.stream, args, nullptr),
          "launching " + k.name + " (" + k.label + ")");
}

void CudaDevice::Api::ensure_blas() {
  if (blas) return;  // cuBLAS is loaded when the first plan with a library product is loaded
  if (!cublas.library.loaded())  // (a compiled program's: device_render_target keeps others off cuBLAS)
    throw std::runtime_error(fmt::format("the program runs matrix products in cuBLAS, and no cuBLAS that this driver "
                                         "runs was found (tried {}): set BERTC_CUBLAS to a libcublas.so, or compile "
                                         "it with --matmul generated",
                                         fmt::join(cublas.tried, "; ")));
  bind(cublasCreate, cublas.library, "cublasCreate_v2");
  bind(cublasDestroy, cublas.library, "cublasDestroy_v2");
  bind(cublasSetStream, cublas.library, "cublasSetStream_v2");
  bind(cublasSetWorkspace, cublas.library, "cublasSetWorkspace_v2");
  bind(cublasGemmStridedBatchedEx, cublas.library, "cublasGemmStridedBatchedEx");
  if (const int s = cublasCreate(&blas); s != 0)
    throw std::runtime_error(fmt::format("cublasCreate failed: {} ({}, from {}){}", cublas_status_text(cublas, s),
                                         cublas.library.path(), cublas.origin,
                                         s == 3 ? ": out of GPU memory" : ""));
  if (const int s = cublasSetStream(blas, stream); s != 0)
    throw std::runtime_error(fmt::format("cublasSetStream failed: {}", cublas_status_text(cublas, s)));
  CUdeviceptr workspace = 0;  // after cublasSetStream, which resets the workspace
  check(cuMemAlloc(&workspace, codegen::kLibraryWorkspaceBytes), "allocating cuBLAS's workspace");
  allocations.push_back(workspace);
  allocated += codegen::kLibraryWorkspaceBytes;
  if (const int s = cublasSetWorkspace(blas, reinterpret_cast<void*>(workspace), codegen::kLibraryWorkspaceBytes); s != 0)
    throw std::runtime_error(fmt::format("cublasSetWorkspace failed: {}", cublas_status_text(cublas, s)));
}

void CudaDevice::library_product(const codegen::LibraryProductArgs& g, const void* first, const void* second, void* c) {
  Api& a = *api_;
  a.ensure_blas();
  const float one = 1.0f, zero = 0.0f;  // CUBLAS_COMPUTE_32F (and its FAST_TF32 form): float scalars
  const int rc = a.cublasGemmStridedBatchedEx(
      a.blas, g.transpose_first ? kCublasOpT : kCublasOpN, g.transpose_second ? kCublasOpT : kCublasOpN,
      static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), &one, first, cuda_type(g.operand_type),
      static_cast<int>(g.ld_first), g.stride_first, second, cuda_type(g.operand_type), static_cast<int>(g.ld_second),
      g.stride_second, &zero, c, cuda_type(g.result_type), static_cast<int>(g.ldc), g.stride_c, static_cast<int>(g.batch),
      g.tf32 ? kCublasCompute32FFastTf32 : kCublasCompute32F, kCublasGemmDefault);
  if (rc != 0)
    throw std::runtime_error(fmt::format("cublasGemmStridedBatchedEx of {} x {} x {} (batch {}) failed: {}", g.m, g.n,
                                         g.k, g.batch, cublas_status_text(a.cublas, rc)));
}

size_t CudaDevice::allocated_bytes() const { return api_->allocated; }

runtime::CountedLaunches* CudaDevice::counted_launches() { return api_->counts.get(); }

size_t CudaDevice::free_bytes() const {
  size_t free = 0, total = 0;
  api_->check(api_->cuMemGetInfo(&free, &total), "cuMemGetInfo");
  return free;
}

std::vector<double> CudaDevice::time_each(const std::vector<std::function<void()>>& works) {
  Api& a = *api_;
  std::vector<Handle> events;  // one before the first work and one after each
  struct Destroy {
    Api& a;
    std::vector<Handle>& events;
    ~Destroy() {
      for (Handle e : events) a.cuEventDestroy(e);
    }
  } destroy{a, events};
  auto mark = [&] {
    Handle e = nullptr;
    a.check(a.cuEventCreate(&e, 0), "cuEventCreate");
    events.push_back(e);
    a.check(a.cuEventRecord(e, a.stream), "cuEventRecord");
  };
  mark();
  for (const auto& work : works) {
    work();
    mark();
  }
  a.check(a.cuEventSynchronize(events.back()), "cuEventSynchronize (a timed launch failed; BERTC_SYNC_LAUNCHES=1 names it)");
  std::vector<double> seconds;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    float ms = 0;
    a.check(a.cuEventElapsedTime(&ms, events[i], events[i + 1]), "cuEventElapsedTime");
    seconds.push_back(ms / 1e3);
  }
  return seconds;
}

void CudaDevice::synchronize() { api_->check(api_->cuStreamSynchronize(api_->stream), "cuStreamSynchronize"); }

namespace {

// An instantiated CUDA Graph; destroyed with its executable.
struct CudaGraph : DeviceGraph {
  CudaDevice::Api* api = nullptr;
  Handle graph = nullptr, exec = nullptr;
  ~CudaGraph() override {
    if (exec) api->cuGraphExecDestroy(exec);
    if (graph) api->cuGraphDestroy(graph);
  }
  // The captured graph's nodes by CUgraphNodeType (cuda.h: 0 kernel, 1 memcpy, 2 memset, 3 host).
  GraphCensus census() const override {
    size_t count = 0;
    api->check(api->cuGraphGetNodes(graph, nullptr, &count), "cuGraphGetNodes");
    std::vector<Handle> nodes(count);
    api->check(api->cuGraphGetNodes(graph, nodes.data(), &count), "cuGraphGetNodes");
    GraphCensus c;
    for (size_t i = 0; i < count; ++i) {
      int type = -1;
      api->check(api->cuGraphNodeGetType(nodes[i], &type), "cuGraphNodeGetType");
      ++(type == 0 ? c.kernels : type == 1 ? c.copies : type == 2 ? c.sets : type == 3 ? c.host_calls : c.other);
    }
    return c;
  }
};

}  // namespace

std::unique_ptr<DeviceGraph> CudaDevice::record(const std::function<void()>& body) {
  Api& a = *api_;
  auto g = std::make_unique<CudaGraph>();
  g->api = &a;
  a.check(a.cuStreamBeginCapture(a.stream, kCaptureModeThreadLocal), "cuStreamBeginCapture");
  try {
    body();
  } catch (...) {
    a.cuStreamEndCapture(a.stream, &g->graph);  // leaves the stream usable; the partial graph is dropped
    throw;
  }
  a.check(a.cuStreamEndCapture(a.stream, &g->graph), "cuStreamEndCapture (was something not capturable issued?)");
  a.check(a.cuGraphInstantiateWithFlags(&g->exec, g->graph, 0), "cuGraphInstantiate");
  return g;
}

void CudaDevice::replay(DeviceGraph& graph) {
  api_->check(api_->cuGraphLaunch(dynamic_cast<CudaGraph&>(graph).exec, api_->stream), "cuGraphLaunch");
}

}  // namespace bertc::cuda
