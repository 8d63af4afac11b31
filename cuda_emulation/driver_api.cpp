// The emulated driver's exports: the CUDA driver API entry points bertc loads, under the names
// libcuda.so.1 gives them (cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on; the older
// unversioned ABI of a renamed call is exported beside it where its arguments are the same), each
// calling the Driver under its lock. Nothing else is exported (exports.map).
#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_emulation/emulated_driver.h"

using bertc::cuda_emulation::Driver;

namespace {

// Runs `call` on the driver under its lock.
template <typename Call>
CUresult locked(Call call) {
  Driver& d = Driver::get();
  std::lock_guard guard(d.lock());
  return call(d);
}

const char* error_text(CUresult error) {
  switch (error) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
    case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
    case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
    case CUDA_ERROR_INVALID_IMAGE: return "device kernel image is invalid";
    case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return "no kernel image is available for execution on the device";
    case CUDA_ERROR_INVALID_PTX: return "a PTX JIT compilation failed";
    case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_ERROR_ILLEGAL_STATE: return "the operation cannot be performed in the present state";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_LAUNCH_FAILED: return "unspecified launch failure";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return "operation not permitted when stream is capturing";
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return "operation failed due to a previous error during capture";
    case CUDA_ERROR_STREAM_CAPTURE_MERGE: return "operation would result in a merge of separate capture sequences";
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: return "capture was not ended in the same stream as it began";
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: return "capturing stream has unjoined work";
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return "dependency created on uncaptured work in another stream";
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case CUDA_ERROR_CAPTURED_EVENT: return "operation not permitted on an event last recorded in a capturing stream";
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
      return "attempt to terminate a thread-local capture sequence from another thread";
    default: return nullptr;
  }
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return locked([](Driver& d) { return d.init(); });
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;  // (the API of the header it was built from)
  return CUDA_SUCCESS;
}

// NVIDIA's libraries (NVRTC 12 among them) look for the driver's private tables through this
// undocumented call when a libcuda.so.1 is loaded; the emulation has none to give, which they
// are then left to do without.
CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid* /*id*/) {
  if (table) *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  if (!text) return CUDA_ERROR_INVALID_VALUE;
  *text = error_text(error);
  return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  return locked([&](Driver& d) { return d.device_count(count); });
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  return locked([&](Driver& d) { return d.device_get(device, ordinal); });
}
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice device) {
  return locked([&](Driver& d) { return d.device_name(name, length, device); });
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  return locked([&](Driver& d) { return d.device_attribute(value, attribute, device); });
}
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  return locked([&](Driver& d) { return d.device_total_memory(bytes, device); });
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  return locked([&](Driver& d) { return d.primary_context_retain(context, device); });
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  return locked([&](Driver& d) { return d.primary_context_release(device); });
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  return locked([&](Driver& d) { return d.context_set_current(context); });
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  return locked([&](Driver& d) { return d.memory_allocate(pointer, bytes); });
}
CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) {
  return locked([&](Driver& d) { return d.memory_free(pointer); });
}
CUresult CUDAAPI cuMemGetInfo(size_t* free, size_t* total) {
  return locked([&](Driver& d) { return d.memory_info(free, total); });
}
CUresult CUDAAPI cuMemHostAlloc(void** pointer, size_t bytes, unsigned int flags) {
  return locked([&](Driver& d) { return d.host_allocate(pointer, bytes, flags); });
}
CUresult CUDAAPI cuMemFreeHost(void* pointer) {
  return locked([&](Driver& d) { return d.host_free(pointer); });
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr to, const void* from, size_t bytes, CUstream stream) {
  return locked([&](Driver& d) { return d.copy_to_device_async(to, from, bytes, stream); });
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* to, CUdeviceptr from, size_t bytes, CUstream stream) {
  return locked([&](Driver& d) { return d.copy_to_host_async(to, from, bytes, stream); });
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream) {
  return locked([&](Driver& d) { return d.copy_on_device_async(to, from, bytes, stream); });
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr to, unsigned char byte, size_t bytes, CUstream stream) {
  return locked([&](Driver& d) { return d.set_async(to, byte, bytes, stream); });
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int options, CUjit_option* keys,
                                    void** values) {
  return locked([&](Driver& d) { return d.module_load(module, image, options, keys, values); });
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  return locked([&](Driver& d) { return d.module_function(function, module, name); });
}
CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  return locked([&](Driver& d) { return d.module_unload(module); });
}
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,
                                void** params, void** extra) {
  return locked([&](Driver& d) { return d.launch(f, {gx, gy, gz}, {bx, by, bz}, shared_bytes, stream, params, extra); });
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int flags) {
  return locked([&](Driver& d) { return d.stream_create(stream, flags); });
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  return locked([&](Driver& d) { return d.stream_destroy(stream); });
}
CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  return locked([&](Driver& d) { return d.stream_synchronize(stream); });
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  return locked([&](Driver& d) { return d.stream_wait_event(stream, event, flags); });
}
CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int flags) {
  return locked([&](Driver& d) { return d.event_create(event, flags); });
}
CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  return locked([&](Driver& d) { return d.event_record(event, stream); });
}
CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  return locked([&](Driver& d) { return d.event_synchronize(event); });
}
CUresult CUDAAPI cuEventDestroy(CUevent event) {
  return locked([&](Driver& d) { return d.event_destroy(event); });
}
// The emulation keeps no time: what a GPU took cannot be read from it, and a projection is not a
// measurement (bertc's profiles say the emulator's counts instead).
CUresult CUDAAPI cuEventElapsedTime(float* /*ms*/, CUevent /*start*/, CUevent /*end*/) { return CUDA_ERROR_NOT_SUPPORTED; }

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  return locked([&](Driver& d) { return d.begin_capture(stream, mode); });
}
CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return locked([&](Driver& d) { return d.end_capture(stream, graph); });
}
CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;  // (auto-free, upload, device launch: not emulated)
  return locked([&](Driver& d) { return d.graph_instantiate(exec, graph); });
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return locked([&](Driver& d) { return d.graph_launch(exec, stream); });
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  return locked([&](Driver& d) { return d.graph_exec_destroy(exec); });
}
CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  return locked([&](Driver& d) { return d.graph_destroy(graph); });
}
CUresult CUDAAPI cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  return locked([&](Driver& d) { return d.graph_nodes(graph, nodes, count); });
}
CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  return locked([&](Driver& d) { return d.node_type(node, type); });
}

// bertc's emulated libraries' kernels (library_kernels.h).
CUresult bertcEmulatedLaunchLibraryKernel(CUstream stream, const char* what, const bertcEmulatedAccess* accesses,
                                          size_t access_count, bertcEmulatedRun run, void* data, void (*release)(void*)) {
  if (!what || (access_count && !accesses) || !run) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<void> owned(data, [release](void* d) {
    if (release) release(d);
  });
  auto work = [run, owned]() -> std::string {
    char why[1024] = "";
    return run(owned.get(), why, sizeof why) == 0 ? std::string() : std::string(why[0] ? why : "failed");
  };
  return locked([&](Driver& d) {
    return d.library_kernel(stream, what, std::vector<bertcEmulatedAccess>(accesses, accesses + access_count), work);
  });
}

CUresult bertcEmulatedTakeLaunchCounts(bertcEmulatedCountedLaunch each, void* user) {
  return locked([&](Driver& d) { return d.take_launch_counts(each, user); });
}

// The older ABI of calls cuda.h renames, exported as libcuda.so.1 keeps them.
#undef cuEventElapsedTime
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) { return cuEventElapsedTime_v2(ms, start, end); }
#undef cuStreamBeginCapture
CUresult CUDAAPI cuStreamBeginCapture(CUstream stream) {  // (CUDA 10.0's: no mode, so global)
  return cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

}  // extern "C"
