// Batch plumbing between the data pipeline, the executor and files.
#include "train/batches.h"

#include <algorithm>
#include <cmath>

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/prepare_shards.h"
#include "data/row_batch.h"
#include "data/shard_examples.h"
#include "data/shard_files.h"
#include "data/task_data.h"
#include "data/text_shards.h"
#include "ir/index_reads.h"
#include "ir/value_names.h"
#include "run_folder/initialize.h"
#include "run_folder/stop_request.h"
#include "run_folder/train_error.h"

namespace bertc::train {
namespace {

struct NamedInts {
  const char* name;
  const std::vector<int64_t>* values;
  ir::Shape shape;
};

std::vector<NamedInts> integer_inputs(const data::Batch& b) {
  const int64_t B = b.batch_size, S = b.seq_len, P = b.predictions, K = b.examples_per_row;
  std::vector<NamedInts> out{{"input_ids", &b.input_ids, {B, S}},
                             {"token_type_ids", &b.token_type_ids, {B, S}},
                             {"attention_mask", &b.attention_mask, {B, S}},
                             {"masked_lm_positions", &b.masked_lm_positions, {B, P}},
                             {"masked_lm_ids", &b.masked_lm_ids, {B, P}},
                             {"next_sentence_labels", &b.next_sentence_labels, K > 0 ? ir::Shape{B, K} : ir::Shape{B}}};
  if (K > 0) {  // (rows of several examples: frontend::RowInputs)
    out.push_back({"position_ids", &b.position_ids, {B, S}});
    out.push_back({"example_ids", &b.example_ids, {B, S}});
    out.push_back({"cls_positions", &b.cls_positions, {B, K}});
  }
  return out;
}

struct NamedReals {
  const char* name;
  support::HostTensor values;
};

std::vector<NamedReals> real_inputs(const data::Batch& b) {
  auto tensor = [](ir::Shape shape, const std::vector<float>& values) {
    support::HostTensor t = support::HostTensor::zeros({ir::DType::F32, std::move(shape)});
    t.real = values;
    return t;
  };
  std::vector<NamedReals> out{{"masked_lm_weights", tensor({b.batch_size, b.predictions}, b.masked_lm_weights)}};
  if (b.examples_per_row > 0)
    out.push_back({"next_sentence_weights", tensor({b.batch_size, b.examples_per_row}, b.next_sentence_weights)});
  return out;
}

}  // namespace

data::Vocab load_run_vocab(const run_config::Config& c, const std::filesystem::path& path, std::ostream& log,
                           bool vocab_flag) {
  data::Vocab vocab = data::Vocab::load(path);
  if (vocab.size() > c.model.vocab_size)
    throw data::DataError(fmt::format("{} has {} tokens but [model] vocab_size = {}: give the vocabulary the model was "
                                      "made for ({}[train] vocab); for a new model, set [model] vocab_size to {} or more",
                                      path.string(), vocab.size(), c.model.vocab_size,
                                      vocab_flag ? "--vocab FILE or " : "", vocab.size()));
  // (batches pad with the vocabulary's [PAD], the model keeps pad_token_id's row as padding: two
  // ids for one token trained the padding as a word and left a word's row at zero, silently)
  // (where the model came from a folder or a checkpoint, their own pad_token_id: the config's, when
  // it sets one, says the same, and setting another was refused as contradicting them)
  if (vocab.pad() != c.model.pad_token_id && !c.model_from.empty())
    throw data::DataError(fmt::format(
        "{}: its [PAD] is id {}, and {} says pad_token_id = {}: give the vocabulary the model was made with{}",
        path.string(), vocab.pad(), c.model_from, c.model.pad_token_id,
        c.model_from.ends_with(".json")
            ? fmt::format(", or, if this is it and the folder's record is wrong, set \"pad_token_id\": {} in {}",
                          vocab.pad(), c.model_from)
            : ""));
  if (vocab.pad() != c.model.pad_token_id)
    throw data::DataError(fmt::format("{}: its [PAD] is id {}, and [model] pad_token_id = {}: set pad_token_id = {}, or "
                                      "give a vocabulary whose [PAD] is line {}",
                                      path.string(), vocab.pad(), c.model.pad_token_id, vocab.pad(),
                                      c.model.pad_token_id + 1));
  log << "vocab: " << vocab.describe() << "\n";
  return vocab;
}

OpenedShards open_shard_set(const run_config::Config& c, const std::filesystem::path& data_path, const data::Vocab& vocab,
                            std::ostream& log) {
  const run_config::TrainConfig& t = c.train;
  // Shards (a folder of them, or one): read a shard at a time.
  std::vector<std::string> left_out;
  data::refuse_folder_being_prepared(data_path);  // (its shards are not all there yet)
  std::vector<std::filesystem::path> files = data::shard_files(data_path, &left_out);
  if (!files.empty() && !left_out.empty())  // (a shard of another name is not read: said, never silently)
    log << fmt::format("data: {} entr{} of {} left out ({}{}): a shard is read when its "
                       "name ends in .hdf5 or .h5 and does not start with '.': rename one to train on it\n",
                       left_out.size(), left_out.size() == 1 ? "y" : "ies", data_path.string(),
                       fmt::join(left_out.begin(), left_out.begin() + std::min<ptrdiff_t>(5, std::ssize(left_out)), ", "),
                       left_out.size() > 5 ? ", ..." : "");
  const std::string ext = data_path.extension().string();
  if (files.empty() && (ext == ".hdf5" || ext == ".h5")) files = {data_path};
  std::shared_ptr<const data::ShardSet> shards;
  std::string what;
  if (!files.empty()) {
    if (t.text_shards > 0)
      log << fmt::format("data: [train] text_shards = {} is for text, and {} holds shards: it is not used\n",
                         t.text_shards, data_path.string());
    data::VocabRecord run_vocab = data::record_of(vocab);
    std::error_code ec;
    run_vocab.path = std::filesystem::absolute(run_vocab.path, ec).string();
    const auto set = std::make_shared<data::ShardFiles>(
        files, t.seq_len, t.max_predictions_per_seq, c.model.vocab_size, c.model.type_vocab_size,
        data::ShardExpectation{run_vocab, t.masked_lm_prob, t.do_lower_case},
        [&](const std::string& m) { log << "data: " << m << "\n"; }, run_folder::stop_requested);
    for (const std::string& note : set->notes()) log << "data: " << note << "\n";
    shards = set;
    what = fmt::format("{} shard(s) in {}", files.size(), data_path.string());
  } else {
    // Text: its examples made a shard at a time, in memory.
    const data::Tokenizer tokenizer(vocab, t.do_lower_case);
    // (a signal is honoured while the text is read and its examples counted: minutes on a large corpus)
    auto docs = data::load_documents(
        data_path, tokenizer, [&](const std::string& m) { log << "data: " << m << "\n"; }, run_folder::stop_requested);
    const size_t documents = docs.size();
    const int64_t count = t.text_shards > 0 ? t.text_shards : data::TextShards::automatic_shards(docs);
    const data::ExampleOptions options{t.seq_len,        t.max_predictions_per_seq, t.masked_lm_prob,
                                       t.short_seq_prob, t.dupe_factor,             static_cast<uint64_t>(t.seed)};
    if (documents > 100000) log << fmt::format("data: counting the examples of {} documents\n", documents);
    const auto text = std::make_shared<data::TextShards>(std::move(docs), vocab, options, count, data_path.string(),
                                                         "[train] text_shards", 0, run_folder::stop_requested);
    if (const auto cut = data::cut_note(text->figures(), t.seq_len, c.model.max_position_embeddings)) log << "data: " << *cut << "\n";
    shards = text;
    what = fmt::format("{} documents from {} in {} text shard(s){} (dupe_factor {})", documents, data_path.string(),
                       count, t.text_shards > 0 ? "" : ", chosen by size", t.dupe_factor);
  }
  return {shards, what};
}

std::optional<data::RowCapacity> row_capacity(const run_config::Config& c) {
  const run_config::TrainConfig& t = c.train;
  if (t.examples_per_row() == 0) return std::nullopt;
  return data::RowCapacity{t.seq_len, t.row_predictions(), t.examples_per_row()};
}

std::shared_ptr<const data::ExampleSource> open_example_source(const run_config::Config& c,
                                                               const std::filesystem::path& data_path,
                                                               const data::Vocab& vocab, std::ostream& log) {
  const run_config::TrainConfig& t = c.train;
  const auto [shards, what] = open_shard_set(c, data_path, vocab, log);
  const std::optional<data::RowCapacity> rows = row_capacity(c);
  auto source = std::make_shared<data::ShardedExamples>(
      shards, static_cast<uint64_t>(t.seed), rows, [&](const std::string& m) { log << "data: " << m << "\n"; },
      run_folder::stop_requested);
  int64_t examples = 0;
  for (size_t s = 0; s < shards->shards(); ++s) examples += shards->examples(s);
  if (rows)
    log << fmt::format("data: {}, {} examples in {} rows of up to {} ({:.2f} a row; {} masked positions a row), a "
                       "shard at a time\n",
                       what, examples, source->size(), rows->examples,
                       static_cast<double>(examples) / static_cast<double>(source->size()), rows->predictions);
  else
    log << fmt::format("data: {}, {} examples, a shard at a time\n", what, source->size());
  // (a step larger than the data sees examples twice in one gradient: said, not refused)
  if (const int64_t per_step = t.batch_size * t.gradient_accumulation_steps;
      per_step > static_cast<int64_t>(source->size()))
    log << fmt::format("data: warning: a step takes {} sequences ({} x {} accumulation steps, on each rank), more than "
                       "the {} {} of the data: every step repeats examples ({:.1f} epochs a step); give more "
                       "text, or a smaller [train] batch_size\n",
                       per_step, t.batch_size, t.gradient_accumulation_steps, source->size(), rows ? "rows" : "examples",
                       static_cast<double>(per_step) / static_cast<double>(std::max<size_t>(source->size(), 1)));
  return source;
}

data::BatchStream open_batch_stream(const run_config::Config& c, const std::filesystem::path& data_path,
                                    const data::Vocab& vocab, std::ostream& log) {
  const run_config::TrainConfig& t = c.train;
  return data::BatchStream(open_example_source(c, data_path, vocab, log), t.batch_size, t.seq_len, t.row_predictions(),
                           vocab.pad());
}

namespace {

// Rows of K synthetic examples, seq_len / K tokens and row_predictions / K masked positions each.
data::Batch synthetic_rows(const run_config::Config& c, uint64_t seed) {
  const run_config::TrainConfig& t = c.train;
  const int64_t K = t.examples_per_row(), tokens = t.seq_len / K, masked = std::min(t.row_predictions() / K, tokens - 1);
  data::Rng rng(seed);
  std::vector<data::Example> examples;
  std::vector<std::vector<size_t>> rows(static_cast<size_t>(t.batch_size));
  for (auto& row : rows)
    for (int64_t k = 0; k < K; ++k) {
      data::Example e;
      for (int64_t i = 0; i < tokens; ++i) {
        e.tokens.push_back(rng.randint(1, c.model.vocab_size - 1));
        e.segment_ids.push_back(i >= tokens / 2);
      }
      for (int64_t i = 0; i < masked; ++i) {
        e.masked_positions.push_back(1 + i);
        e.masked_labels.push_back(rng.randint(1, c.model.vocab_size - 1));
      }
      e.is_random_next = rng.randint(0, 1) == 1;
      row.push_back(examples.size());
      examples.push_back(std::move(e));
    }
  return data::row_batch(examples, rows, t.seq_len, t.row_predictions(), K, c.model.pad_token_id);
}

}  // namespace

data::Batch synthetic_batch(const run_config::Config& c, uint64_t seed) {
  const run_config::TrainConfig& t = c.train;
  if (t.examples_per_row() > 0 && !c.finetune_section) return synthetic_rows(c, seed);
  data::Rng rng(seed);
  data::Batch b;
  b.batch_size = t.batch_size, b.seq_len = t.seq_len, b.predictions = t.max_predictions_per_seq;
  for (int64_t i = 0; i < t.batch_size * t.seq_len; ++i) {
    b.input_ids.push_back(rng.randint(1, c.model.vocab_size - 1));
    b.token_type_ids.push_back(i % t.seq_len >= t.seq_len / 2);
    b.attention_mask.push_back(1);
  }
  for (int64_t i = 0; i < t.batch_size * t.max_predictions_per_seq; ++i) {
    b.masked_lm_positions.push_back(rng.randint(0, t.seq_len - 1));
    b.masked_lm_ids.push_back(rng.randint(1, c.model.vocab_size - 1));
    b.masked_lm_weights.push_back(1.0f);
  }
  for (int64_t i = 0; i < t.batch_size; ++i) b.next_sentence_labels.push_back(rng.randint(0, 1));
  return b;
}

support::Environment synthetic_environment(const run_config::Config& c, const passes::TrainingProgram& program, uint64_t seed) {
  support::Environment env;
  run_folder::initialize_parameters(program.step, c.model.initializer_range, c.model.pad_token_id, seed, env);
  run_folder::initialize_states(program.step, env);
  run_folder::initialize_states(program.optimizer, env);
  bind_batch(synthetic_batch(c, seed), env);
  // A fine-tuning graph's task inputs: labels spread over the classes (or real targets), all
  // counted. (The pretraining inputs bound above it does not read.)
  for (std::string_view name : {ir::names::kLabels, ir::names::kLabelWeights}) {
    const auto v = program.step.find(name);
    if (!v) continue;
    support::HostTensor t = support::HostTensor::zeros(program.step.value(*v).type);
    for (size_t i = 0; i < t.integer.size(); ++i) t.integer[i] = static_cast<int64_t>((i * 7 + seed) % c.finetune.num_labels);
    for (size_t i = 0; i < t.real.size(); ++i)
      t.real[i] = name == ir::names::kLabelWeights ? 1.0f : static_cast<float>(std::sin(0.7 * double(i + seed)));
    env[std::string(name)] = std::move(t);
  }
  check_batch_ranges(env, c, "the synthetic batch");
  env[std::string(ir::names::kDropoutSeed)] = support::HostTensor::scalar(ir::DType::I64, static_cast<double>(seed % (uint64_t{1} << 40)));
  env[std::string(ir::names::kLearningRate)] = support::HostTensor::scalar(ir::DType::F32, c.train.learning_rate);
  return env;
}

void bind_batch(const data::Batch& b, support::Environment& env) {
  for (const NamedInts& in : integer_inputs(b)) {
    support::HostTensor t = support::HostTensor::zeros({ir::DType::I32, in.shape});
    t.integer = *in.values;
    env[in.name] = std::move(t);
  }
  for (NamedReals& in : real_inputs(b)) env[in.name] = std::move(in.values);
}

namespace {

struct Range {
  const char* input;
  int64_t end;  // values in [0, end)
  std::string key;
};

// What check_batch_ranges checks: one list, which check_indices_are_checked proves enough.
std::vector<Range> batch_ranges(const run_config::Config& c) {
  return {
      {"input_ids", c.model.vocab_size, fmt::format("[model] vocab_size = {}", c.model.vocab_size)},
      {"token_type_ids", c.model.type_vocab_size,
       fmt::format("[model] type_vocab_size = {} (BERT's sentence pairs need 2)", c.model.type_vocab_size)},
      {"masked_lm_positions", c.train.seq_len, fmt::format("[train] seq_len = {}", c.train.seq_len)},
      {"masked_lm_ids", c.model.vocab_size, fmt::format("[model] vocab_size = {}", c.model.vocab_size)},
      {"next_sentence_labels", 2, "2 (a next-sentence label is 0 or 1)"},
      // (rows of several examples: positions within an example, and where each example's [CLS] is)
      {"position_ids", c.train.seq_len, fmt::format("[train] seq_len = {}", c.train.seq_len)},
      {"cls_positions", c.train.seq_len, fmt::format("[train] seq_len = {}", c.train.seq_len)},
      {"example_ids", c.train.examples_per_row() + 1,
       fmt::format("[train] packing_max_examples = {} (examples 0..{}, padding {})", c.train.examples_per_row(),
                   c.train.examples_per_row() - 1, c.train.examples_per_row())},
      // (a regression's labels are numbers; class and tag labels are checked)
      {c.finetune.task == frontend::FinetuneTask::Regression ? "" : "labels", c.finetune.num_labels,
       fmt::format("[finetune] num_labels = {}", c.finetune.num_labels)},
  };
}

// Where an index value comes from: the batch input it is (through ops that keep values), the
// argsort that made it (a permutation), or what else, in words, for the refusal.
struct IndexSource {
  std::string input;         // a batch input's name, or empty
  bool permutation = false;  // an argsort's result
  std::string otherwise;     // what it is when neither
};

IndexSource source_of(const ir::Graph& g, ir::ValueId v, const std::vector<IndexSource>* region_inputs) {
  for (;;) {
    const ir::Op& p = g.producer(v);
    if (ir::keeps_values(p.kind)) {
      v = p.operands.at(0);
      continue;
    }
    if (p.kind == ir::OpKind::ArgSort) return {{}, true, "an argsort's result"};
    if (p.kind != ir::OpKind::Input) return {{}, false, fmt::format("the result of a {}", p.info().name)};
    if (!region_inputs) return {g.value(v).name, false, {}};
    size_t k = 0;  // a fused region's k-th input: its op's k-th operand
    for (const ir::Op& op : g.ops()) {
      if (&op == &p) break;
      if (op.kind == ir::OpKind::Input) ++k;
    }
    return region_inputs->at(k);
  }
}

std::string said(const IndexSource& s) { return s.input.empty() ? s.otherwise : "the input " + s.input; }

void check_region(const ir::Graph& g, const std::vector<IndexSource>* region_inputs, const std::vector<Range>& ranges) {
  for (const ir::Op& op : g.ops()) {
    if (op.region) {
      std::vector<IndexSource> inner;
      for (ir::ValueId operand : op.operands) inner.push_back(source_of(g, operand, region_inputs));
      check_region(op.region.graph(), &inner, ranges);
      continue;
    }
    const std::string where = fmt::format("{}{}", op.info().name, op.scope.empty() ? "" : " at " + op.scope);
    for (const ir::IndexRead& read : ir::index_reads(g, op)) {
      const IndexSource s = source_of(g, op.operands.at(read.operand), region_inputs);
      const auto range = std::find_if(ranges.begin(), ranges.end(),
                                      [&](const Range& r) { return !s.input.empty() && s.input == r.input; });
      if (range == ranges.end())
        throw std::invalid_argument(fmt::format(
            "{} reads {} by indices that are {}, which no check on the host bounds: its kernel does not check them, "
            "and one out of range would read out of bounds on a device; index by a batch input the trainer checks "
            "(input_ids, token_type_ids, masked_lm_positions, masked_lm_ids, next_sentence_labels, labels)",
            where, read.what, said(s)));
      if (range->end > read.size)
        throw std::invalid_argument(fmt::format("{} reads {} ({}) by {}, which the host checks only below {}: an id "
                                                "from {} up would read out of bounds on a device",
                                                where, read.what, read.size, s.input, range->key, read.size));
    }
    if (op.kind == ir::OpKind::ScatterAdd)
      if (const IndexSource order = source_of(g, op.operands.at(ir::kScatterAddOrder), region_inputs); !order.permutation)
        throw std::invalid_argument(fmt::format("{}: its order is {}, not an argsort's permutation of its indices: its "
                                                "kernel would read updates out of bounds",
                                                where, said(order)));
  }
}

}  // namespace

void check_batch_ranges(const support::Environment& inputs, const run_config::Config& c, const std::string& what) {
  // (a batch of rows of several examples is said by its rows)
  const char* unit = inputs.count("example_ids") ? "row" : "example";
  for (const Range& r : batch_ranges(c)) {
    const auto it = inputs.find(r.input);
    if (it == inputs.end()) continue;
    const std::vector<int64_t>& v = it->second.integer;
    const int64_t row = it->second.type.shape.size() < 2 ? 1 : it->second.type.shape[1];  // (one value a row: [B])
    for (size_t i = 0; i < v.size(); ++i) {
      // (a negative id no setting fits: Hugging Face's -100 "ignore" label is no id of bertc's
      // batches, whose unmasked predictions are weighted 0)
      if (v[i] < 0)
        throw data::DataError(fmt::format("{}: {} of {} {} holds {}, which is negative, and ids, positions and "
                                          "labels are 0 or more: fix the data{}",
                                          what, r.input, unit, static_cast<int64_t>(i) / row, v[i],
                                          r.input == ir::names::kLabels
                                              ? " (an example or token left out has label 0 and label_weights 0, not -100)"
                                          : std::string_view(r.input).starts_with("masked_lm")
                                              ? " (a masked prediction left out has position 0 and weight 0, not -100)"
                                              : ""));
      if (v[i] >= r.end)
        // (raising the setting was advised, which the weights' shapes then refused)
        throw data::DataError(fmt::format("{}: {} of {} {} holds {}, which is not below {}: the batch is not of "
                                          "this config's data; make it with bertc batch and the config of the weights, "
                                          "or fix the data",
                                          what, r.input, unit, static_cast<int64_t>(i) / row, v[i], r.key));
    }
  }
  // The mask and the prediction weights are no indices, but their values have meanings too: a mask
  // is 1 or 0 (any other value read as padding, silently), a weight 0 or more and finite (NaN made
  // the loss NaN). A hand-made eval batch may hold anything.
  auto example_of = [](const support::HostTensor& t, size_t i) {
    return static_cast<int64_t>(i) / (t.type.shape.size() < 2 ? 1 : t.type.shape[1]);
  };
  if (const auto mask = inputs.find("attention_mask"); mask != inputs.end())
    for (size_t i = 0; i < mask->second.integer.size(); ++i)
      if (const int64_t m = mask->second.integer[i]; m != 0 && m != 1)
        throw data::DataError(fmt::format("{}: attention_mask of example {} holds {}, and a mask is 1 (a token) or 0 "
                                          "(padding): fix the data",
                                          what, example_of(mask->second, i), m));
  // (fine-tuning's label_weights mean the same: 1 a real example or token, 0 padding)
  for (const std::string_view name :
       {std::string_view("masked_lm_weights"), std::string_view("next_sentence_weights"), ir::names::kLabelWeights})
    if (const auto weights = inputs.find(std::string(name)); weights != inputs.end())
      for (size_t i = 0; i < weights->second.real.size(); ++i)
        if (const double w = weights->second.real[i]; !std::isfinite(w) || w < 0)
          throw data::DataError(fmt::format("{}: {} of {} {} holds {}, and a weight is 0 ({}) or more, and finite "
                                            "(1 for {}): fix the data",
                                            what, name, name == "next_sentence_weights" ? "row" : "example",
                                            example_of(weights->second, i), w,
                                            name == ir::names::kLabelWeights ? "padding"
                                            : name == "next_sentence_weights" ? "an empty slot"
                                                                              : "a prediction left out",
                                            name == ir::names::kLabelWeights ? "a real example or token"
                                            : name == "next_sentence_weights" ? "an example"
                                                                              : "a masked token"));
  // A row's examples lie one after the other, padding last: its ids rise along the row (the
  // attention kernels may skip the tiles between two examples by that order).
  if (const auto ids = inputs.find("example_ids"); ids != inputs.end() && ids->second.type.shape.size() == 2) {
    const int64_t S = ids->second.type.shape[1];
    const std::vector<int64_t>& v = ids->second.integer;
    for (size_t i = 1; i < v.size(); ++i)
      if (static_cast<int64_t>(i) % S != 0 && v[i] < v[i - 1])
        throw data::DataError(fmt::format("{}: example_ids of row {} fall from {} to {} at position {}, and a row's "
                                          "examples lie one after the other, padding last (ids rise along the row): "
                                          "fix the data",
                                          what, static_cast<int64_t>(i) / S, v[i - 1], v[i], static_cast<int64_t>(i) % S));
  }
  // A regression's targets are reals the loss can take, as its data reader requires (a NaN target
  // made the loss nan, 1e20 inf, exit 0).
  if (const auto labels = inputs.find(std::string(ir::names::kLabels)); labels != inputs.end())
    for (size_t i = 0; i < labels->second.real.size(); ++i)
      if (const double y = labels->second.real[i]; !(std::abs(y) <= data::kLargestRegressionTarget))
        throw data::DataError(fmt::format("{}: labels of example {} holds {:g}, and a regression target is a finite "
                                          "number within +-{:g} (its squared error must fit the float32 loss): fix "
                                          "the data, or scale the targets",
                                          what, example_of(labels->second, i), y, data::kLargestRegressionTarget));
}

void check_indices_are_checked(const ir::Graph& program, const run_config::Config& config) {
  check_region(program, nullptr, batch_ranges(config));
}

void require_checked_indices(const ir::Graph& program, const run_config::Config& config) {
  try {
    check_indices_are_checked(program, config);
  } catch (const std::invalid_argument& e) {
    throw run_folder::TrainError(fmt::format("{}: the program {} is not run", e.what(), program.name()));
  }
}

support::Safetensors batch_to_safetensors(const data::Batch& b) {
  support::Safetensors file;
  for (const NamedInts& in : integer_inputs(b)) {
    support::StoredTensor s{ir::DType::I64, in.shape, std::vector<uint8_t>(in.values->size() * 8)};
    std::memcpy(s.bytes.data(), in.values->data(), s.bytes.size());
    file.tensors[in.name] = std::move(s);
  }
  for (const NamedReals& in : real_inputs(b)) file.tensors[in.name] = support::to_stored(in.values);
  file.metadata["format"] = "bertc-batch";
  return file;
}

}  // namespace bertc::train
