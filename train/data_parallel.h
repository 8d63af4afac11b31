// Data parallelism in the trainer: which micro-batches a rank trains on, the gradient exchange
// between its micro-batches and the optimizer step, statistics over the global batch, and the
// checks that every rank runs the same program and holds the same parameters. With one rank every
// call is the identity, and training is what it always was.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/gradient_casts.h"
#include "distributed/communicator.h"
#include "distributed/gradient_exchange.h"
#include "run_config/config.h"
#include "passes/pipeline.h"
#include "support/tensor_io.h"
#include "run_folder/checkpoint.h"
#include "train/graph_runner.h"
#include "run_folder/progress.h"
#include "runtime/device.h"
#include "runtime/device_collective.h"
#include "runtime/plan_executor.h"

namespace bertc::train {

// The device memory a device's collective library takes beyond the plan (0 where the sums will not
// be its library's: one rank, allreduce = "host", PowerSGD, a device without one; the CPU
// reference's `device` is DeviceCapabilities{}), for --batch-size auto to leave free: the library's
// own buffers (collective_library_bytes: NCCL's on a GPU) and with fp16 / bf16 compression the
// buckets' buffers of 16-bit shares, 2 bytes for each of the model's `param_elements`.
uint64_t collective_reserve_bytes(const run_config::TrainConfig& t, int ranks, const runtime::DeviceCapabilities& device,
                                  int64_t param_elements);

class DataParallel {
 public:
  // The exchange's tensors are the step graph's gradient accumulators, the last param's first
  // (the backward finishes the last layer first).
  DataParallel(distributed::Communicator& comm, const passes::TrainingProgram& program, const run_config::TrainConfig& t);

  int rank() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  bool leader() const { return comm_.rank() == 0; }
  // The fp32 bytes of every gradient (what `none` all-reduces per step); 0 with one rank.
  uint64_t dense_bytes() const { return exchange_ ? exchange_->dense_bytes() : 0; }

  // The global index of this rank's micro-batch `local` (its (s-1) K + k): a global batch's
  // micro-batches are dealt out round the ranks, so that R ranks of K accumulation steps train on
  // the micro-batches — and dropout masks — that one rank of R x K does, in the same steps.
  int64_t global_micro_batch(int64_t local) const { return local * ranks() + rank(); }

  // Chooses where the sums are made, once the runners exist, and says so in a line. Inside the
  // step's run of the last micro-batch of each optimizer step: each bucket's sum starts as soon as
  // the backward has written its gradients (the last layer's first) and all are waited for after
  // the step's last op or launch — over MPI or Gloo on the CPU reference and the Host device (in
  // its device graph), with NCCL on a second stream of a GPU's CUDA Graph ([train] allreduce auto
  // or nccl; fp16 / bf16 rounded by kernels of ours on the GPU before NCCL sums them, widened
  // after): the device's own sums (Device::open_collective). PowerSGD needs every gradient at once: in the Host device's optimizer graph, else
  // between the step and the optimizer. Staged through `env` between them: a GPU's PowerSGD or
  // allreduce = "host" gradients. Every rank chooses alike (NCCL only when every
  // rank has the same). Throws TrainError for an allreduce = "nccl" that cannot be.
  std::string attach(GraphRunner& step, GraphRunner& optimizer, runtime::Device* device);
  // Whether gradients are summed at all (several ranks, or NCCL forced on one).
  bool exchanges() const { return path_ != SumPath::None; }
  // Whether the sums are made inside the runs (a step and its optimizer may then run together,
  // on a device as one graph with them).
  bool sums_in_runs() const { return path_ == SumPath::InRuns || path_ == SumPath::OnDevice; }

  // Before each micro-batch of optimizer step `step` (`last`: its last): the last one's graph
  // holds the sums, after rank 0 has seen every rank arrive.
  void before_micro_batch(GraphRunner& step_runner, int64_t step, bool last);
  // Before the optimizer step: staged sums are made now, in place in `env` and on the device
  // (after rank 0 has seen every rank arrive).
  void before_optimizer(GraphRunner& optimizer, support::Environment& env, int64_t step);
  // After the optimizer step ran (`grad_norm`: its norm of the summed gradients): what was sent.
  // Throws TrainError when the sums hold inf or nan and no loss scaling skips the step.
  distributed::ExchangeResult end_exchange(int64_t step, bool loss_scaling, double grad_norm);
  // While it lives, a wait on the device's sums is bounded by [train] rank_timeout (NCCL's
  // watchdog); nullptr where the communicator's deadlines bound them, or there are none.
  std::unique_ptr<runtime::DeviceCollective::Watch> watch(int64_t step);

  // Losses, accuracy counts and tokens of the whole global batch (every rank gets them).
  void reduce(run_folder::StepStats& stats);
  // After step `step` (a collective): the largest of the ranks' `stop` (0: go on; a signal's
  // number; a stop of the trainer's own), so that every rank stops after the same step.
  int agreed_stop(int stop, int64_t step);

  // Refuses, on every rank, a run whose ranks train on another device (`device`: its name, the
  // GPU model included; --device auto may pick another on another machine), compiled another
  // `program` (its graphs' text) or read other `data` than rank 0 (what identifies it, said as is:
  // its examples' count and content, the vocabulary's hash).
  void check_same_run(const std::string& program, const std::string& data, const std::string& device);

  // Rank 0's `start` and every manifest tensor of its `env` to every rank: only rank 0 reads
  // checkpoints and --init files (the other machines need not see them).
  void share_state(support::Environment& env, const run_folder::TensorManifest& manifest, int64_t& start);

  // At a checkpoint, on every rank: the gradient exchange's own state (PowerSGD's; a collective),
  // for rank 0 to save beside the params. Empty without PowerSGD.
  support::Environment exchange_state();
  // After share_state, on every rank: the exchange's state from rank 0's `env` (a checkpoint's
  // tensors named dist.*). Returns a line for the log, "" when there is nothing to say.
  std::string restore_exchange_state(const support::Environment& env);

  // ZeRO stage 1 ([train] zero_stage = 1 on several ranks): each rank runs the optimizer graph of its
  // shard of the params (passes/optimizer_shards.h; passes::compile_optimizer) and keeps only their
  // optimizer state. Before its step (before_optimizer) every gradient is summed on the rank that
  // updates it (one reduce-scatter of the gradients packed by shard) and the ranks' sums of squares
  // are added up for the global norm (the input grad_acc_sum_of_squares); after it
  // (after_optimizer) each rank's updated params go to every rank (one all-gather).
  bool shards_optimizer() const { return !tensor_owner_.empty(); }
  // After the optimizer step: the params of every rank's shard into every rank's `env` (read from
  // `optimizer`'s device, written onto `step`'s). Nothing without ZeRO.
  void after_optimizer(GraphRunner& optimizer, GraphRunner& step, support::Environment& env, int64_t step_number);
  // ZeRO: the optimizer state that other ranks keep, out of `env` (after share_state: rank 0 read a
  // checkpoint of the whole model's, or every rank made it afresh).
  void drop_others_state(support::Environment& env) const;
  // ZeRO, at a checkpoint (a collective): every rank's optimizer state into rank 0's `env` (by the
  // names of `manifest`, the whole program's), for it to save the whole model's — a checkpoint that
  // resumes on any number of ranks, with or without ZeRO. The others' env is unchanged.
  void gather_sharded_state(support::Environment& env, const run_folder::TensorManifest& manifest);

  // At a checkpoint: every rank's params must hash alike; throws TrainError naming the ranks that
  // differ from rank 0 (with ZeRO, the optimizer state each rank keeps of its own params is not
  // compared).
  void check_same_parameters(const support::Environment& env, const run_folder::TensorManifest& manifest, int64_t step);

 private:
  // None: one rank; Staged: between the step and the optimizer, through env; InRuns: inside the
  // CPU reference's step or the Host device's optimizer graph (PowerSGD), over MPI or Gloo, by the
  // GradientExchange; OnDevice: in a device's step run, of the device's own buffers (NCCL's sums
  // in a GPU's CUDA Graph; MPI's or Gloo's issued among the Host device's launches).
  enum class SumPath { None, Staged, InRuns, OnDevice };
  std::string attach_sums(GraphRunner& step, GraphRunner& optimizer, runtime::Device* device);
  // ZeRO stage 1: who updates each param, from the whole `program` (its optimizer graph's states).
  void shard_optimizer(const passes::TrainingProgram& program);
  // A device whose sums are a collective library's on a second queue (InRunSums::SideQueue: NCCL
  // on a GPU), where staging through host memory is the way round it.
  std::string attach_library_sums(runtime::Device& device, GraphRunner& step);
  // The OnDevice sums' hooks in the step's run: the device's sums (`sums`, from open_collective)
  // issued as the backward writes each bucket, and joined before the updates.
  std::string attach_device_sums(runtime::Device& device, GraphRunner& step, std::unique_ptr<runtime::DeviceCollective> sums);
  // One bucket's sums on a device: of its gradients in place (f32), or of `packed`, a device
  // buffer of their 16-bit shares one after the other, which the casts' kernels fill and read back.
  struct DeviceBucket {
    distributed::Element element = distributed::Element::F32;
    std::vector<size_t> counts;                          // by tensor of the bucket
    size_t total = 0;
    void* packed = nullptr;                              // fp16 / bf16 only
    std::vector<const codegen::GradientCasts*> casts;    // by tensor, fp16 / bf16 only
  };
  std::vector<DeviceBucket> device_buckets(runtime::Device& device, distributed::Compression compression);
  // Renders the gradient casts into casts_ and loads them on `device` (throws as Device::load does).
  void load_casts(runtime::Device& device, ir::DType half);
  // Launches the pack (gradient -> the bucket's 16-bit buffer) or unpack kernel of tensor j of bucket b.
  void launch_cast(runtime::Device& device, size_t b, size_t j, bool pack, float* gradient);
  // Per bucket, the step graph's values it sums: its accumulators' next values (the gradient
  // summed over the micro-batches so far); and a hook's groups' data back by tensor.
  std::vector<std::vector<ir::ValueId>> bucket_values() const;
  std::vector<float*> by_tensor(const std::vector<GraphRunner::GroupData>& groups) const;

  distributed::Communicator& comm_;
  const ir::Graph& step_graph_;
  distributed::AllReduce allreduce_;
  double timeout_;
  std::vector<distributed::GradientTensor> tensors_;
  std::vector<std::string> accumulators_;
  std::vector<std::string> momenta_, variances_;  // 1-bit: the optimizer's exp_avg and exp_avg_sq, by accumulator
  std::vector<std::vector<float>> frozen_variances_;  // 1-bit: exp_avg_sq past the warm-up (it no longer changes)
  std::string onebit_name_;  // "1-bit Adam" or "1-bit LAMB": the optimizer's, for the log
  int64_t accumulation_ = 1;           // this rank's micro-batches a step
  std::unique_ptr<distributed::GradientExchange> exchange_;
  SumPath path_ = SumPath::None;
  std::unique_ptr<runtime::DeviceCollective> device_sums_;  // OnDevice: the device's own sums
  std::map<int64_t, codegen::GradientCasts> casts_;  // by element count (stable addresses: launches keep them)
  std::vector<DeviceBucket> device_buckets_;
  int64_t step_ = 0;                 // the step the in-graph sums are made for
  // ZeRO: the rank updating each tensor (tensors_' order), and the optimizer states that are a
  // param's (by name: its owner).
  std::vector<int> tensor_owner_;
  std::map<std::string, int> sharded_state_owner_;
  std::vector<std::string> params_;  // by tensor (tensors_' order)
  std::vector<size_t> shard_order_;  // ZeRO: tensors_' indices, rank 0's shard first, then rank 1's, ...
  std::vector<size_t> shard_counts_; // ZeRO: each rank's elements
  // ZeRO: tensors named `names` (by tensor: accumulators_ or params_) packed in shard_order_, as
  // the communicator's shares are laid out: every rank's (`all`), or this rank's alone (the rest 0).
  std::vector<float> pack_shares(const support::Environment& env, const std::vector<std::string>& names, bool all) const;
  // The other way: this rank's share (`mine`) or every other rank's back into `env`.
  void unpack_shares(const std::vector<float>& packed, support::Environment& env, const std::vector<std::string>& names,
                     bool mine) const;
  // ZeRO: the names of tensors_' entries (accumulators_ or params_) that rank `owner` updates.
  std::vector<std::string> owned_by(const std::vector<std::string>& names, int owner) const;
  distributed::ExchangeResult result_;      // of the last exchange
};

// What the exchange sums: the step graph's gradient accumulators (named so), the last param's
// first. Throws TrainError for a param that is not f32.
std::vector<distributed::GradientTensor> gradient_tensors(const ir::Graph& step);

// The 16-bit type a device rounds gradients to before their sums (fp16, bf16), or nullopt.
std::optional<ir::DType> rounded_dtype(distributed::Compression c);

// The kernels a data-parallel run launches beside the graphs' (the gradient casts of fp16 / bf16
// compression), for a compiled program to carry their images; empty without them.
std::vector<codegen::KernelSpec> runtime_kernels(const ir::Graph& step, const run_config::TrainConfig& t);

// Whether a GPU's sums under `c` run inside the last micro-batch's backward (NCCL's bucketed fp32,
// fp16 and bf16 sums, [train] allreduce auto) rather than after it on the host (PowerSGD and 1-bit
// need every gradient at once): which of bertc estimate's step columns is bertc's. Fine-tuning's
// (`finetune`) never do: its length buckets' step graphs share the accumulators, and its sums are
// staged through host memory between the step and the optimizer (train/finetune.cpp).
bool sums_overlap_backward(distributed::Compression c, bool finetune);

// Whether a run of `ranks` ranks shards its optimizer step ([train] zero_stage = 1 on several
// ranks: ZeRO stage 1); one rank has nothing to shard.
bool shards_optimizer(const run_config::TrainConfig& t, int ranks);

// The settings of the exchange from [train].
distributed::ExchangeOptions exchange_options(const run_config::TrainConfig& t);

// Before any other collective: refuses, on every rank, ranks whose bertc binary or settings
// (config and flags, but the data's paths; `device`: the --device asked for) differ from rank
// 0's, naming the settings — a rank of another model would otherwise exchange buffers of other
// sizes.
void check_same_start(distributed::Communicator& comm, const run_config::Config& config, const std::string& device);

}  // namespace bertc::train
