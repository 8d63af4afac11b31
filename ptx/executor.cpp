// The PTX emulator's execution model (see executor.h): blocks one after another, a block's warps
// in turn, a warp's lanes together where they agree; memory checked on every access.
#include "ptx/executor.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "ptx/fragments.h"
#include "ptx/global_races.h"
#include "ptx/launch_limits.h"
#include "ptx/semantics.h"
#include "ptx/shared_checks.h"

namespace bertc::ptx {
namespace {

// Generic-space windows of a block's shared memory and a thread's local memory: above every user
// address of a 64-bit Linux process, so that no host pointer falls in them.
constexpr uint64_t kSharedWindow = 0xffff800000000000, kLocalWindow = 0xffffc00000000000;
constexpr uint64_t kWindowBytes = uint64_t{1} << 40;
// Where a call's parameters (module.h: the .param variables declared around a call) begin in the
// param state space, above any kernel's parameter buffer: they are the thread's own, kept after
// its .local variables, and written as well as read.
constexpr uint64_t kCallParameters = uint64_t{1} << 32;
// A warp that runs this many instructions without its lanes waiting (at a barrier or a warp
// collective) or ending is taken to loop for ever.
constexpr uint64_t kStepBudget = uint64_t{1} << 32;

uint64_t mask_of(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

enum class Wait { None, Barrier, Warp, Done };

constexpr size_t kOps = 0
#define PTX_OP(e, name, modifiers, fewest, most, one_of) +1
#include "ptx/opcode.def"
#undef PTX_OP
    ;

// A cp.async's copy, made visible only when a cp.async.wait_group covers its group: its shared
// destination and the bytes read from global memory when it was issued.
struct AsyncCopy {
  uint64_t shared_at = 0;
  std::vector<uint8_t> bytes;
};

// A shared byte an async copy is writing: from its cp.async until the wait that covers it, no
// access of it is ordered with the copy (the data lands at some time in between).
struct InFlight {
  bool pending = false;
  uint32_t thread = 0;  // the copy's (linear in the block)
  uint32_t pc = 0;      // its cp.async
};

// Warp requests of one kind of memory access (counters.h): the lanes of a warp that execute one
// such instruction for the k-th time make one request (they run in step between the points where
// they meet). Indexed, not hashed: a map's lookup an access cost a quarter of the SIMT kernels' speed.
struct RequestLog {
  std::vector<int32_t> slot;  // per instruction: its slot, or -1 for an instruction not counted
  size_t slots = 0;
  std::vector<uint32_t> executions;  // per thread and slot
  std::vector<std::vector<std::vector<LaneAccess>>> requests;  // per warp and slot: the k-th request

  void add_instruction(bool counted) { slot.push_back(counted ? static_cast<int32_t>(slots++) : -1); }
  void begin_block(size_t threads) {
    executions.assign(threads * slots, 0);
    requests.assign((threads + 31) / 32 * slots, {});
  }
  void note(size_t pc, uint32_t thread, uint64_t offset, size_t bytes) {
    if (slot.at(pc) < 0) return;
    const auto s = static_cast<size_t>(slot[pc]);
    uint32_t& k = executions[thread * slots + s];
    auto& of_slot = requests[(thread / 32) * slots + s];
    if (of_slot.size() <= k) of_slot.resize(k + 1), of_slot[k].reserve(32);
    of_slot[k++].push_back({thread % 32, offset, static_cast<uint32_t>(bytes)});
  }
  template <typename Count>
  void count(Count each) const {
    for (const auto& of_slot : requests)
      for (const std::vector<LaneAccess>& request : of_slot)
        if (!request.empty()) each(request);
  }
};

struct Thread {
  // Its registers in the block's register file, register r at regs[r * the block's threads]: a
  // register's lanes side by side, as a warp-wide instruction reads them.
  uint64_t* regs = nullptr;
  size_t pc = 0;
  Wait wait = Wait::None;
  uint32_t tid[3] = {0, 0, 0};
  uint32_t linear = 0;
  std::vector<uint8_t> local;
  std::vector<AsyncCopy> open_group;                 // issued since the last commit_group
  std::vector<std::vector<AsyncCopy>> committed;     // oldest first
  bool arrived = false;  // waiting at a barrier with its warp's arrival counted
  // Seeded: at its loop's head, come round ahead of lanes of its warp still in the turn before,
  // which it waits for there (run_warp runs it again when no other lane of the warp can run).
  bool parked = false;
};

// One of a block's sixteen named barriers while warps arrive at it (ISA: "bar, barrier").
struct NamedBarrier {
  uint32_t warps = 0;                  // arrived
  std::optional<uint64_t> count;       // the thread count its arrivals named (none: the whole block)
  bool red = false;                    // its arrivals are bar.red's
  uint32_t popc = 0, threads = 0;      // bar.red: threads with the predicate true, of threads counted
};


}  // namespace

// Whether two operands name the same registers, values and symbols.
bool same_operand(const Operand& a, const Operand& b) {
  if (a.kind != b.kind || a.reg != b.reg || a.special != b.special || a.value != b.value || a.f64 != b.f64 ||
      a.symbol != b.symbol || a.label != b.label || a.elements.size() != b.elements.size())
    return false;
  for (size_t i = 0; i < a.elements.size(); ++i)
    if (!same_operand(a.elements[i], b.elements[i])) return false;
  return true;
}

// Whether two instructions (at two places) do the same: one opcode, one guard, the same operands.
bool same_instruction(const Instruction& a, const Instruction& b) {
  if (a.opcode.text != b.opcode.text || a.guard != b.guard || a.guard_negated != b.guard_negated ||
      a.operands.size() != b.operands.size() || a.second_destination.has_value() != b.second_destination.has_value())
    return false;
  if (a.second_destination && !same_operand(*a.second_destination, *b.second_destination)) return false;
  for (size_t i = 0; i < a.operands.size(); ++i)
    if (!same_operand(a.operands[i], b.operands[i])) return false;
  return true;
}

// One block's run: its shared memory, its threads, and the instructions' effects on them.
struct BlockRun {
  const Emulator& emu;
  const Entry& entry;
  const LaunchConfig& config;
  const std::vector<uint8_t>& params;
  uint32_t ctaid[3];
  LaunchCounts& counts;
  SharedShadow& shadow;
  std::vector<uint8_t> shared;
  std::vector<InFlight> in_flight;  // per shared byte (sized at the first cp.async)
  size_t in_flight_bytes = 0;       // (none: nothing to look up on a shared access)
  std::map<std::string, uint64_t> shared_at, local_at;  // variables' addresses in their spaces
  std::vector<std::pair<uint64_t, uint64_t>> shared_extents;  // the shared variables' bytes (not their padding)
  size_t local_bytes = 0;
  std::vector<Thread> threads;
  std::vector<uint64_t> register_file;  // register r of thread i at r * threads + i (Thread::regs)
  size_t register_stride = 0;           // the block's threads (kept: reg() divided by sizeof(Thread) each time)
  uint64_t linear_block = 0;  // the block's index in the grid, x fastest
  std::vector<size_t> order;  // the warps, in the order a round runs them
  int first_lane = 0;  // where each_lane begins a warp's lanes (seeded)
  bool interleave = false;        // (a seed: warps and their groups in a seeded order, for seeded quanta)
  std::mt19937_64 schedule;       // (that order's draws)
  std::vector<uint64_t> warp_steps;  // per warp: instructions since its lanes last waited or ended
  std::array<uint64_t, kOps> by_op{};  // (counted here, a map's lookup too slow per instruction)
  std::vector<uint64_t> register_mask;  // per register: the bits its type holds
  const std::vector<InstructionClass>* entry_classes = nullptr;  // the entry's (classes_of: once a launch)
  std::vector<InstructionClass> classes;  // per instruction: its class and FLOPs (counters.h)
  std::vector<double> flops_at, mma_flops_at;  // (an mma's FLOPs in both)
  std::vector<uint32_t> access_at;             // the bytes a lane loads or stores (0: none)
  std::array<std::array<uint64_t, kAccessWidths>, 4> by_width{};
  // Per instruction: how often it was issued and how often its guard let it execute, folded into
  // the counts by class, operation and FLOPs when the block ends (fold_counts: one increment an
  // instruction where five were)
  std::vector<uint64_t> issued, executed;
  std::array<uint64_t, kInstructionClasses> by_class{};
  double flops = 0, mma_flops = 0;
  RequestLog shared_requests, global_requests;  // (counters.h's bank conflicts and sectors)
  std::array<NamedBarrier, 16> barriers{};
  std::vector<Thread*> waiting_lanes, group_lanes;  // (resolve_warps': kept, not made anew a warp)
  GlobalRaces* races = nullptr;  // racecheck of global memory (none: off for the launch)
  const BufferBounds* bounds = nullptr;  // memcheck by buffer (none: by allocation only)
  BlockTimer* timer = nullptr;           // the timing model (timing.h; none: not timed)

  [[noreturn]] void fail(const Thread& t, const Instruction& in, const std::string& what) const {
    const std::string source =
        in.source_line == 0 ? ""
        : in.caller_line == 0
            ? fmt::format(" (source line {})", in.source_line)
            : fmt::format(" (source line {}, inlined at line {})", in.source_line, in.caller_line);
    throw Error(fmt::format("{}:{}: kernel {}, block ({},{},{}), thread ({},{},{}): {}: {}{}", emu.module().name, in.line,
                            entry.name, ctaid[0], ctaid[1], ctaid[2], t.tid[0], t.tid[1], t.tid[2], in.opcode.text,
                            what, source),
                in.source_line, in.caller_line);
  }

  void lay_out_variables() {
    const SharedLayout layout = lay_out_shared(emu.module(), entry, config.dynamic_shared_bytes);
    shared_at = layout.offsets;
    shared_extents = layout.extents;
    for (const Space space : {Space::Local, Space::Param})
      for (const Variable& v : entry.variables) {
        if (v.space != space) continue;
        local_bytes = align_up(local_bytes, static_cast<size_t>(v.align));
        local_at[v.name] = local_bytes + (space == Space::Param ? kCallParameters : 0);
        local_bytes += v.bytes;
      }
    shared.assign(layout.total_bytes, 0);
  }

  void make_threads() {
    for (const Register& r : entry.registers) register_mask.push_back(mask_of(type_bits(r.type)));
    issued.assign(entry.body.size(), 0);
    executed.assign(entry.body.size(), 0);
    classes = *entry_classes;
    for (const Instruction& in : entry.body) {
      flops_at.push_back(flops_of(in)), access_at.push_back(access_bytes(in));
      mma_flops_at.push_back(classes[flops_at.size() - 1] == InstructionClass::Mma ? flops_at.back() : 0.0);
      // (ld/st.shared, ldmatrix and cp.async's writes: what NVRTC emits for shared memory; a
      // generic access that lands there is not counted as a shared request. Global: ld/st of
      // global or generic addresses, and cp.async's reads.)
      const Op op = in.opcode.op;
      const bool load_store = op == Op::Ld || op == Op::St;
      const bool other_space = in.opcode.has(Mod::shared) || in.opcode.has(Mod::local) || in.opcode.has(Mod::param) ||
                               in.opcode.has(Mod::Const);
      // (cp.async's shared writes too: the copy's data lands on the banks as a store's would; and
      // atomics of shared memory, counted as a load's request: lanes adding into one word, which
      // the hardware serialises, are one wavefront here)
      const bool atomic = op == Op::Atom || op == Op::Red;
      shared_requests.add_instruction(((load_store || op == Op::Ldmatrix || atomic) && in.opcode.has(Mod::shared)) ||
                                      (op == Op::Cp && in.opcode.has(Mod::async) && !in.opcode.has(Mod::commit_group) &&
                                       !in.opcode.has(Mod::wait_group) && !in.opcode.has(Mod::wait_all)));
      global_requests.add_instruction((load_store && !other_space) || (op == Op::Cp && in.opcode.has(Mod::async)));
    }
    const Dim3 b = config.block;
    threads.resize(b.count());
    register_file.assign(entry.registers.size() * threads.size(), 0);
    register_stride = threads.size();
    for (uint32_t z = 0, i = 0; z < b.z; ++z)
      for (uint32_t y = 0; y < b.y; ++y)
        for (uint32_t x = 0; x < b.x; ++x, ++i) {
          Thread& t = threads[i];
          t.regs = register_file.data() + i;
          t.tid[0] = x, t.tid[1] = y, t.tid[2] = z;
          t.linear = i;
          t.local.assign(local_bytes, 0);
        }
  }

  uint64_t& reg(const Thread& t, int r) const { return t.regs[static_cast<size_t>(r) * register_stride]; }

  // `value` of special register `name`, when the launch's GPU gives it.
  uint64_t known(const Thread& t, const Instruction& in, uint32_t value, const char* name) const {
    if (value == 0)
      fail(t, in, fmt::format("reads {}, and the launch names no GPU whose multiprocessors give it a value", name));
    return value;
  }

  uint64_t special(const Thread& t, const Instruction& in, Special s) const {
    switch (s) {
      case Special::TidX: return t.tid[0];
      case Special::TidY: return t.tid[1];
      case Special::TidZ: return t.tid[2];
      case Special::NtidX: return config.block.x;
      case Special::NtidY: return config.block.y;
      case Special::NtidZ: return config.block.z;
      case Special::CtaidX: return ctaid[0];
      case Special::CtaidY: return ctaid[1];
      case Special::CtaidZ: return ctaid[2];
      case Special::NctaidX: return config.grid.x;
      case Special::NctaidY: return config.grid.y;
      case Special::NctaidZ: return config.grid.z;
      case Special::Laneid: return t.linear % 32;
      case Special::Warpid: return t.linear / 32;
      // (ISA: the SM a thread runs on, 0 to %nsmid - 1, and the most warp identifiers: a placement
      // model of the GPU's figures, the block's index modulo its multiprocessors)
      case Special::Nwarpid: return known(t, in, config.limits.warps_per_multiprocessor, "%nwarpid");
      case Special::Smid:
        return (ctaid[0] + uint64_t{config.grid.x} * (ctaid[1] + uint64_t{config.grid.y} * ctaid[2])) %
               known(t, in, config.limits.multiprocessors, "%smid");
      case Special::Nsmid: return known(t, in, config.limits.multiprocessors, "%nsmid");
      // (ISA "Special Registers": a lane's own bit, and the bits below or above it, of 32)
      case Special::LanemaskEq: return uint64_t{1} << (t.linear % 32);
      case Special::LanemaskLe: return (uint64_t{2} << (t.linear % 32)) - 1;
      case Special::LanemaskLt: return (uint64_t{1} << (t.linear % 32)) - 1;
      case Special::LanemaskGe: return ~((uint64_t{1} << (t.linear % 32)) - 1) & 0xffffffff;
      case Special::LanemaskGt: return ~((uint64_t{2} << (t.linear % 32)) - 1) & 0xffffffff;
      case Special::DynamicSmemSize: return config.dynamic_shared_bytes;
      case Special::Clock:
      case Special::Clock64: return counts.thread_instructions;
    }
    return 0;
  }

  // A variable's address in its own state space (what mov of its name gives).
  uint64_t symbol_address(const Thread& t, const Instruction& in, const std::string& name) const {
    if (const auto it = shared_at.find(name); it != shared_at.end()) return it->second;
    if (const auto it = local_at.find(name); it != local_at.end()) return it->second;
    if (const auto it = emu.addresses_.find(name); it != emu.addresses_.end()) return it->second;
    for (const Param& p : entry.params)
      if (p.name == name) return p.offset;
    fail(t, in, fmt::format("{} names no variable", name));
  }

  // (registers, most operands, inline; the rest in operand_value)
  [[gnu::always_inline]] uint64_t value(const Thread& t, const Instruction& in, const Operand& o, Type type) const {
    if (o.kind == Operand::Kind::Register) [[likely]]
      return reg(t, o.reg);
    return operand_value(t, in, o, type);
  }

  [[gnu::noinline]] uint64_t operand_value(const Thread& t, const Instruction& in, const Operand& o, Type type) const {
    switch (o.kind) {
      case Operand::Kind::Register: return reg(t, o.reg);
      case Operand::Kind::NegatedPredicate: return ~reg(t, o.reg) & 1;
      case Operand::Kind::Immediate: return static_cast<uint64_t>(o.value);
      case Operand::Kind::Float: {
        const uint64_t bits = static_cast<uint64_t>(o.value);
        if (o.f64 && type == Type::F32) return std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(bits)));
        if (!o.f64 && type == Type::F64) return std::bit_cast<uint64_t>(static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits))));
        return bits;
      }
      case Operand::Kind::Special: return special(t, in, o.special);
      case Operand::Kind::Symbol: return symbol_address(t, in, o.symbol);
      case Operand::Kind::Vector: {  // (packed into one value: mov.b32 %r, {%rs1, %rs2})
        const int each = type_bits(type) / static_cast<int>(o.elements.size());
        uint64_t packed = 0;
        for (size_t i = 0; i < o.elements.size(); ++i)
          packed |= (value(t, in, o.elements[i], type) & mask_of(each)) << (each * static_cast<int>(i));
        return packed;
      }
      default: fail(t, in, "an operand that is not a value");
    }
  }

  // (a register, nearly every destination, inline; vectors and sinks in write_other)
  [[gnu::always_inline]] void write(Thread& t, const Instruction& in, const Operand& o, uint64_t v, Type type) {
    if (o.kind == Operand::Kind::Register) [[likely]] {
      reg(t, o.reg) = v & register_mask[static_cast<size_t>(o.reg)];
      return;
    }
    write_other(t, in, o, v, type);
  }

  [[gnu::noinline]] void write_other(Thread& t, const Instruction& in, const Operand& o, uint64_t v, Type type) {
    if (o.kind == Operand::Kind::Sink) return;
    if (o.kind == Operand::Kind::Vector) {  // (unpacked: mov.b64 {%r1, %r2}, %rd)
      const int each = type_bits(type) / static_cast<int>(o.elements.size());
      for (size_t i = 0; i < o.elements.size(); ++i)
        write(t, in, o.elements[i], (v >> (each * static_cast<int>(i))) & mask_of(each), type);
      return;
    }
    if (o.kind != Operand::Kind::Register) fail(t, in, "a destination that is not a register");
    write(t, in, o, v, type);
  }

  // The address an [address] operand names, in the space `space` reads it from.
  uint64_t address(const Thread& t, const Instruction& in, const Operand& o) const {
    if (o.kind != Operand::Kind::Address) fail(t, in, "expected an [address]");
    uint64_t base = 0;
    if (o.reg >= 0) base = reg(t, o.reg);
    else if (!o.symbol.empty()) base = symbol_address(t, in, o.symbol);
    return base + static_cast<uint64_t>(o.value);
  }

  enum class Where { Param, Shared, Local, Global };

  Where space_of(const Opcode& op) const {
    if (op.has(Mod::param)) return Where::Param;
    if (op.has(Mod::shared)) return Where::Shared;
    if (op.has(Mod::local)) return Where::Local;
    if (op.has(Mod::global) || op.has(Mod::Const)) return Where::Global;
    return Where::Global;  // generic: resolved by window below
  }

  void fold_counts() {
    for (size_t pc = 0; pc < issued.size(); ++pc) {
      by_op[static_cast<size_t>(entry.body[pc].opcode.op)] += issued[pc];
      by_class[static_cast<size_t>(classes[pc])] += issued[pc];
      flops += static_cast<double>(executed[pc]) * flops_at[pc];
      mma_flops += static_cast<double>(executed[pc]) * mma_flops_at[pc];
      if (access_at[pc])  // (the memory classes are by_class's 3 to 6: shared load to global store)
        by_width[static_cast<size_t>(classes[pc]) - static_cast<size_t>(InstructionClass::SharedLoad)]
                [access_width_index(access_at[pc])] += executed[pc];
    }
  }

  void count_requests() {
    shared_requests.count([&](const std::vector<LaneAccess>& request) {
      ++counts.shared_requests;
      counts.shared_wavefronts += shared_wavefronts(request);
      counts.shared_ideal_wavefronts += shared_phases(request);
    });
    global_requests.count([&](const std::vector<LaneAccess>& request) {
      ++counts.global_requests;
      counts.global_sectors += global_sectors(request);
      counts.global_ideal_sectors += global_ideal_sectors(request);
    });
  }

  // racecheck and initcheck of a shared access (shared_checks.h): a hazard fails the launch naming
  // both accesses.
  // (`atomic`: an atom or red, which reads and writes; on the banks as any request)
  void check_shared(const Thread& t, const Instruction& in, uint64_t offset, size_t bytes, bool write,
                    bool atomic = false) {
    shared_requests.note(t.pc, t.linear, offset, bytes);
    const auto pc = static_cast<uint32_t>(t.pc);
    const auto hazard = atomic  ? shadow.atomic(t.linear, pc, offset, bytes)
                        : write ? shadow.write(t.linear, pc, offset, bytes)
                                : shadow.read(t.linear, pc, offset, bytes);
    if (!hazard) return;
    using Kind = SharedHazard::Kind;
    if (hazard->kind == Kind::Uninitialised)
      fail(t, in, fmt::format("initcheck: reads shared memory at offset {} that no thread of the block wrote",
                              hazard->offset));
    const Thread& other = threads.at(hazard->other_thread);
    const char* what = hazard->kind == Kind::ReadAfterWrite ? "reads" : "writes";
    const char* theirs = hazard->kind == Kind::WriteAfterRead ? "read" : "wrote";
    fail(t, in, fmt::format("racecheck: {} shared memory at offset {}, which thread ({},{},{}) {} at line {} with no "
                            "barrier between (a missing bar.sync, or __syncwarp between a warp's lanes)",
                            what, hazard->offset, other.tid[0], other.tid[1], other.tid[2], theirs,
                            entry.body.at(hazard->other_pc).line));
  }

  // racecheck of a global access (global_races.h): a hazard fails the launch naming both accesses.
  void check_global_race(const Thread& t, const Instruction& in, uint64_t addr, size_t bytes, bool write) {
    const auto hazard = write ? races->write(t.linear, static_cast<uint32_t>(t.pc), addr, bytes)
                              : races->read(t.linear, static_cast<uint32_t>(t.pc), addr, bytes);
    if (!hazard) return;
    using Kind = GlobalHazard::Kind;
    const uint64_t gx = config.grid.x, gy = config.grid.y, bx = config.block.x, by = config.block.y;
    const uint64_t b = hazard->other_block, th = hazard->other_thread;
    const bool same_block = b == ctaid[0] + gx * (ctaid[1] + gy * ctaid[2]);
    fail(t, in, fmt::format("racecheck: {} global memory at {:#x}, which thread ({},{},{}) of {} {} at line {} in this "
                            "launch with nothing ordering the two ({})",
                            hazard->kind == Kind::ReadAfterWrite ? "reads" : "writes", hazard->address, th % bx,
                            th / bx % by, th / (bx * by),
                            same_block ? std::string("this block")
                                       : fmt::format("block ({},{},{})", b % gx, b / gx % gy, b / (gx * gy)),
                            hazard->kind == Kind::WriteAfterRead ? "read" : "wrote", entry.body.at(hazard->other_pc).line,
                            same_block ? "a missing bar.sync, or bar.warp.sync between a warp's lanes"
                                       : "blocks of one launch run in no set order: a result another block makes is "
                                         "read after a fence of each and an atomic count, or in a later launch"));
  }

  // The bytes at `address` of `space` (generic addresses resolved by window), checked: inside
  // memory that exists for it and aligned to `bytes` (compute-sanitizer's memcheck).
  // `atomic`: an atom/red: global racecheck leaves it out (atomics race with nothing there);
  // shared memory's checks take it as an atomic (shared_checks.h: plain accesses race with it).
  // `read_bytes`: of a read (or an atomic's), the bytes it takes (cp.async's src-size), which
  // initcheck checks; the rest of `bytes` is memcheck's alone.
  uint8_t* memory(Thread& t, const Instruction& in, Where space, uint64_t addr, size_t bytes, bool write,
                  bool atomic = false, size_t read_bytes = SIZE_MAX) {
    const bool generic = !in.opcode.has(Mod::param) && !in.opcode.has(Mod::shared) && !in.opcode.has(Mod::local) &&
                         !in.opcode.has(Mod::global) && !in.opcode.has(Mod::Const);
    if (generic && addr >= kSharedWindow && addr < kSharedWindow + kWindowBytes) space = Where::Shared, addr -= kSharedWindow;
    else if (generic && addr >= kLocalWindow && addr < kLocalWindow + kWindowBytes) space = Where::Local, addr -= kLocalWindow;
    if (addr % bytes != 0)
      fail(t, in, fmt::format("misaligned: {} bytes at {}{:#x} (an access must be aligned to its size)", bytes,
                              space == Where::Shared ? "shared offset " : space == Where::Local ? "local offset " : "",
                              addr));
    auto inside = [&](std::vector<uint8_t>& v, const char* what) {
      if (addr + bytes > v.size())
        fail(t, in, fmt::format("{} bytes at {} of {} outside its {} bytes", bytes, addr, what, v.size()));
      return v.data() + addr;
    };
    switch (space) {
      case Where::Param:
        if (addr >= kCallParameters) {  // (a call's parameter)
          addr -= kCallParameters;
          return inside(t.local, "the thread's call parameters and local memory");
        }
        if (write) fail(t, in, "a store to a kernel parameter");
        if (addr + bytes > params.size())
          fail(t, in, fmt::format("{} bytes at offset {} of the parameters, which have {}", bytes, addr, params.size()));
        return const_cast<uint8_t*>(params.data()) + addr;
      case Where::Shared: {
        uint8_t* at = inside(shared, "shared memory");
        if (in_flight_bytes > 0) check_in_flight(t, in, addr, bytes, write);
        check_shared(t, in, addr, bytes, write, atomic);
        return at;
      }
      case Where::Local: return inside(t.local, "the thread's local memory");
      case Where::Global: {
        auto it = emu.globals_.upper_bound(addr);
        if (it == emu.globals_.begin() || addr + bytes > std::prev(it)->first + std::prev(it)->second)
          fail(t, in, fmt::format("{} bytes at {:#x}, outside every allocation the launch was given", bytes, addr));
        if (bounds)
          if (const auto problem = bounds->outside(addr, bytes)) fail(t, in, *problem);
        if (!atomic) global_requests.note(t.pc, t.linear, addr, bytes);
        if (races && !atomic) check_global_race(t, in, addr, std::min(bytes, write ? bytes : read_bytes), write);
        if (GlobalShadow* shadow = config.global_initcheck ? emu.global_shadow_.get() : nullptr) {
          if (!write || atomic)
            if (const auto unwritten = shadow->first_unwritten(addr, std::min(bytes, read_bytes)))
              fail(t, in, fmt::format("initcheck: reads global memory at {:#x}, byte {} of an allocation of {} at "
                                      "{:#x}, which nothing wrote (no upload, fill, copy or store before it)",
                                      unwritten->address, unwritten->address - unwritten->base, unwritten->bytes,
                                      unwritten->base));
          if (write) shadow->written(addr, bytes);
        }
        return reinterpret_cast<uint8_t*>(addr);
      }
    }
    return nullptr;
  }

  void load_store(Thread& t, const Instruction& in) {
    const Opcode& op = in.opcode;
    const Type type = op.type();
    const size_t each = static_cast<size_t>(std::max(1, type_bits(type) / 8));
    const bool store = op.op == Op::St;
    const Operand& data = store ? in.operands.at(1) : in.operands.at(0);
    const size_t n = data.kind == Operand::Kind::Vector ? data.elements.size() : 1;
    uint8_t* at = memory(t, in, space_of(op), address(t, in, in.operands.at(store ? 0 : 1)), each * n, store);
    for (size_t i = 0; i < n; ++i) {
      const Operand& element = n == 1 ? data : data.elements[i];
      if (store) {
        const uint64_t v = value(t, in, element, type);
        std::memcpy(at + i * each, &v, each);  // (little-endian: the low bytes)
      } else {
        uint64_t v = 0;
        std::memcpy(&v, at + i * each, each);
        if (is_signed(type) && each < 8) v = static_cast<uint64_t>(static_cast<int64_t>(v << (64 - 8 * each)) >> (64 - 8 * each));
        write(t, in, element, v, type);
      }
    }
  }

  // atom{.op}.type d, [a], b{, c} and red{.op}.type [a], b: *a = op(*a, b), d the old value (ISA:
  // "atom", "red": inc(r, s) = r >= s ? 0 : r+1, dec(r, s) = r == 0 || r > s ? s : r-1,
  // exch(r, s) = s, cas(r, s, t) = r == s ? t : r); add, and, or, xor, min and max as the
  // arithmetic instruction of the type computes them.
  void atomic(Thread& t, const Instruction& in) {
    const Opcode& op = in.opcode;
    const Type type = op.type();
    const size_t bytes = static_cast<size_t>(type_bits(type) / 8);
    const bool red = op.op == Op::Red;
    const uint64_t addr = address(t, in, in.operands.at(red ? 0 : 1));
    uint8_t* at = memory(t, in, space_of(op), addr, bytes, true, true);
    uint64_t old = 0;
    std::memcpy(&old, at, bytes);
    const uint64_t b = value(t, in, in.operands.at(red ? 1 : 2), type);
    // (ISA "atom": add.f32 of global memory flushes subnormal inputs and results, of shared memory not)
    const bool shared = op.has(Mod::shared) || (space_of(op) == Where::Global && !op.has(Mod::global) &&
                                                addr >= kSharedWindow && addr < kSharedWindow + kWindowBytes);
    const uint64_t mask = mask_of(8 * static_cast<int>(bytes));
    uint64_t updated = 0;
    if (op.has(Mod::exch)) {
      updated = b;
    } else if (op.has(Mod::cas)) {
      updated = (old & mask) == (b & mask) ? value(t, in, in.operands.at(3), type) : old;
    } else if (op.has(Mod::inc)) {
      updated = (old & mask) >= (b & mask) ? 0 : old + 1;
    } else if (op.has(Mod::dec)) {
      updated = (old & mask) == 0 || (old & mask) > (b & mask) ? b : old - 1;
    } else {
      Opcode arithmetic = op;
      arithmetic.op = op.has(Mod::add) ? Op::Add
                      : op.has(Mod::And) ? Op::And
                      : op.has(Mod::Or)  ? Op::Or
                      : op.has(Mod::Xor) ? Op::Xor
                      : op.has(Mod::min) ? Op::Min
                                         : Op::Max;  // (the decoder takes exactly one operation: opcode.def)
      arithmetic.mods.reset();
      if (arithmetic.op == Op::Add && type == Type::F32 && !shared) arithmetic.mods.set(static_cast<size_t>(Mod::ftz));
      const uint64_t both[] = {old, b};
      try {
        updated = compute(arithmetic, both).value;
      } catch (const std::exception& e) {
        fail(t, in, e.what());
      }
    }
    updated &= mask;
    std::memcpy(at, &updated, bytes);
    if (!red) write(t, in, in.operands.at(0), old, type);
  }

  void convert_address(Thread& t, const Instruction& in) {
    const Opcode& op = in.opcode;
    const uint64_t a = value(t, in, in.operands.at(1), op.type());
    const bool to = op.has(Mod::to);
    uint64_t window = 0;
    if (op.has(Mod::shared)) window = kSharedWindow;
    if (op.has(Mod::local)) window = kLocalWindow;
    if (window && to && (a < window || a >= window + kWindowBytes))
      fail(t, in, fmt::format("{:#x} is no generic address of that space", a));
    write(t, in, in.operands.at(0), window == 0 ? a : to ? a - window : a + window, op.type());
  }

  // An access of shared bytes an async copy is still writing: its data may land before or after
  // (a read before the wait that covers the copy, a stage filled again before its last reader is
  // done, or a copy whose thread never waits for it).
  void check_in_flight(const Thread& t, const Instruction& in, uint64_t addr, size_t bytes, bool write) const {
    for (uint64_t b = addr; b < addr + bytes; ++b)
      if (const InFlight& f = in_flight[b]; f.pending)
        fail(t, in, fmt::format("{} shared memory at offset {}, which an async copy of thread {} (line {}) is still "
                                "writing: no cp.async.wait_group of that thread has covered it yet (and a barrier "
                                "after that wait, for another thread)",
                                write ? "writes" : "reads", b, f.thread, entry.body.at(f.pc).line));
  }

  // cp.async.{ca,cg}.shared.global [dst], [src], cp-size[, src-size]: cp-size bytes, the ones past
  // src-size zero; committed in groups (commit_group) and made visible by wait_group N (all but
  // the newest N groups) or wait_all (ISA: "Asynchronous copy"; data visible only after the wait).
  void async_copy(Thread& t, const Instruction& in) {
    const Opcode& op = in.opcode;
    auto apply = [&](std::vector<AsyncCopy>& group) {
      for (const AsyncCopy& c : group) {
        if (c.shared_at + c.bytes.size() > shared.size())
          fail(t, in, fmt::format("an async copy of {} bytes to shared offset {} past its {} bytes", c.bytes.size(),
                                  c.shared_at, shared.size()));
        check_shared(t, in, c.shared_at, c.bytes.size(), true);  // (written when the wait makes it visible)
        std::memcpy(shared.data() + c.shared_at, c.bytes.data(), c.bytes.size());
        for (uint64_t b = c.shared_at; b < c.shared_at + c.bytes.size(); ++b) in_flight[b].pending = false;
        in_flight_bytes -= c.bytes.size();
      }
    };
    if (op.has(Mod::commit_group)) {
      t.committed.push_back(std::move(t.open_group));
      t.open_group.clear();
      return;
    }
    if (op.has(Mod::wait_group) || op.has(Mod::wait_all)) {
      const size_t keep = op.has(Mod::wait_all) ? 0 : static_cast<size_t>(value(t, in, in.operands.at(0), Type::U32));
      while (t.committed.size() > keep) {
        apply(t.committed.front());
        t.committed.erase(t.committed.begin());
      }
      if (op.has(Mod::wait_all)) apply(t.open_group), t.open_group.clear();
      return;
    }
    const uint64_t size = value(t, in, in.operands.at(2), Type::U32);
    const uint64_t from = in.operands.size() > 3 ? std::min(size, value(t, in, in.operands.at(3), Type::U32)) : size;
    if (size != 4 && size != 8 && size != 16) fail(t, in, fmt::format("a copy of {} bytes (4, 8 or 16)", size));
    const uint64_t to = address(t, in, in.operands.at(0));
    if (to % size != 0) fail(t, in, fmt::format("misaligned: {} bytes to shared offset {}", size, to));
    if (to + size > shared.size())
      fail(t, in, fmt::format("an async copy of {} bytes to shared offset {} past its {} bytes", size, to, shared.size()));
    in_flight.resize(shared.size());
    check_in_flight(t, in, to, size, true);  // (two copies in flight to one byte: either may land last)
    for (uint64_t b = to; b < to + size; ++b) in_flight[b] = {true, t.linear, static_cast<uint32_t>(t.pc)};
    in_flight_bytes += size;
    // (its data may land from now on: a write for racecheck here too, so that other threads' reads
    // of the stage since the last barrier are hazards, and again at the wait that makes it visible;
    // its bank request is this one's)
    check_shared(t, in, to, size, true);
    AsyncCopy c{to, std::vector<uint8_t>(size, 0)};
    if (from > 0) {
      const uint8_t* src = memory(t, in, Where::Global, address(t, in, in.operands.at(1)), size, false, false, from);
      std::memcpy(c.bytes.data(), src, from);
    }
    t.open_group.push_back(std::move(c));
  }

  // ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 d, [p]: lanes 8i..8i+7 give the row
  // addresses of matrix i (16 bytes each); lane l receives, of each matrix, the two b16 at row
  // l/4, columns 2(l%4) and +1 (with .trans, those of the transposed matrix).
  void ldmatrix(std::vector<Thread*>& lanes, const Instruction& in) {
    const Opcode& op = in.opcode;
    const int matrices = op.has(Mod::x4) ? 4 : op.has(Mod::x2) ? 2 : 1;
    if (lanes.size() != 32) fail(*lanes.front(), in, "a warp of fewer than 32 lanes at ldmatrix");
    std::vector<std::array<uint16_t, 64>> m(static_cast<size_t>(matrices));
    for (int i = 0; i < matrices; ++i)
      for (int row = 0; row < 8; ++row) {
        Thread& t = *lanes[static_cast<size_t>(8 * i + row)];
        const uint8_t* at = memory(t, in, Where::Shared, address(t, in, in.operands.at(1)), 16, false);
        std::memcpy(&m[static_cast<size_t>(i)][static_cast<size_t>(8 * row)], at, 16);
      }
    for (Thread* t : lanes) {
      const uint32_t l = t->linear % 32;
      const Operand& d = in.operands.at(0);
      for (int i = 0; i < matrices; ++i) {
        const uint32_t r = l / 4, c = 2 * (l % 4);
        const auto& x = m[static_cast<size_t>(i)];
        const uint16_t lo = op.has(Mod::trans) ? x[c * 8 + r] : x[r * 8 + c];
        const uint16_t hi = op.has(Mod::trans) ? x[(c + 1) * 8 + r] : x[r * 8 + c + 1];
        write(*t, in, d.kind == Operand::Kind::Vector ? d.elements.at(static_cast<size_t>(i)) : d,
              lo | (static_cast<uint64_t>(hi) << 16), Type::B32);
      }
    }
  }

  // mma.sync.aligned.{shape}.row.col.f32.{type}.{type}.f32 d, a, b, c: D = A B + C, the warp's
  // lanes holding the fragments where the ISA's tables place them (fragments.h). Products summed
  // in double and rounded once to f32 (the hardware's order and intermediate rounding are not
  // specified: tolerances cover it). A .tf32 operand must hold what cvt.*.tf32.f32 makes (low 13
  // bits zero): the ISA leaves the layout of other bits to the implementation.
  void mma(std::vector<Thread*>& lanes, const Instruction& in) {
    MmaForm form;
    std::string problem;
    if (!mma_form(in.opcode, form, problem)) fail(*lanes.front(), in, problem);
    if (lanes.size() != 32) fail(*lanes.front(), in, "a warp of fewer than 32 lanes at mma");
    const auto element = [&](const Thread& t, Fragment f, int i) {
      const std::vector<Operand>& regs = in.operands.at(f == Fragment::A ? 1 : f == Fragment::B ? 2 : 3).elements;
      const int per = form.per_register(f);
      const uint64_t reg = value(t, in, regs.at(static_cast<size_t>(i / per)), Type::B32);
      if (f == Fragment::C) return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(reg)));
      if (form.input == Type::Tf32) {
        if ((reg & 0x1fff) != 0)
          fail(t, in, fmt::format("a .tf32 operand ({:#010x}) that no cvt to tf32 made: its low 13 bits are set", reg));
        return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(reg)));
      }
      const auto bits = static_cast<uint16_t>(reg >> (16 * (i % per)));
      return static_cast<double>(form.input == Type::Bf16 ? bf16_to_f32(bits) : f16_to_f32(bits));
    };
    // computation q's A (M x K), B (K x N) and C (M x N), row after row, from q times the largest
    // shape's (m16n8k16: 256, 128, 128 elements; on the stack, where 15 vectors an mma were made)
    constexpr size_t kMostA = 16 * 16, kMostB = 16 * 8, kMostC = 16 * 8;
    if (form.m * form.k > static_cast<int>(kMostA) || form.k * form.n > static_cast<int>(kMostB) ||
        form.m * form.n > static_cast<int>(kMostC) || form.computations > 4)
      fail(*lanes.front(), in, "an mma shape larger than m16n8k16");
    std::array<double, 4 * kMostA> a{};
    std::array<double, 4 * kMostB> b{};
    std::array<double, 4 * kMostC> c{};
    for (Thread* t : lanes) {
      const uint32_t lane = t->linear % 32;
      for (Fragment f : {Fragment::A, Fragment::B, Fragment::C})
        for (int i = 0; i < form.count(f); ++i) {
          const Place p = fragment_place(form, f, lane, i);
          double* matrix = f == Fragment::A ? a.data() : f == Fragment::B ? b.data() : c.data();
          const size_t most = f == Fragment::A ? kMostA : f == Fragment::B ? kMostB : kMostC;
          const int width = f == Fragment::A ? form.k : form.n;
          matrix[static_cast<size_t>(p.computation) * most + static_cast<size_t>(p.row * width + p.col)] =
              element(*t, f, i);
        }
    }
    for (Thread* t : lanes)
      for (int i = 0; i < form.count(Fragment::C); ++i) {
        const Place p = fragment_place(form, Fragment::C, t->linear % 32, i);
        const auto q = static_cast<size_t>(p.computation);
        double sum = c[q * kMostC + static_cast<size_t>(p.row * form.n + p.col)];
        for (int k = 0; k < form.k; ++k)
          sum += a[q * kMostA + static_cast<size_t>(p.row * form.k + k)] *
                 b[q * kMostB + static_cast<size_t>(k * form.n + p.col)];
        write(*t, in, in.operands.at(0).elements.at(static_cast<size_t>(i)), std::bit_cast<uint32_t>(static_cast<float>(sum)),
              Type::F32);
      }
  }

  // Warp-wide execution: warp `w`'s lanes that wait for nothing run together, those at the lowest
  // instruction as one group (run_group), until every lane waits or has ended. Lanes a branch
  // parts run as groups of equal pc, the lowest first, so that they meet again where their paths
  // join, as a GPU reconverges them (and sm_70's independent thread scheduling allows this order as
  // any other). Whether any lane ran.
  // Under a seed (interleave), a group is chosen at random instead, and runs at most a random
  // quantum of instructions before the warp yields to the others (sm_70's independent thread
  // scheduling interleaves warps, and a warp's parted groups, anywhere between the points where
  // threads meet): a kernel whose result depends on one order shows it under another seed.
  bool run_warp(size_t w) {
    const size_t base = w * 32, lanes = std::min<size_t>(32, threads.size() - base);
    bool ran = false;
    // (seeded: the warp's turn, shared by its groups, which meet and part within it)
    uint64_t quantum = interleave ? 16 + schedule() % 241 : 0;
    for (;;) {
      uint32_t group = 0;
      size_t pc = SIZE_MAX;
      Meeting meet;
      if (interleave) {
        std::array<size_t, 32> pcs{};
        size_t n = 0, others = 0;
        for (size_t l = 0; l < lanes; ++l)
          if (const Thread& t = threads[base + l];
              t.wait == Wait::None && !t.parked && std::find(pcs.begin(), pcs.begin() + n, t.pc) == pcs.begin() + n)
            pcs[n++] = t.pc;
        if (n == 0) {  // (only lanes parked at a loop's head: none left to wait for)
          bool parked = false;
          for (size_t l = 0; l < lanes; ++l) parked |= std::exchange(threads[base + l].parked, false);
          if (parked) continue;
          return ran;
        }
        pc = pcs[schedule() % n];
        for (size_t l = 0; l < lanes; ++l) {
          Thread& t = threads[base + l];
          if (t.wait != Wait::None) continue;
          if (t.pc == pc) group |= 1u << l, t.parked = false;  // (lanes parked there met)
          else if (std::find(meet.pcs.begin(), meet.pcs.begin() + others, t.pc) == meet.pcs.begin() + others)
            meet.pcs[others++] = t.pc;
        }
        meet.count = others;
      } else {
        for (size_t l = 0; l < lanes; ++l) {
          const Thread& t = threads[base + l];
          if (t.wait != Wait::None || t.pc > pc) continue;
          if (t.pc < pc) meet.lowest = std::min(meet.lowest, pc), pc = t.pc, group = 0;
          group |= 1u << l;
        }
        for (size_t l = 0; l < lanes; ++l)
          if (const Thread& t = threads[base + l]; t.wait == Wait::None && t.pc > pc) meet.lowest = std::min(meet.lowest, t.pc);
      }
      if (group == 0) return ran;
      ran = true;
      if (run_group(base, group, pc, interleave ? &quantum : nullptr, meet)) return ran;  // (its quantum spent)
    }
  }

  // Where a running group of a warp's lanes stops to meet the warp's other lanes (those not
  // waiting): lowest first, at the lowest pc of the others (the group then catches them up, or
  // they it, and run on together: where their paths join, as a GPU reconverges its lanes); seeded,
  // at any pc where others are.
  struct Meeting {
    size_t lowest = SIZE_MAX;
    std::array<size_t, 32> pcs{};
    size_t count = 0;
    bool reached(size_t pc) const {
      return pc >= lowest || (count > 0 && std::find(pcs.begin(), pcs.begin() + count, pc) != pcs.begin() + count);
    }
  };

  // Calls f(thread) for the lanes of `mask` in warp base / 32, in lane order from lane
  // `first_lane` round (0 without a seed; with one, the block's own: the order of a warp's
  // accesses within one instruction, atomics' among them, is the schedule's too).
  template <typename F>
  void each_lane(size_t base, uint32_t mask, F f) {
    for (uint32_t m = std::rotr(mask, first_lane); m != 0; m &= m - 1)
      f(threads[base + (static_cast<size_t>(std::countr_zero(m)) + first_lane) % 32]);
  }

  // Runs the lanes of `mask` (of the warp at thread `base`), all at instruction `pc`, one
  // instruction for all of them at a time, decoded once for the group: its guard, its kind. Until
  // they part (a branch some take), or each waits (a barrier, a warp collective) or ends, or they
  // meet the warp's other lanes (`meet`; seeded, also at a loop's head they came round to first),
  // or the warp's turn is spent (`quantum`, counted down; none: no limit): then they yield, and
  // it returns true for the last alone.
  bool run_group(size_t base, uint32_t mask, size_t pc, uint64_t* quantum, const Meeting& meet) {
    // (since the warp's lanes last waited or ended: not since they parted or met, which a loop
    // with a divergent branch does every turn, for ever if it never ends)
    uint64_t& steps = warp_steps[base / 32];
    for (;;) {
      if (pc >= entry.body.size()) {
        each_lane(base, mask, [&](Thread& t) { t.pc = pc, t.wait = Wait::Done; });
        return steps = 0, false;
      }
      if (meet.reached(pc)) {  // (the warp's other lanes are here, or behind: they go on together)
        each_lane(base, mask, [&](Thread& t) { t.pc = pc; });
        return false;
      }
      if (quantum && (*quantum)-- == 0) {
        each_lane(base, mask, [&](Thread& t) { t.pc = pc; });
        return true;
      }
      const Instruction& in = entry.body[pc];
      if (++steps > kStepBudget)
        fail(threads[base + static_cast<size_t>(std::countr_zero(mask))], in,
             "ran 2^32 instructions without waiting at a barrier or a warp collective: an endless loop?");
      const auto lanes = static_cast<uint64_t>(std::popcount(mask));
      counts.thread_instructions += lanes;  // (%clock64 reads it)
      issued[pc] += lanes;
      if (timer) timer->issue(base / 32, pc);
      uint32_t active = mask;  // (the lanes its guard lets execute it)
      if (in.guard) {
        active = 0;
        for (uint32_t m = mask; m != 0; m &= m - 1) {
          const auto l = static_cast<size_t>(std::countr_zero(m));
          if (((reg(threads[base + l], *in.guard) & 1) != 0) != in.guard_negated) active |= 1u << l;
        }
      }
      executed[pc] += static_cast<uint64_t>(std::popcount(active));
      each_lane(base, active, [&](Thread& t) { t.pc = pc; });
      const Op op = in.opcode.op;
      if (op == Op::Call) {  // (its function's body follows it, inlined: calls.h; lanes its guard passes over skip it)
        const auto after = static_cast<size_t>(in.operands.at(3).label);
        if (active == mask || active == 0) {
          pc = active == 0 ? after : pc + 1;
          continue;
        }
        each_lane(base, mask, [&](Thread& t) { t.pc = active >> (t.linear % 32) & 1 ? pc + 1 : after; });
        return false;
      }
      if (op == Op::Bra || (op == Op::Ret && !in.operands.empty())) {  // (an inlined function's ret: a branch)
        if (active == mask || active == 0) {
          const size_t to = active == 0 ? pc + 1 : static_cast<size_t>(in.operands.at(0).label);
          // (seeded, a group that runs ahead of the warp's others waits at its loop's head for them,
          // not a turn of the loop ahead: they meet there in the same turn, as a GPU reconverges)
          if (to < pc && meet.count > 0) {
            each_lane(base, mask, [&](Thread& t) { t.pc = to, t.parked = true; });
            return false;
          }
          pc = to;
          continue;
        }
        each_lane(base, mask, [&](Thread& t) {
          t.pc = active >> (t.linear % 32) & 1 ? static_cast<size_t>(in.operands.at(0).label) : pc + 1;
        });
        return false;  // (parted: run_warp takes the lowest group next, or a seeded one)
      }
      if (active != 0) {
        if (const Wait wait = waits_at(threads[base + static_cast<size_t>(std::countr_zero(active))], in);
            wait != Wait::None) {
          each_lane(base, active, [&](Thread& t) { t.wait = wait; });
          mask &= ~active;
          if (mask == 0) return steps = 0, false;
          ++pc;  // (the lanes its guard passes over go on)
          continue;
        }
        execute(base, active, in);
      }
      ++pc;
    }
  }

  // What a lane executing `in` waits for: its end (ret, exit), the block's barrier, its warp's
  // collective; None for every other instruction.
  Wait waits_at(const Thread& t, const Instruction& in) const {
    const Opcode& op = in.opcode;
    switch (op.op) {
      case Op::Ret:
      case Op::Exit: return Wait::Done;
      case Op::Bar:
        if (op.has(Mod::sync) + op.has(Mod::arrive) + op.has(Mod::red) != 1)
          fail(t, in, "a barrier is one of bar.sync, bar.arrive, bar.red and bar.warp.sync");
        if (op.has(Mod::red) != (op.has(Mod::popc) + op.has(Mod::And) + op.has(Mod::Or) == 1))
          fail(t, in, "bar.red takes one of .popc, .and and .or");
        return op.has(Mod::warp) ? Wait::Warp : Wait::Barrier;
      case Op::Vote:
      case Op::Shfl:  // (the forms without .sync, deprecated and gone from sm_70, name no member mask)
        if (!op.has(Mod::sync)) fail(t, in, fmt::format("{} without .sync is not run: its lanes name no member mask",
                                                        op.text));
        return Wait::Warp;
      case Op::Match:
      case Op::Mma:
      case Op::Ldmatrix: return Wait::Warp;
      default: return Wait::None;
    }
  }

  // `in` for the lanes of `active`, none of them waiting at it: decoded once, executed lane by lane.
  void execute(size_t base, uint32_t active, const Instruction& in) {
    const Opcode& op = in.opcode;
    switch (op.op) {
      case Op::Cp: each_lane(base, active, [&](Thread& t) { async_copy(t, in); }); return;
      case Op::Membar:
      case Op::Fence:  // (lanes one at a time: every access is seen in order; racecheck orders blocks by them)
        if (races && !op.has(Mod::cta)) each_lane(base, active, [&](Thread&) { races->fence(); });
        return;
      case Op::Ld:
      case Op::St: each_lane(base, active, [&](Thread& t) { load_store(t, in); }); return;
      case Op::Atom:
      case Op::Red: each_lane(base, active, [&](Thread& t) { atomic(t, in); }); return;
      case Op::Cvta: each_lane(base, active, [&](Thread& t) { convert_address(t, in); }); return;
      default: break;
    }
    const Type type = op.type(op.types.size() - 1);  // (cvt: the source's type; others have one)
    const size_t n = in.operands.size() - 1;
    std::array<uint64_t, 4> sources{};
    if (n > sources.size())
      fail(threads[base + static_cast<size_t>(std::countr_zero(active))], in, "more than four source operands");
    const Type result = op.type(0);
    each_lane(base, active, [&](Thread& t) {
      for (size_t i = 0; i < n; ++i) sources[i] = value(t, in, in.operands[i + 1], type);
      Computed c;
      try {
        c = compute(op, std::span<const uint64_t>(sources.data(), n), {config.approx, config.seed});
      } catch (const std::exception& e) {
        fail(t, in, e.what());
      }
      write(t, in, in.operands[0], c.value, result);
      if (in.second_destination) write(t, in, *in.second_destination, c.second.value_or(0), Type::Pred);
    });
  }

  // shfl.sync d[|p], a, b, c, membermask for the lanes of one warp waiting at it (ISA: shfl.sync's
  // pseudocode: the source lane j from b and c by mode, clamped within the segment c says).
  void shuffle(std::vector<Thread*>& lanes, const Instruction& in) {
    const Opcode& op = in.opcode;
    std::vector<uint64_t> a(32, 0);
    std::vector<bool> present(32, false);
    for (Thread* t : lanes) a[t->linear % 32] = value(*t, in, in.operands.at(1), Type::B32), present[t->linear % 32] = true;
    for (Thread* t : lanes) {
      const uint32_t lane = t->linear % 32;
      const uint32_t b = static_cast<uint32_t>(value(*t, in, in.operands.at(2), Type::B32)) & 31;
      const uint32_t c = static_cast<uint32_t>(value(*t, in, in.operands.at(3), Type::B32));
      const uint32_t clamp = c & 31, segment = (c >> 8) & 31;
      const uint32_t max_lane = (lane & segment) | (clamp & ~segment), min_lane = lane & segment;
      uint32_t j = 0;
      bool in_range = false;
      if (op.has(Mod::up)) j = lane - b, in_range = static_cast<int32_t>(j) >= static_cast<int32_t>(max_lane);
      if (op.has(Mod::down)) j = lane + b, in_range = j <= max_lane;
      if (op.has(Mod::bfly)) j = lane ^ b, in_range = j <= max_lane;
      if (op.has(Mod::idx)) j = min_lane | (b & ~segment), in_range = j <= max_lane;
      if (!in_range) j = lane;
      if (j >= 32 || !present[j]) fail(*t, in, fmt::format("lane {} reads lane {}, which is not in the shuffle", lane, j));
      write(*t, in, in.operands.at(0), a[j], Type::B32);
      if (in.second_destination) write(*t, in, *in.second_destination, in_range ? 1 : 0, Type::Pred);
    }
  }

  // vote.sync.{all,any,uni}.pred d, {!}a, membermask and vote.sync.ballot.b32 d, {!}a, membermask
  // (ISA: "vote.sync"), over the mask's lanes that have not exited: a true in all of them, in any,
  // alike in all; ballot: the bits of the lanes whose a is true.
  void vote(std::vector<Thread*>& lanes, const Instruction& in) {
    const Opcode& op = in.opcode;
    uint32_t ballot = 0, present = 0;
    for (Thread* t : lanes) {
      const uint32_t bit = 1u << (t->linear % 32);
      present |= bit;
      if (value(*t, in, in.operands.at(1), Type::Pred) & 1) ballot |= bit;
    }
    const uint64_t result = op.has(Mod::ballot) ? ballot
                            : op.has(Mod::all)  ? ballot == present
                            : op.has(Mod::any)  ? ballot != 0
                                                : ballot == 0 || ballot == present;  // .uni
    for (Thread* t : lanes) write(*t, in, in.operands.at(0), result, op.has(Mod::ballot) ? Type::B32 : Type::Pred);
  }

  // match.{any,all}.sync.{b32,b64} d[|p], a, membermask (ISA: "match.sync"), over the mask's lanes
  // that have not exited: any: the lanes whose a equals this lane's; all: those lanes when every a
  // is alike, else 0, and p whether they were.
  void match(std::vector<Thread*>& lanes, const Instruction& in) {
    const Opcode& op = in.opcode;
    std::array<uint64_t, 32> a{};
    uint32_t present = 0;
    for (Thread* t : lanes)
      a[t->linear % 32] = value(*t, in, in.operands.at(1), op.type()), present |= 1u << (t->linear % 32);
    for (Thread* t : lanes) {
      uint32_t alike = 0;
      for (Thread* u : lanes)
        if (a[u->linear % 32] == a[t->linear % 32]) alike |= 1u << (u->linear % 32);
      const bool all_alike = alike == present;
      write(*t, in, in.operands.at(0), op.has(Mod::any) ? alike : all_alike ? present : 0, Type::B32);
      if (in.second_destination) write(*t, in, *in.second_destination, all_alike, Type::Pred);
    }
  }

  // The lanes a collective names: shfl.sync's and bar.warp.sync's mask; the whole warp for the
  // .aligned ones (mma, ldmatrix), which every lane executes together.
  uint32_t members(const Thread& t, const Instruction& in) const {
    if (in.opcode.op == Op::Shfl) return static_cast<uint32_t>(value(t, in, in.operands.at(4), Type::B32));
    if (in.opcode.op == Op::Vote || in.opcode.op == Op::Match)
      return static_cast<uint32_t>(value(t, in, in.operands.at(2), Type::B32));
    if (in.opcode.op == Op::Bar) return static_cast<uint32_t>(value(t, in, in.operands.at(0), Type::B32));
    return 0xffffffffu;
  }

  // Lanes waiting at a warp collective: run it when every live lane its mask names is there.
  bool resolve_warps() {
    bool progressed = false;
    const size_t warps = (threads.size() + 31) / 32;
    std::vector<Thread*>& waiting = waiting_lanes;
    std::vector<Thread*>& group = group_lanes;
    for (size_t w = 0; w < warps; ++w) {
      waiting.clear();
      for (size_t i = w * 32; i < std::min(threads.size(), w * 32 + 32); ++i)
        if (threads[i].wait == Wait::Warp) waiting.push_back(&threads[i]);
      if (waiting.empty()) continue;
      for (const Thread* t : waiting)  // (the ISA leaves a collective undefined for a lane its mask leaves out)
        if (!(members(*t, entry.body[t->pc]) >> (t->linear % 32) & 1))
          fail(*t, entry.body[t->pc], "a lane waits at a collective whose mask leaves it out");
      const Instruction& in = entry.body[waiting.front()->pc];
      const uint32_t member = members(*waiting.front(), in);
      group.clear();
      bool complete = true;
      for (uint32_t lane = 0; lane < 32; ++lane) {
        if (!(member >> lane & 1)) continue;
        const size_t i = w * 32 + lane;
        if (i >= threads.size() || threads[i].wait == Wait::Done) continue;  // (exited, or no such thread)
        if (threads[i].wait != Wait::Warp) complete = false;
        else group.push_back(&threads[i]);
      }
      if (!complete) continue;
      for (Thread* t : group) {
        const Instruction& other = entry.body[t->pc];
        // (lanes at two instructions of the same operands, __syncwarp() on both sides of a branch,
        // run together as sm_70 lets them; of other operands, each lane's would be its own
        // instruction's, which the collective does not take: refused, not run with the first's)
        if (t->pc != waiting.front()->pc && !same_instruction(other, in))
          fail(*t, other, fmt::format("met {} of line {} in one warp collective: lanes at two instructions of other "
                                      "operands are not run together",
                                      in.opcode.text, in.line));
        if (members(*t, other) != member) fail(*t, other, "lanes of one collective name different member masks");
      }
      if (in.opcode.op == Op::Shfl) shuffle(group, in);
      if (in.opcode.op == Op::Ldmatrix) ldmatrix(group, in);
      if (in.opcode.op == Op::Mma) mma(group, in);
      if (in.opcode.op == Op::Vote) vote(group, in);
      if (in.opcode.op == Op::Match) match(group, in);
      for (Thread* t : group) t->wait = Wait::None, ++t->pc;
      shadow.warp_sync(static_cast<uint32_t>(w));
      if (races && in.opcode.op == Op::Bar) races->warp_sync(static_cast<uint32_t>(w));  // (a shuffle orders no memory)
      progressed = true;
    }
    return progressed;
  }

  // A barrier instruction's name (a) and thread count (b, where given): bar.sync a{, b},
  // bar.arrive a, b, bar.red.op d, a{, b}, {!}c.
  std::pair<uint32_t, std::optional<uint64_t>> barrier_operands(const Thread& t, const Instruction& in) const {
    const size_t first = in.opcode.has(Mod::red) ? 1 : 0;
    const size_t given = in.operands.size() - first - (in.opcode.has(Mod::red) ? 1 : 0);
    if (given < 1 || given > 2 || (in.opcode.has(Mod::arrive) && given != 2))
      fail(t, in, "a barrier's operands are a name and a thread count (bar.arrive needs the count)");
    const uint64_t name = value(t, in, in.operands[first], Type::U32);
    if (name > 15) fail(t, in, fmt::format("barrier {}: a block has barriers 0 to 15", name));
    if (given == 1) return {static_cast<uint32_t>(name), std::nullopt};
    const uint64_t count = value(t, in, in.operands[first + 1], Type::U32);
    if (count == 0 || count % 32 != 0)
      fail(t, in, fmt::format("a barrier's thread count of {}: it must be a nonzero multiple of the warp size", count));
    return {static_cast<uint32_t>(name), count};
  }

  // Warp `w`'s arrival at a barrier, where every lane of it that has not exited waits at the same
  // barrier instruction, not yet counted (ISA: a barrier "marks warps' arrival"). bar.sync's and
  // bar.red's lanes wait for the barrier to complete; so do bar.arrive's here, which the ISA lets go
  // on at once: holding them is one schedule a GPU may take, and it lets racecheck order what
  // they did before arriving before what the waiting threads do after.
  bool arrive(size_t w) {
    std::vector<Thread*> lanes;
    for (size_t i = w * 32; i < std::min(threads.size(), w * 32 + 32); ++i) {
      if (threads[i].wait == Wait::Done) continue;
      if (threads[i].wait != Wait::Barrier || threads[i].arrived) return false;
      lanes.push_back(&threads[i]);
    }
    if (lanes.empty()) return false;
    const Instruction& in = entry.body[lanes.front()->pc];
    for (Thread* t : lanes)
      if (t->pc != lanes.front()->pc)
        fail(*t, entry.body[t->pc],
             fmt::format("lanes of one warp wait at different barriers (this and line {}): a bar instruction is "
                         ".aligned, every lane of a warp executes it together",
                         in.line));
    const auto [name, count] = barrier_operands(*lanes.front(), in);
    NamedBarrier& b = barriers[name];
    if (b.warps > 0 && b.count != count)
      fail(*lanes.front(), in, fmt::format("barrier {} awaited with thread counts {} and {}", name,
                                           b.count ? std::to_string(*b.count) : "of the whole block",
                                           count ? std::to_string(*count) : "of the whole block"));
    if (b.warps > 0 && b.red != in.opcode.has(Mod::red))
      fail(*lanes.front(), in,
           fmt::format("barrier {} used by bar.red and another barrier instruction at once (the ISA calls that "
                       "unpredictable)",
                       name));
    ++b.warps, b.count = count, b.red = in.opcode.has(Mod::red);
    for (Thread* t : lanes) {
      if (b.red) b.popc += value(*t, in, in.operands.back(), Type::Pred) & 1, ++b.threads;
      t->arrived = true;
    }
    return true;
  }

  // Completes barrier `name` where the warps it expects have arrived: its thread count's, or every
  // warp of the block. bar.red's lanes receive the reduction (popc: the threads whose predicate is
  // true; and: all of them; or: any). A barrier of the whole block orders the block's accesses for
  // racecheck (what bar.arrive's threads do after it as if they had waited: see arrive); one of
  // some threads orders none there (not modelled: its hand-offs are reported as races, not missed).
  bool complete(uint32_t name) {
    NamedBarrier& b = barriers[name];
    const uint64_t warps = (threads.size() + 31) / 32;
    if (b.warps == 0 || b.warps < (b.count ? *b.count / 32 : warps)) return false;
    const size_t live = static_cast<size_t>(
        std::count_if(threads.begin(), threads.end(), [](const Thread& t) { return t.wait != Wait::Done; }));
    std::vector<size_t> released;  // (their warps, for the timing model)
    for (Thread& t : threads) {
      if (!t.arrived || barrier_operands(t, entry.body[t.pc]).first != name) continue;
      if (released.empty() || released.back() != t.linear / 32) released.push_back(t.linear / 32);
      const Instruction& in = entry.body[t.pc];
      // (bar.sync of the whole block: a thread that ended without reaching it leaves the others
      // waiting for a barrier that code of theirs skipped, what synccheck calls a divergent barrier)
      if (!b.count && live != threads.size())
        fail(t, in, fmt::format("waits at a barrier that other threads of the block never reach ({} of its {} threads "
                                "ended before it: a barrier in divergent code)",
                                threads.size() - live, threads.size()));
      if (in.opcode.has(Mod::popc)) write(t, in, in.operands.at(0), b.popc, Type::U32);
      if (in.opcode.has(Mod::And)) write(t, in, in.operands.at(0), b.popc == b.threads, Type::Pred);
      if (in.opcode.has(Mod::Or)) write(t, in, in.operands.at(0), b.popc > 0, Type::Pred);
      t.arrived = false, t.wait = Wait::None, ++t.pc;
    }
    if (timer) timer->release(released);
    if (!b.count || *b.count >= warps * 32) {
      shadow.barrier();
      if (races) races->barrier();
    }
    b = NamedBarrier{};
    return true;
  }

  bool resolve_barrier() {
    bool progressed = false;
    for (size_t w = 0; w < (threads.size() + 31) / 32; ++w) progressed = arrive(w) || progressed;
    for (uint32_t name = 0; name < barriers.size(); ++name) progressed = complete(name) || progressed;
    return progressed;
  }

  // The block's start: its variables laid out, its threads made, its warps' order drawn.
  void start_block() {
    lay_out_variables();
    make_threads();
    shadow.begin_block(shared.size(), static_cast<uint32_t>((threads.size() + 31) / 32), shared_extents);
    linear_block = ctaid[0] + uint64_t{config.grid.x} * (ctaid[1] + uint64_t{config.grid.y} * ctaid[2]);
    if (races) races->begin_block(linear_block, static_cast<uint32_t>((threads.size() + 31) / 32));
    shared_requests.begin_block(threads.size());
    global_requests.begin_block(threads.size());
    order.resize((threads.size() + 31) / 32);  // (the warps)
    std::iota(order.begin(), order.end(), 0);
    warp_steps.assign(order.size(), 0);
    if (config.seed) {
      std::mt19937_64 random(config.seed ^ (ctaid[0] * 0x9e3779b97f4a7c15ULL));
      std::shuffle(order.begin(), order.end(), random);
      first_lane = static_cast<int>(random() % 32);
      interleave = true;
      schedule.seed(random());
    }
  }

  // One round: every warp runs until it waits (or, seeded, for a quantum), then barriers and
  // collectives that all their threads reached resolve. Returns whether the block has ended (its
  // counts then folded); a round in which nothing could move is a deadlock, refused.
  bool run_round() {
    if (races) races->resume_block(linear_block);  // (another block may have run since)
    bool progressed = false;
    if (interleave) std::shuffle(order.begin(), order.end(), schedule);
    for (size_t w : order) progressed = run_warp(w) || progressed;
    progressed = resolve_warps() || progressed;
    progressed = resolve_barrier() || progressed;
    if (std::all_of(threads.begin(), threads.end(), [](const Thread& t) { return t.wait == Wait::Done; })) {
      count_requests();
      fold_counts();
      if (timer) counts.block_cycles += timer->cycles();
      if (races) races->end_block(linear_block);
      return true;
    }
    if (!progressed) {
      for (const Thread& t : threads)
        if (t.wait != Wait::Done)
          fail(t, entry.body[t.pc], t.wait == Wait::Barrier
                                        ? "waits at a barrier that other threads of the block never reach (a barrier "
                                          "in divergent code)"
                                        : "waits at a warp collective that its mask's other lanes never reach");
    }
    return false;
  }
};

namespace {

// At most `most` of `blocks` (2 or more), spread evenly in index order, the first and last among them.
std::vector<std::array<uint32_t, 3>> sampled(const std::vector<std::array<uint32_t, 3>>& blocks, uint32_t most) {
  if (most < 2) throw Error(fmt::format("a sample of {} block(s) a launch: give 2 or more (the first and the last)", most));
  if (blocks.size() <= most) return blocks;
  std::vector<std::array<uint32_t, 3>> out;
  for (uint64_t i = 0; i < most; ++i) out.push_back(blocks[i * (blocks.size() - 1) / (most - 1)]);
  return out;
}

// The counts that add up over blocks, multiplied by `factor` (the grid's blocks over those run).
void scale_per_block_counts(LaunchCounts& c, double factor) {
  auto scaled = [factor](uint64_t& n) { n = static_cast<uint64_t>(std::llround(static_cast<double>(n) * factor)); };
  scaled(c.thread_instructions);
  for (auto& [op, n] : c.by_op) scaled(n);
  for (uint64_t& n : c.by_class) scaled(n);
  for (auto& widths : c.by_width)
    for (uint64_t& n : widths) scaled(n);
  for (uint64_t* n : {&c.shared_requests, &c.shared_wavefronts, &c.shared_ideal_wavefronts, &c.global_requests,
                      &c.global_sectors, &c.global_ideal_sectors, &c.block_cycles})
    scaled(*n);
  c.flops *= factor;
  c.mma_flops *= factor;
}

}  // namespace

LaunchCounts& LaunchCounts::operator+=(const LaunchCounts& other) {
  thread_instructions += other.thread_instructions;
  for (const auto& [op, n] : other.by_op) by_op[op] += n;
  for (size_t c = 0; c < kInstructionClasses; ++c) by_class[c] += other.by_class[c];
  for (size_t k = 0; k < by_width.size(); ++k)
    for (size_t w = 0; w < kAccessWidths; ++w) by_width[k][w] += other.by_width[k][w];
  flops += other.flops;
  shared_requests += other.shared_requests;
  shared_wavefronts += other.shared_wavefronts;
  shared_ideal_wavefronts += other.shared_ideal_wavefronts;
  global_requests += other.global_requests;
  global_sectors += other.global_sectors;
  global_ideal_sectors += other.global_ideal_sectors;
  blocks += other.blocks;
  warps += other.warps;
  mma_flops += other.mma_flops;
  executed_blocks += other.executed_blocks;
  global_racecheck_partial += other.global_racecheck_partial;
  block_cycles += other.block_cycles;
  block_threads = std::max(block_threads, other.block_threads);
  block_shared_bytes = std::max(block_shared_bytes, other.block_shared_bytes);
  return *this;
}

Emulator::~Emulator() = default;
Emulator::Emulator(Emulator&&) noexcept = default;

Emulator::Emulator(Module module)
    : module_(std::move(module)), shadow_(std::make_unique<SharedShadow>()), races_(std::make_unique<GlobalRaces>()) {
  for (const Variable& v : module_.variables) {
    if (v.space != Space::Global && v.space != Space::Const) continue;
    storage_.emplace_back(v.init.empty() ? std::vector<uint8_t>(std::max<uint64_t>(v.bytes, 1), 0) : v.init);
    const auto address = reinterpret_cast<uint64_t>(storage_.back().data());
    addresses_[v.name] = address;
  }
  for (const auto& s : storage_) globals_[reinterpret_cast<uint64_t>(s.data())] = s.size();
}

void Emulator::add_global(const void* base, uint64_t bytes) { globals_[reinterpret_cast<uint64_t>(base)] = bytes; }

void Emulator::clear_globals() {
  globals_.clear();
  for (const auto& s : storage_) globals_[reinterpret_cast<uint64_t>(s.data())] = s.size();
}

std::vector<uint8_t> Emulator::pack_params(const std::string& name, const std::vector<uint64_t>& values) const {
  const Entry* e = module_.entry(name);
  if (!e) throw Error(fmt::format("{}: no kernel {}", module_.name, name));
  if (values.size() != e->params.size())
    throw Error(fmt::format("{}: kernel {} takes {} parameters, given {}", module_.name, name, e->params.size(),
                            values.size()));
  std::vector<uint8_t> bytes(e->params.empty() ? 0 : e->params.back().offset + e->params.back().bytes, 0);
  for (size_t i = 0; i < values.size(); ++i)
    std::memcpy(bytes.data() + e->params[i].offset, &values[i], std::min<uint64_t>(8, e->params[i].bytes));
  return bytes;
}

LaunchCounts Emulator::launch(const std::string& name, const std::vector<uint8_t>& params, const LaunchConfig& config) {
  const Entry* e = module_.entry(name);
  if (!e) throw Error(fmt::format("{}: no kernel {}", module_.name, name));
  const uint32_t block[3] = {config.block.x, config.block.y, config.block.z};
  const uint32_t grid[3] = {config.grid.x, config.grid.y, config.grid.z};
  check_launch_limits(*e, block, grid, lay_out_shared(module_, *e, config.dynamic_shared_bytes), config.limits);
  if (e->maxntid[0] > 0 && config.block.count() > uint64_t{static_cast<uint64_t>(e->maxntid[0])} *
                                                    static_cast<uint64_t>(std::max(1, e->maxntid[1])) *
                                                    static_cast<uint64_t>(std::max(1, e->maxntid[2])))
    throw Error(fmt::format("kernel {}: {} threads a block, more than its .maxntid {}x{}x{}", name, config.block.count(),
                            e->maxntid[0], e->maxntid[1], e->maxntid[2]));
  // (ISA: each dimension of every launch's block equal to .reqntid's, or the launch fails)
  if (e->reqntid[0] > 0 && (config.block.x != static_cast<uint32_t>(e->reqntid[0]) ||
                            config.block.y != static_cast<uint32_t>(e->reqntid[1]) ||
                            config.block.z != static_cast<uint32_t>(e->reqntid[2])))
    throw Error(fmt::format("kernel {}: a block of {}x{}x{} threads, and its .reqntid requires {}x{}x{} (a launch of "
                            "another shape fails)",
                            name, config.block.x, config.block.y, config.block.z, e->reqntid[0], e->reqntid[1],
                            e->reqntid[2]));
  if (std::fegetround() != FE_TONEAREST)
    throw Error(fmt::format("kernel {}: launched with the host rounding other than to nearest (see semantics.h)", name));
  LaunchCounts counts;
  std::vector<std::array<uint32_t, 3>> blocks;
  for (uint32_t z = 0; z < config.grid.z; ++z)
    for (uint32_t y = 0; y < config.grid.y; ++y)
      for (uint32_t x = 0; x < config.grid.x; ++x) blocks.push_back({x, y, z});
  const uint64_t grid_blocks = blocks.size();
  if (config.sample_blocks > 0) blocks = sampled(blocks, config.sample_blocks);
  if (config.seed) std::shuffle(blocks.begin(), blocks.end(), std::mt19937_64(config.seed));
  const bool racecheck = config.global_racecheck && config.sample_blocks == 0;
  if (racecheck) races_->begin_launch();
  // (what racecheck remembered is let go when the launch ends, however it ends: one emulator a kernel)
  struct Forget {
    GlobalRaces& races;
    ~Forget() { races.begin_launch(); }
  } forget{*races_};
  std::optional<BufferBounds> bounds;
  if (!config.buffers.empty()) {
    std::vector<Buffer> buffers = config.buffers;  // (and the module's own variables)
    for (const auto& s : storage_)
      buffers.push_back({reinterpret_cast<uint64_t>(s.data()), s.size(), "a variable of the module"});
    bounds.emplace(std::move(buffers));
  }
  const std::vector<InstructionClass> classes = classes_of(*e);  // (address work: a whole-kernel analysis)
  // A slot per resident block: its shared memory's shadow and its timer (one block at a time: the
  // emulator's shadow, kept from launch to launch).
  const size_t resident = config.seed && config.resident_blocks > 1 ? std::min<size_t>(config.resident_blocks, blocks.size()) : 1;
  std::vector<std::unique_ptr<SharedShadow>> own_shadows;
  std::vector<BlockTimer> timers(resident, BlockTimer(*e, config.latencies, (config.block.count() + 31) / 32));
  std::vector<SharedShadow*> shadows{shadow_.get()};
  while (shadows.size() < resident) shadows.push_back(own_shadows.emplace_back(std::make_unique<SharedShadow>()).get());
  auto begin = [&](const std::array<uint32_t, 3>& b, size_t slot) {
    auto run = std::unique_ptr<BlockRun>(
        new BlockRun{*this, *e, config, params, {b[0], b[1], b[2]}, counts, *shadows[slot]});  // (the rest: defaults)
    if (racecheck) run->races = races_.get();
    if (bounds) run->bounds = &*bounds;
    run->entry_classes = &classes;
    if (timers[slot].on()) timers[slot].begin_block(), run->timer = &timers[slot];
    run->start_block();
    return run;
  };
  auto fold = [&](const BlockRun& run) {
    for (size_t op = 0; op < kOps; ++op)
      if (run.by_op[op]) counts.by_op[static_cast<Op>(op)] += run.by_op[op];
    for (size_t c = 0; c < kInstructionClasses; ++c) counts.by_class[c] += run.by_class[c];
    for (size_t k = 0; k < run.by_width.size(); ++k)
      for (size_t w = 0; w < kAccessWidths; ++w) counts.by_width[k][w] += run.by_width[k][w];
    counts.flops += run.flops;
    counts.mma_flops += run.mma_flops;
  };
  // (each round of the running blocks in a seeded order; a block that ends gives its slot to the
  // next of the grid's order)
  std::vector<std::pair<std::unique_ptr<BlockRun>, size_t>> running;  // a block and its slot
  std::mt19937_64 turns(config.seed ^ 0x5bd1e995u);
  size_t next = 0;
  std::vector<size_t> free_slots(resident);
  std::iota(free_slots.rbegin(), free_slots.rend(), 0);
  while (next < blocks.size() || !running.empty()) {
    while (!free_slots.empty() && next < blocks.size()) {
      const size_t slot = free_slots.back();
      free_slots.pop_back();
      running.emplace_back(begin(blocks[next++], slot), slot);
    }
    if (running.size() > 1) std::shuffle(running.begin(), running.end(), turns);
    for (size_t i = 0; i < running.size();) {
      if (!running[i].first->run_round()) {
        ++i;
        continue;
      }
      fold(*running[i].first);
      free_slots.push_back(running[i].second);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (blocks.size() < grid_blocks) scale_per_block_counts(counts, static_cast<double>(grid_blocks) / blocks.size());
  counts.executed_blocks = blocks.size();
  counts.global_racecheck_partial = racecheck && !races_->covered();
  counts.blocks = grid_blocks;
  counts.warps = grid_blocks * ((config.block.count() + 31) / 32);
  counts.block_threads = config.block.count();
  counts.block_shared_bytes = lay_out_shared(module_, *e, config.dynamic_shared_bytes).total_bytes;
  return counts;
}

}  // namespace bertc::ptx
