// Bucketed, compressed gradient sums over the ranks (see gradient_exchange.h).
#include "distributed/gradient_exchange.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "ir/float16.h"

namespace bertc::distributed {
namespace {

int64_t numel(const ir::Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

// A tensor as PowerSGD's matrix: its first dimension by the rest.
Matrix as_matrix(const ir::Shape& s) { return s.size() < 2 ? Matrix{numel(s), 1} : Matrix{s[0], numel(s) / s[0]}; }

bool all_finite(const std::vector<float*>& data, const std::vector<GradientTensor>& tensors) {
  for (size_t t = 0; t < tensors.size(); ++t) {
    const int64_t n = numel(tensors[t].shape);
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(data[t][i])) return false;
  }
  return true;
}

}  // namespace

Element sum_element(Compression c) {
  return c == Compression::Fp16 ? Element::F16 : c == Compression::Bf16 ? Element::Bf16 : Element::F32;
}

PowerSgdSplit powersgd_split(const std::vector<GradientTensor>& tensors, const ExchangeOptions& options) {
  PowerSgdSplit split;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const Matrix m = as_matrix(tensors[t].shape);
    const int64_t r = std::min({options.powersgd_rank, m.rows, m.cols});
    const bool worth_it = m.cols > 1 && double((m.rows + m.cols) * r) <= options.powersgd_max_share * double(m.rows * m.cols);
    (worth_it ? split.compressed : split.dense).push_back(t);
    if (worth_it) split.factor_floats += (m.rows + m.cols) * r;
  }
  return split;
}

uint64_t compressed_bytes_of(const std::vector<GradientTensor>& tensors, const ExchangeOptions& options, int ranks) {
  uint64_t dense = 0;
  for (const GradientTensor& t : tensors) dense += static_cast<uint64_t>(numel(t.shape)) * 4;
  switch (options.compression) {
    case Compression::OneBit:  // (and the clipping's one number summed)
      return static_cast<uint64_t>(ranks) * onebit_bytes(onebit_part(static_cast<size_t>(dense / 4), ranks)) +
             (options.max_grad_norm > 0 ? 8 : 0);
    case Compression::None: return dense;
    case Compression::Fp16: case Compression::Bf16: return dense / 2;
    case Compression::PowerSgd: {
      const PowerSgdSplit split = powersgd_split(tensors, options);
      uint64_t bytes = 4 + static_cast<uint64_t>(split.factor_floats) * 4;  // (4: the finite-check flag)
      for (size_t t : split.dense) bytes += static_cast<uint64_t>(numel(tensors[t].shape)) * 4;
      return bytes;
    }
  }
  return 0;
}

uint64_t latency_hops_of(const std::vector<GradientTensor>& tensors, const ExchangeOptions& options, int ranks) {
  const uint64_t sum = 2 * static_cast<uint64_t>(ranks - 1), half = static_cast<uint64_t>(ranks - 1);
  std::vector<size_t> all(tensors.size());
  std::iota(all.begin(), all.end(), size_t{0});
  switch (options.compression) {
    case Compression::OneBit: return 2 * half + (options.max_grad_norm > 0 ? sum : 0);
    case Compression::None: case Compression::Fp16: case Compression::Bf16:
      return sum * GradientExchange::make_buckets(tensors, all, options.bucket_bytes).size();
    case Compression::PowerSgd: {
      const PowerSgdSplit split = powersgd_split(tensors, options);
      return sum * (3 + GradientExchange::make_buckets(tensors, split.dense, options.bucket_bytes).size());
    }
  }
  return 0;
}

GradientExchange::GradientExchange(Communicator& comm, std::vector<GradientTensor> tensors, ExchangeOptions options)
    : comm_(comm), tensors_(std::move(tensors)), options_(options) {
  std::vector<size_t> all(tensors_.size());
  std::iota(all.begin(), all.end(), size_t{0});
  buckets_ = make_buckets(tensors_, all, options_.bucket_bytes);
  for (const GradientTensor& t : tensors_) elements_ += static_cast<size_t>(numel(t.shape));
  if (options_.compression == Compression::OneBit) {
    // (the frozen variance's bias correction 1 - beta2^warmup is 0 without a warm-up step)
    if (options_.onebit_warmup_steps < 1)
      throw std::invalid_argument("1-bit compression needs a warm-up step at least: [train] onebit_warmup_steps >= 1");
    onebit_ = std::make_unique<OneBitAverage>(elements_, comm_.size());
  }
  if (options_.compression != Compression::PowerSgd) return;
  PowerSgdSplit split = powersgd_split(tensors_, options_);
  if (split.compressed.empty()) {
    int64_t largest = 0;  // the largest rank that compresses some matrix (the share rule, r <= share rc / (r + c))
    for (const GradientTensor& t : tensors_) {
      const Matrix m = as_matrix(t.shape);
      if (m.cols > 1)
        largest = std::max(largest, static_cast<int64_t>(options_.powersgd_max_share * double(m.rows * m.cols) /
                                                         double(m.rows + m.cols)));
    }
    throw std::invalid_argument(fmt::format(
        "[train] gradient_compression = \"powersgd\" with powersgd_rank = {} compresses none of the {} gradients (a "
        "matrix is compressed when its rank-{} factors are at most {:g} of its size): everything would be sent in "
        "fp32. {}",
        options_.powersgd_rank, tensors_.size(), options_.powersgd_rank, options_.powersgd_max_share,
        largest > 0 ? fmt::format("Lower powersgd_rank to {} or less, or use gradient_compression = \"fp16\"", largest)
                    : "No gradient is large enough for it: use gradient_compression = \"fp16\" or \"bf16\""));
  }
  std::vector<Matrix> matrices;
  for (size_t t : split.compressed) matrices.push_back(as_matrix(tensors_[t].shape));
  compressed_ = std::move(split.compressed);
  dense_ = std::move(split.dense);
  dense_buckets_ = make_buckets(tensors_, dense_, options_.bucket_bytes);
  powersgd_ = std::make_unique<PowerSgd>(std::move(matrices), options_.powersgd_rank, options_.seed);
}

std::string GradientExchange::compression_summary() const {
  if (options_.compression != Compression::PowerSgd) return "";
  uint64_t dense = 0;
  for (size_t t : dense_) dense += static_cast<uint64_t>(numel(tensors_[t].shape)) * 4;
  return fmt::format("PowerSGD rank {} compresses {} of the {} gradients; {} ({:.2f} MiB: vectors, and matrices too "
                     "small for rank {}) go in fp32",
                     options_.powersgd_rank, compressed_.size(), tensors_.size(), dense_.size(),
                     static_cast<double>(dense) / (1 << 20), options_.powersgd_rank);
}

GradientExchange::~GradientExchange() {
  for (InFlight& f : in_flight_)
    if (f.pending) f.pending->wait();
}

uint64_t GradientExchange::dense_bytes() const {
  uint64_t n = 0;
  for (const GradientTensor& t : tensors_) n += static_cast<uint64_t>(numel(t.shape)) * 4;
  return n;
}

GradientExchange::Buckets GradientExchange::make_buckets(const std::vector<GradientTensor>& tensors,
                                                                const std::vector<size_t>& which, int64_t bucket_bytes) {
  Buckets buckets;
  int64_t filled = 0;
  for (size_t t : which) {
    const int64_t bytes = numel(tensors[t].shape) * 4;
    if (buckets.empty() || filled + bytes > bucket_bytes) {
      if (buckets.empty() || !buckets.back().empty()) buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(t);
    filled += bytes;
  }
  return buckets;
}

uint64_t GradientExchange::start(const std::vector<float*>& bucket_data, const std::vector<size_t>& bucket,
                                 Compression compression) {
  const bool half = compression == Compression::Fp16 || compression == Compression::Bf16;
  const Element element = sum_element(compression);
  // 16-bit sums add each rank's share (its gradient / ranks): the sum then stays within the
  // range of the mean, not of ranks times it. Powers of two scale exactly.
  const float ranks = static_cast<float>(comm_.size());
  InFlight& f = in_flight_.emplace_back();
  f.tensors = bucket;
  size_t n = 0;
  for (size_t t : bucket) n += static_cast<size_t>(numel(tensors_[t].shape));
  size_t at = 0;
  if (half) f.f16.resize(n);
  else f.f32.resize(n);
  for (size_t j = 0; j < bucket.size(); ++j) {
    const float* data = bucket_data.at(j);
    const int64_t count = numel(tensors_[bucket[j]].shape);
    for (int64_t i = 0; i < count; ++i, ++at) {
      if (!half) f.f32[at] = data[i];
      else f.f16[at] = compression == Compression::Fp16 ? ir::f16_bits(data[i] / ranks) : ir::bf16_bits(data[i] / ranks);
    }
  }
  f.pending = comm_.start_sum(half ? static_cast<void*>(f.f16.data()) : f.f32.data(), n, element);
  return n * element_bytes(element);
}

void GradientExchange::finish(const std::vector<float*>& data, Compression compression) {
  const bool half = compression == Compression::Fp16 || compression == Compression::Bf16;
  const float ranks = static_cast<float>(comm_.size());
  for (InFlight& f : in_flight_) {
    f.pending->wait();
    size_t at = 0;
    for (size_t t : f.tensors) {
      const int64_t count = numel(tensors_[t].shape);
      for (int64_t i = 0; i < count; ++i, ++at) {
        if (!half) data[t][i] = f.f32[at];
        else data[t][i] = ranks * (compression == Compression::Fp16 ? ir::from_f16_bits(f.f16[at]) : ir::from_bf16_bits(f.f16[at]));
      }
    }
  }
  in_flight_.clear();
}

uint64_t GradientExchange::sum_in_buckets(const std::vector<float*>& data, const Buckets& buckets,
                                          Compression compression) {
  uint64_t bytes = 0;
  for (const std::vector<size_t>& bucket : buckets) {
    std::vector<float*> bucket_data;
    for (size_t t : bucket) bucket_data.push_back(data[t]);
    bytes += start(bucket_data, bucket, compression);
  }
  finish(data, compression);  // the later buckets travel while the earlier ones are unpacked
  return bytes;
}

void GradientExchange::start_bucket(size_t bucket, const std::vector<float*>& bucket_data) {
  if (options_.compression == Compression::PowerSgd || options_.compression == Compression::OneBit)
    throw std::logic_error("PowerSGD and 1-bit compress every gradient at once: exchange(), not start_bucket()");
  started_bytes_ += start(bucket_data, buckets_.at(bucket), options_.compression);
}

ExchangeResult GradientExchange::finish_buckets(const std::vector<float*>& data) {
  ExchangeResult r;
  if (in_flight_.size() != buckets_.size())
    throw std::logic_error("finish_buckets() before every bucket was started");
  finish(data, options_.compression);
  r.bytes = std::exchange(started_bytes_, 0);
  r.compressed = options_.compression != Compression::None;
  r.finite = all_finite(data, tensors_);
  return r;
}

ExchangeResult GradientExchange::exchange(const std::vector<float*>& data, int64_t step) {
  ExchangeResult r;
  if (options_.compression == Compression::OneBit) {
    if (exchanges_momentum(step)) throw std::logic_error("past 1-bit's warm-up the momentum travels: exchange_momentum()");
    r.bytes = sum_in_buckets(data, buckets_, Compression::None);
  } else if (options_.compression != Compression::PowerSgd) {
    r.bytes = sum_in_buckets(data, buckets_, options_.compression);
    r.compressed = options_.compression != Compression::None;
  } else {
    // A non-finite gradient on any rank (a loss-scale overflow) goes uncompressed, so that every
    // rank sees it and skips the step, and never enters the error feedback.
    float bad = all_finite(data, tensors_) ? 0.0f : 1.0f;
    comm_.sum(&bad, 1, Element::F32);
    r.bytes = 4;
    if (step <= options_.powersgd_warmup_steps || bad > 0) {
      r.bytes += sum_in_buckets(data, buckets_, Compression::None);
    } else {
      r.bytes += sum_in_buckets(data, dense_buckets_, Compression::None);
      std::vector<float*> matrices;
      for (size_t t : compressed_) matrices.push_back(data[t]);
      r.bytes += powersgd_->exchange(comm_, matrices);
      r.compressed = true;
    }
  }
  r.finite = all_finite(data, tensors_);
  return r;
}

bool GradientExchange::exchanges_momentum(int64_t step) const {
  return options_.compression == Compression::OneBit && step > options_.onebit_warmup_steps;
}

ExchangeResult GradientExchange::exchange_momentum(const std::vector<float*>& grads, const std::vector<float*>& momenta,
                                                   const std::vector<const float*>& variances, double grad_scale,
                                                   int64_t step) {
  if (!exchanges_momentum(step)) throw std::logic_error("exchange_momentum() before 1-bit's warm-up ended");
  const double beta1 = options_.beta1;
  // The momentum travels in the update's units, m / (sqrt(v / c2) + eps) with the frozen v and its
  // bias correction c2 (the same on every rank, so that averaging commutes with it): what the
  // compression loses is then bounded in update units everywhere. Compressed as it is, an element
  // whose v is ~0 (a rare token's embedding) gets +-scale / eps: the run diverged so.
  const double c2 = -std::expm1(static_cast<double>(options_.onebit_warmup_steps) * std::log(options_.beta2));
  // Clipping (max_grad_norm) where the optimizer's cannot reach: its clip scales a gradient the
  // frozen update no longer reads. The mean gradient's norm is not known without sending it; the
  // root mean square of the ranks' own norms (one number summed) bounds it, so this clips at
  // least where the optimizer would have.
  double clip = 1;
  if (options_.max_grad_norm > 0) {
    double squares = 0;
    for (size_t t = 0; t < tensors_.size(); ++t)
      for (int64_t i = 0, n = numel(tensors_[t].shape); i < n; ++i) squares += double(grads[t][i]) * grads[t][i];
    squares *= grad_scale * grad_scale;
    comm_.sum(&squares, 1, Element::F64);
    clip = std::min(1.0, options_.max_grad_norm / (std::sqrt(squares / comm_.size()) + 1e-6));
  }
  std::vector<float> flat(elements_), divisor(elements_);
  size_t at = 0;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const int64_t n = numel(tensors_[t].shape);
    for (int64_t i = 0; i < n; ++i, ++at) {
      divisor[at] = static_cast<float>(std::sqrt(variances[t][i] / c2) + options_.epsilon);
      flat[at] = static_cast<float>((beta1 * momenta[t][i] + (1 - beta1) * clip * grad_scale * grads[t][i]) / divisor[at]);
    }
  }
  ExchangeResult r;
  r.bytes = onebit_->average(comm_, flat.data()) + (options_.max_grad_norm > 0 ? 8 : 0);
  r.compressed = true;
  // The gradients' sum over the ranks that the averaged momentum implies (ranks x K x their mean).
  const double to_sum = static_cast<double>(comm_.size()) / grad_scale / (1 - beta1);
  at = 0;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const int64_t n = numel(tensors_[t].shape);
    for (int64_t i = 0; i < n; ++i, ++at) {
      const float m = flat[at] * divisor[at];
      grads[t][i] = static_cast<float>(to_sum * (m - beta1 * momenta[t][i]));
      momenta[t][i] = m;
    }
  }
  r.finite = all_finite(momenta, tensors_);
  return r;
}

}  // namespace bertc::distributed

namespace bertc::distributed {
namespace {

ir::HostTensor<float> floats(std::vector<float> values, ir::Shape shape) {
  return {ir::TensorType{ir::DType::F32, std::move(shape)}, std::move(values), {}};
}

}  // namespace

ir::Environment<float> GradientExchange::saved_state() {
  if (onebit_) return onebit_state();
  ir::Environment<float> state;
  if (!powersgd_) return state;
  for (size_t i = 0; i < compressed_.size(); ++i) {
    const std::string name = kStatePrefix + tensors_[compressed_[i]].name;
    const Matrix m = as_matrix(tensors_[compressed_[i]].shape);
    const std::vector<float>& q = powersgd_->q(i);
    std::vector<float> error = powersgd_->error(i);
    error.resize(static_cast<size_t>(m.rows * m.cols), 0.0f);  // (none yet before the first exchange)
    comm_.sum(error.data(), error.size(), Element::F32);
    state[name + ".q"] = floats(q, {m.cols, static_cast<int64_t>(q.size()) / m.cols});
    state[name + ".error"] = floats(std::move(error), {m.rows, m.cols});
  }
  const std::vector<uint64_t> words = powersgd_->random_state();
  ir::HostTensor<float> random{ir::TensorType{ir::DType::I64, {static_cast<int64_t>(words.size())}}, {}, {}};
  for (uint64_t w : words) random.integer.push_back(static_cast<int64_t>(w));
  state[std::string(kStatePrefix) + "random"] = std::move(random);
  return state;
}

std::string GradientExchange::restore_state(const ir::Environment<float>& state) {
  if (onebit_) return restore_onebit(state);
  if (!powersgd_) return "";
  // Rank 0 judges its checkpoint's state: 0 none, 1 usable, 2 of another shape.
  int64_t verdict = 0;
  const std::string random_name = std::string(kStatePrefix) + "random";
  if (comm_.rank() == 0 && state.count(random_name)) {
    verdict = 1;
    for (size_t i = 0; i < compressed_.size() && verdict == 1; ++i) {
      const std::string name = kStatePrefix + tensors_[compressed_[i]].name;
      const Matrix m = as_matrix(tensors_[compressed_[i]].shape);
      const auto q = state.find(name + ".q"), e = state.find(name + ".error");
      if (q == state.end() || e == state.end() || q->second.real.size() != powersgd_->q(i).size() ||
          e->second.real.size() != static_cast<size_t>(m.rows * m.cols))
        verdict = 2;
    }
    // Tensors this run does not compress were compressed then: another model or powersgd_max_share.
    const auto saved = std::count_if(state.begin(), state.end(),
                                     [](const auto& entry) { return entry.first.starts_with(kStatePrefix); });
    if (verdict == 1 && static_cast<size_t>(saved) != 2 * compressed_.size() + 1) verdict = 2;
    if (verdict == 1 && state.at(random_name).integer.size() != powersgd_->random_state().size()) verdict = 2;
  }
  comm_.broadcast(&verdict, sizeof verdict, 0);
  if (verdict == 0)
    return "PowerSGD: the checkpoint holds no PowerSGD state (saved without it): error feedback and Q start anew";
  if (verdict == 2)
    return "PowerSGD: the checkpoint's PowerSGD state is for another powersgd_rank, model or powersgd_max_share "
           "(other tensors compressed): error feedback and Q start anew";
  for (size_t i = 0; i < compressed_.size(); ++i) {
    const std::string name = kStatePrefix + tensors_[compressed_[i]].name;
    const Matrix m = as_matrix(tensors_[compressed_[i]].shape);
    std::vector<float> q(powersgd_->q(i).size()), error(static_cast<size_t>(m.rows * m.cols), 0.0f);
    if (comm_.rank() == 0) {
      q = state.at(name + ".q").real;
      error = state.at(name + ".error").real;
    }
    comm_.broadcast(q.data(), q.size() * sizeof(float), 0);
    powersgd_->restore(i, std::move(q), std::move(error));
  }
  std::vector<uint64_t> words = powersgd_->random_state();  // (its size: the same engine everywhere)
  if (comm_.rank() == 0) {
    const std::vector<int64_t>& saved = state.at(random_name).integer;
    for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint64_t>(saved[i]);
  }
  comm_.broadcast(words.data(), words.size() * sizeof(uint64_t), 0);
  powersgd_->set_random_state(words);
  return fmt::format("PowerSGD: error feedback and Q of {} tensors from the checkpoint (the error summed over the "
                     "ranks that saved it, taken up by rank 0)",
                     compressed_.size());
}

}  // namespace bertc::distributed

namespace bertc::distributed {
namespace {

std::string onebit_name(const std::string& what) { return GradientExchange::kOneBitPrefix + what; }

}  // namespace

ir::Environment<float> GradientExchange::onebit_state() {
  ir::Environment<float> state;
  const size_t part = onebit_->part(), all = part * static_cast<size_t>(comm_.size());
  // Each rank's worker error in turn, to every rank (rank 0 keeps them): one vector's memory at a time.
  for (int q = 0; q < comm_.size(); ++q) {
    std::vector<float> error = comm_.rank() == q ? onebit_->worker_error() : std::vector<float>(all);
    comm_.broadcast(error.data(), error.size() * sizeof(float), q);
    if (comm_.rank() == 0)
      state[onebit_name(fmt::format("worker_error.{}", q))] = floats(std::move(error), {static_cast<int64_t>(all)});
  }
  std::vector<float> server(all);
  comm_.all_gather_bytes(onebit_->server_error().data(), server.data(), part * sizeof(float),
                         "the gathering of 1-bit's error feedback for a checkpoint");
  state[onebit_name("server_error")] = floats(std::move(server), {static_cast<int64_t>(all)});
  ir::HostTensor<float> elements{ir::TensorType{ir::DType::I64, {1}}, {}, {static_cast<int64_t>(elements_)}};
  state[onebit_name("elements")] = std::move(elements);
  return state;
}

std::string GradientExchange::restore_onebit(const ir::Environment<float>& state) {
  const int ranks = comm_.size();
  const size_t part = onebit_->part(), all = part * static_cast<size_t>(ranks);
  // Rank 0 judges its checkpoint's state: 0 none, 1 saved by as many ranks, 2 by another number, 3 unusable.
  int64_t verdict = 0, saved_ranks = 0, saved_elements = 0;
  if (comm_.rank() == 0 && state.count(onebit_name("server_error"))) {
    while (state.count(onebit_name(fmt::format("worker_error.{}", saved_ranks)))) ++saved_ranks;
    const auto elements = state.find(onebit_name("elements"));
    saved_elements = elements == state.end() || elements->second.integer.size() != 1 ? -1 : elements->second.integer[0];
    const size_t size = state.at(onebit_name("server_error")).real.size();
    bool sizes_agree = saved_ranks > 0 && size >= elements_;
    for (int64_t q = 0; q < saved_ranks && sizes_agree; ++q)
      sizes_agree = state.at(onebit_name(fmt::format("worker_error.{}", q))).real.size() == size;
    verdict = saved_elements != static_cast<int64_t>(elements_) || !sizes_agree ? 3 : saved_ranks == ranks && size == all ? 1 : 2;
  }
  int64_t said[] = {verdict, saved_ranks, saved_elements};
  comm_.broadcast(said, sizeof said, 0);
  verdict = said[0], saved_ranks = said[1], saved_elements = said[2];
  if (verdict == 0) return "1-bit: the checkpoint holds no 1-bit error feedback (saved without it): it starts at zero";
  if (verdict == 3)
    return saved_elements == static_cast<int64_t>(elements_)
               ? "1-bit: the checkpoint's error feedback is malformed (its vectors' sizes disagree): it starts at zero"
               : fmt::format("1-bit: the checkpoint's error feedback is of another model ({} elements, this one {}): it "
                             "starts at zero",
                             saved_elements, elements_);
  // Saved by as many ranks: the vectors as they were. Else in element order (element i at i in
  // both layouts), the padding's errors dropped, each rank's worker error the saved ones' mean.
  auto padded = [&](const std::vector<float>& saved) {
    std::vector<float> out(all, 0.0f);
    std::copy_n(saved.begin(), elements_, out.begin());
    return out;
  };
  std::vector<float> server(all), worker(all);
  if (comm_.rank() == 0) {
    const std::vector<float>& saved = state.at(onebit_name("server_error")).real;
    server = verdict == 1 ? saved : padded(saved);
  }
  comm_.broadcast(server.data(), all * sizeof(float), 0);
  if (verdict == 1) {
    for (int q = 0; q < ranks; ++q) {
      std::vector<float> error(all);
      if (comm_.rank() == 0) error = state.at(onebit_name(fmt::format("worker_error.{}", q))).real;
      comm_.broadcast(error.data(), all * sizeof(float), 0);
      if (comm_.rank() == q) worker = std::move(error);
    }
  } else {
    if (comm_.rank() == 0) {
      for (int64_t q = 0; q < saved_ranks; ++q) {
        const std::vector<float>& e = state.at(onebit_name(fmt::format("worker_error.{}", q))).real;
        for (size_t i = 0; i < elements_; ++i) worker[i] += e[i] / static_cast<float>(saved_ranks);
      }
    }
    comm_.broadcast(worker.data(), all * sizeof(float), 0);
  }
  const auto mine = server.begin() + static_cast<std::ptrdiff_t>(part * static_cast<size_t>(comm_.rank()));
  onebit_->restore(std::move(worker), std::vector<float>(mine, mine + static_cast<std::ptrdiff_t>(part)));
  if (verdict == 1) return fmt::format("1-bit: error feedback of {} rank(s) from the checkpoint", ranks);
  return fmt::format("1-bit: the checkpoint's error feedback was saved by {} rank(s): each of these {} takes their mean "
                     "worker error, and the server error is cut into {} parts",
                     saved_ranks, ranks, ranks);
}

}  // namespace bertc::distributed
