// Starting a run: a checkpoint, --init weights or fresh ones (see resume.h).
#include "run_folder/resume.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "data/vocab_identity.h"
#include "run_config/hf_config.h"
#include "ir/value_names.h"
#include "run_folder/initialize.h"
#include "run_folder/train_error.h"
#include "support/shell_word.h"

namespace bertc::run_folder {

TensorManifest manifest_of(const passes::TrainingProgram& p) {
  TensorManifest m;
  for (ir::ValueId v : p.step.values_of(ir::OpKind::Param)) m[p.step.value(v).name] = p.step.value(v).type;
  for (ir::ValueId v : p.optimizer.values_of(ir::OpKind::State))
    if (!p.optimizer.value(v).name.ends_with(ir::names::kGradAccumulatorSuffix))
      m[p.optimizer.value(v).name] = p.optimizer.value(v).type;
  return m;
}

namespace {

// Keys that a resumed run may change: how long it runs and how it reports, checkpoints and waits
// (steps, log_every, ...); how the global batch is split (batch_size, gradient_accumulation_steps:
// `global_batch` is checked instead, so that a resume on another number of ranks works); where
// data comes from and how it is sharded (`data_examples` and `data_shards` check the stream, with
// a message naming both streams); zero_stage (a checkpoint holds the whole model's optimizer state
// either way); [compile], which says how a step is computed on a device,
// not what (a run may move to another GPU); and [finetune], which pretraining does not read (and
// fine-tuning does not resume): checkpoints from before it existed resume as they did.
bool may_change_on_resume(std::string_view section, std::string_view key) {
  static const std::set<std::string_view> keys{"steps",      "log_every", "checkpoint_every",
                                               "keep_checkpoints", "rank_timeout", "batch_size",
                                               "gradient_accumulation_steps", "data", "vocab",
                                               "text_shards", "allreduce", "allreduce_bucket_mb", "zero_stage"};
  return section == "compile" || section == "finetune" || keys.count(key);
}

// The settings a resumed run must keep, the model's extra keys included: what `config_hash` is
// the checksum of.
std::string fixed_settings(const run_config::Config& c) {
  return run_config::settings_text(c, [](std::string_view section, std::string_view key) {
    return !may_change_on_resume(section, key);
  });
}

// Whether the setting `key` ("[model] hidden_size") is bertc's default here, the config's text
// not giving it.
bool defaulted(const run_config::Config& config, const std::string& key) {
  const size_t close = key.find("] ");
  if (!key.starts_with("[") || close == std::string::npos) return false;
  return !config.given.count(key.substr(1, close - 1) + "." + key.substr(close + 2));
}

// Refuses a resume whose fixed settings differ from the checkpoint's, naming each that does.
void check_same_settings(const std::map<std::string, std::string>& saved, const run_config::Config& config,
                         const std::filesystem::path& checkpoint, std::ostream& log) {
  const auto hash = saved.find("config_hash");
  const auto text = saved.find("config_settings");
  if (hash == saved.end() || text == saved.end()) {
    log << fmt::format("resume: {} does not record its settings (a bertc from before config hashes): they are not "
                       "compared\n",
                       checkpoint.string());
    return;
  }
  const std::string now = fixed_settings(config);
  if (hash->second == fmt::format("{:016x}", XXH3_64bits(now.data(), now.size()))) return;
  const auto then = run_config::settings_of_text(text->second), here = run_config::settings_of_text(now);
  std::vector<std::string> changed, newer;
  for (const auto& [key, value] : here) {
    const auto it = then.find(key);
    // A setting bertc gained since the checkpoint, left at its default: the run had that behaviour.
    if (it == then.end() && defaulted(config, key)) newer.push_back(key);
    else if (it == then.end()) changed.push_back(fmt::format("{} = {} (not in the checkpoint's settings)", key, value));
    else if (it->second != value)
      changed.push_back(fmt::format("{} = {} then, {} now{}", key, it->second, value,
                                    defaulted(config, key) ? fmt::format(" (bertc's default: the config sets no {}; the "
                                                                         "run had it from --init's model or its config "
                                                                         "then: give the same --init, or set it)",
                                                                         key)
                                                           : ""));
  }
  for (const auto& [key, value] : then)
    if (!here.count(key)) changed.push_back(fmt::format("{} = {} then, not a setting now", key, value));
  if (changed.empty() && !newer.empty()) {
    log << fmt::format("resume: {} was written by a bertc without {}: the default applies, as it did then\n",
                       checkpoint.string(), fmt::join(newer, ", "));
    return;
  }
  if (changed.empty()) changed.push_back("its settings record does not match its hash");
  // (Its weights fit only the [model] they were trained with: --init is no way to another.)
  const bool model_changed =
      std::any_of(changed.begin(), changed.end(), [](const std::string& c) { return c.starts_with("[model]"); });
  throw TrainError(fmt::format("{}: trained with other settings than this run's: {}; resume with the settings it was "
                               "trained with, or start a fresh run in another --checkpoint-dir{}",
                               checkpoint.string(), fmt::join(changed, "; "),
                               model_changed ? "" : fmt::format(" from its weights (--init {})", support::shell_word(checkpoint.string()))));
}

// Where a run folder holds pretraining checkpoints older than its newest, a fine-tuning one: how
// to resume them ("" when it holds none). The newest is what --resume takes, so the fine-tuning
// ones newer than the pretraining one must leave the folder.
std::string pretraining_beside(const std::filesystem::path& dir) {
  const std::vector<CheckpointFile> all = list_checkpoints(dir);
  // Every file after the newest pretraining checkpoint must leave for --resume to take it: the
  // fine-tuning checkpoints, and any file that is no checkpoint under a checkpoint's name.
  std::vector<std::string> newer;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    std::map<std::string, std::string> meta;
    try {
      meta = support::read_safetensors_metadata(it->path);
    } catch (const std::exception&) {
    }
    if (!is_checkpoint_record(meta) || meta.count("finetune_task")) {
      newer.push_back(it->path.filename().string());
      continue;
    }
    std::reverse(newer.begin(), newer.end());
    return fmt::format("; to resume the pretraining checkpoint {} beside it, move {} out of {}", it->path.string(),
                       fmt::join(newer, " "), dir.string());
  }
  return "";
}

// Refuses a resume whose run figures (run_metadata's) differ from the checkpoint's, naming the first.
// `compiled`: the run trains a compiled program (.bertx, a training executable), whose settings
// are its compile's: the fix is to compile it again, not a flag it refuses.
void check_same_run(std::map<std::string, std::string> saved, const std::map<std::string, std::string>& now,
                    const std::filesystem::path& checkpoint, bool compiled) {
  // (a fine-tuning run's folder: said as that, not as the first setting that differs)
  if (const auto task = saved.find("finetune_task"); task != saved.end())
    throw TrainError(fmt::format("{}: a checkpoint of fine-tuning ({}), and pretraining does not go on from a "
                                 "fine-tuned head: pretrain in another --checkpoint-dir, or fine-tune from it (bertc "
                                 "finetune CONFIG --init {}){}",
                                 checkpoint.string(), task->second, support::shell_word(checkpoint.string()),
                                 pretraining_beside(checkpoint.parent_path())));
  check_run_metadata(saved, checkpoint);
  // A checkpoint from before data parallelism: one rank, its global batch from its split.
  if (!saved.count("global_batch") && saved.count("batch_size") && saved.count("gradient_accumulation_steps"))
    saved["global_batch"] =
        std::to_string(std::stoll(saved["batch_size"]) * std::stoll(saved["gradient_accumulation_steps"]));
  for (const auto& [key, value] : now) {
    // The micro-batch may change (on another number of ranks keep_global_batch chooses it; on less
    // memory a user does): the global batch it makes up is compared, and the change said
    // (say_allowed_changes).
    // The config's name only picks the default run folder (a config copied to another file name
    // is named by its stem): said too.
    if (key == "batch_size" || key == "config") continue;
    auto it = saved.find(key);
    if (it == saved.end() || it->second == value) continue;
    const std::string fresh = fmt::format("start a fresh run from its weights in another --checkpoint-dir (--init {})",
                                          support::shell_word(checkpoint.string()));
    if (key == "global_batch") refuse_other_global_batch(saved, value, checkpoint);
    if (key == "precision")
      throw TrainError(fmt::format(
          "{}: trained with precision {}, and this run's is {} (their optimizer states differ): {}, or {}",
          checkpoint.string(), it->second, value,
          compiled ? fmt::format("compile the program again with --precision {} (bertc compile CONFIG --precision {} "
                                 "-o FILE.bertx) and resume with that",
                                 it->second, it->second)
                   : fmt::format("resume with --precision {} (or [compile] precision = \"{}\")", it->second, it->second),
          fresh));
    if (key == "dropout") {
      const std::string flag = it->second == "on" ? "true" : "false";
      throw TrainError(fmt::format(
          "{}: trained with dropout {}, and this run's is {} (--dropout, [compile] dropout): {}, or {}",
          checkpoint.string(), it->second, value,
          compiled ? fmt::format("compile the program again with --dropout {} and resume with that", flag)
                   : fmt::format("resume with --dropout {}", flag),
          fresh));
    }
    throw TrainError(fmt::format("{}: trained with {} = {}, but this run has {}: resume with the same settings, or "
                                 "start a fresh run in another --checkpoint-dir",
                                 checkpoint.string(), key, it->second, value));
  }
}

// What a resume changes that check_same_run lets change, said: another name of the config, and
// another split of the global batch, as the steps after differ from an uninterrupted run's (the
// loss is a mean per micro-batch, of its own masked tokens, and dropout is drawn per micro-batch).
void say_allowed_changes(const std::map<std::string, std::string>& saved, const run_config::Config& c, int ranks,
                         std::ostream& log) {
  if (const auto name = saved.find("config"); name != saved.end() && name->second != c.name)
    log << fmt::format("resume: the run was trained under the name '{}', and its config is named '{}' now: the name "
                       "only picks the default run folder (checkpoints/NAME); checkpoints from here record '{}'\n",
                       name->second, c.name, c.name);
  const run_config::TrainConfig& t = c.train;
  const auto batch = saved.find("batch_size");
  if (batch == saved.end() || batch->second == std::to_string(t.batch_size)) return;
  const auto accumulation = saved.find("gradient_accumulation_steps"), world = saved.find("world_size");
  if (world != saved.end() && world->second != std::to_string(ranks)) return;  // (keep_global_batch said it)
  log << fmt::format("resume: micro-batch {} x {} accumulation steps on {} rank(s), where the checkpoint was trained "
                     "with {} x {} on {}: the same global batch and data; the loss is averaged and dropout drawn per "
                     "micro-batch, so the steps from here differ slightly from an uninterrupted run's\n",
                     t.batch_size, t.gradient_accumulation_steps, ranks, batch->second,
                     accumulation == saved.end() ? "1" : accumulation->second,
                     world == saved.end() ? "1" : world->second);
}

// The folder's checkpoints another run wrote than the one a resume continues (one copied in and
// resumed from): kept, as rotation removes only this run's (save_checkpoint), and said.
void say_other_runs(const std::filesystem::path& dir, const std::vector<CheckpointFile>& existing,
                    const std::map<std::string, std::string>& resumed, std::ostream& log) {
  const std::string mine = resumed_run_id(resumed);
  std::vector<std::string> others;
  for (size_t i = 0; i + 1 < existing.size(); ++i) {
    std::optional<std::string> theirs;
    try {
      theirs = recorded_run_id(support::read_safetensors_metadata(existing[i].path));
    } catch (const support::SafetensorsError&) {  // (its header does not read: no run of its own shown)
    }
    if (theirs != mine)
      others.push_back(fmt::format("step {} ({})", existing[i].step, theirs ? "run " + *theirs : "no run recorded"));
  }
  if (others.empty()) return;
  log << fmt::format("resume: {} also holds checkpoints of other runs than run {}, which this resume continues: {}; "
                     "they are kept (rotation removes only this run's checkpoints): move them to a folder of their "
                     "own to keep the runs apart\n",
                     dir.string(), mine, fmt::join(others, ", "));
}

}  // namespace

std::map<std::string, std::string> run_metadata(const frontend::ModelDefinition& model, const run_config::Config& c,
                                                int ranks) {
  const run_config::TrainConfig& t = c.train;
  return {{"model", model.name},
          {"config", c.name},
          {"optimizer", std::string(passes::optimizer_name(t.optimizer))},
          {"seed", std::to_string(t.seed)},
          {"batch_size", std::to_string(t.batch_size)},
          {"seq_len", std::to_string(t.seq_len)},
          {"max_predictions_per_seq", std::to_string(t.max_predictions_per_seq)},
          {"global_batch", std::to_string(ranks * t.batch_size * t.gradient_accumulation_steps)},
          // (its optimizer state differs: fp16 keeps a loss scale, the others none)
          {"precision", std::string(ir::enum_name(c.compile.precision))},
          // (a [compile] switch, unlike the rest of [compile], that changes what a step computes)
          {"dropout", c.compile.dropout ? "on" : "off"}};
}

std::map<std::string, std::string> export_metadata(const run_config::Config& config, const data::Vocab& vocab) {
  std::map<std::string, std::string> m = {{"model_config", run_config::model_json(config.model).dump()},
                                          {"do_lower_case", config.train.do_lower_case ? "true" : "false"}};
  data::VocabRecord record = data::record_of(vocab);
  std::error_code ec;
  if (const std::filesystem::path absolute = std::filesystem::absolute(record.path, ec); !ec) record.path = absolute.string();
  m.merge(data::vocab_metadata(record));
  return m;
}

std::optional<bool> weights_lower_case(const std::filesystem::path& init, const std::map<std::string, std::string>& m) {
  if (const std::optional<bool> lower = support::metadata_flag(m, "do_lower_case", init.string())) return lower;
  if (!run_config::is_hf_folder(init)) return std::nullopt;
  return run_config::hf_tokenizer_settings(init).do_lower_case;
}

void say_init_lower_case(const run_config::Config& c, const std::optional<std::filesystem::path>& init,
                         std::ostream& log) {
  if (!init) return;
  std::error_code ec;
  std::string why;
  if (run_config::is_hf_folder(*init)) {
    const run_config::HfTokenizerSettings s = run_config::hf_tokenizer_settings(*init);
    why = !s.file           ? fmt::format("BERT's default: {} has no tokenizer_config.json to say", init->string())
          : s.do_lower_case ? fmt::format("as {}'s tokenizer_config.json says", init->string())
                            : fmt::format("BERT's default: {}'s tokenizer_config.json does not set it", init->string());
    // bertc's tokenizer strips accents where it lower-cases (BERT's uncased), as BertTokenizer does
    // unless strip_accents says otherwise: a folder that keeps them is read otherwise, said.
    if (s.strip_accents && *s.strip_accents != c.train.do_lower_case)
      log << fmt::format("init: warning: {}'s tokenizer_config.json says strip_accents = {}, and bertc's tokenizer "
                         "{} accents (it strips them exactly where it lower-cases): words with accents are tokenized "
                         "otherwise than by the folder's own tokenizer\n",
                         init->string(), *s.strip_accents, c.train.do_lower_case ? "strips" : "keeps");
  } else if (std::filesystem::is_regular_file(*init, ec)) {
    std::map<std::string, std::string> metadata;
    try {
      metadata = support::read_safetensors_metadata(*init);
    } catch (const std::exception&) {  // (a damaged file: its loading says what is wrong)
    }
    if (metadata.count("do_lower_case")) why = fmt::format("as {} was trained", init->string());
  }
  if (!why.empty() && !c.given.count("train.do_lower_case"))
    log << fmt::format("init: do_lower_case = {}, {} (set [train] do_lower_case to choose otherwise)\n",
                       c.train.do_lower_case, why);
}

data::Vocab hf_folder_vocab(const std::filesystem::path& folder, const std::map<std::string, std::string>& metadata) {
  const data::Vocab vocab = data::Vocab::load(folder / "vocab.txt");
  if (const auto exported = data::vocab_from_metadata(metadata))  // (bertc export records it)
    data::require_same_vocab(vocab, *exported, fmt::format("--init {} (its weights, as bertc export wrote them)",
                                                           folder.string()),
                             "the folder's vocab.txt changed since: put back the exported one, or export the "
                             "checkpoint again");
  return vocab;
}

void check_init_vocab(const std::filesystem::path& init, const std::map<std::string, std::string>& metadata,
                      const data::Vocab& vocab, bool lower_case, std::ostream& log, const std::string& choose) {
  if (const std::optional<bool> then = weights_lower_case(init, metadata); then && *then != lower_case)
    log << fmt::format("init: {} was trained with do_lower_case = {}, and this run's is {}: the same text makes other "
                       "tokens (set [train] do_lower_case = {} unless that is meant)\n",
                       init.string(), *then, lower_case, *then);
  if (run_config::is_hf_folder(init)) {
    const data::Vocab folder = hf_folder_vocab(init, metadata);
    if (!data::vocab_from_metadata(metadata))
      log << fmt::format("init: {} records no vocabulary in its weights (a folder bertc export did not write): its "
                         "vocab.txt is taken as the one its embeddings are of\n",
                         init.string());
    data::require_same_vocab(vocab, data::record_of(folder), fmt::format("--init {}", init.string()),
                             fmt::format("use the folder's vocabulary (drop another from {}: the folder's is used)",
                                         choose));
    return;
  }
  if (const auto recorded = data::vocab_from_metadata(metadata)) {
    data::require_same_vocab(vocab, *recorded, fmt::format("--init {}", init.string()),
                             fmt::format("use the vocabulary it was trained with ({})", choose));
    return;
  }
  log << fmt::format("init: {} records no vocabulary (a weights file alone): nothing shows that {} is the one its "
                     "embeddings were trained with; make sure it is\n",
                     init.string(), vocab.source());
}

std::map<std::string, std::string> settings_metadata(const run_config::Config& config) {
  const std::string text = fixed_settings(config);
  return {{"config_settings", text}, {"config_hash", fmt::format("{:016x}", XXH3_64bits(text.data(), text.size()))}};
}

void refuse_other_global_batch(const std::map<std::string, std::string>& saved, const std::string& now,
                               const std::filesystem::path& checkpoint) {
  auto of = [&](const char* key, const char* otherwise) {
    const auto it = saved.find(key);
    return it == saved.end() ? std::string(otherwise) : it->second;
  };
  const std::string then = saved.count("global_batch")
                               ? saved.at("global_batch")
                               : std::to_string(std::atoll(of("batch_size", "0").c_str()) *
                                                std::atoll(of("gradient_accumulation_steps", "1").c_str()));
  if (then == now) return;
  throw TrainError(fmt::format("{}: trained with a global batch of {} sequences a step, and this run's is {} "
                               "(batch_size x gradient_accumulation_steps x ranks): keep {} (its split may change: "
                               "batch_size {} x gradient_accumulation_steps {} on {} rank(s) was trained), or start a "
                               "fresh run from its weights in another --checkpoint-dir (--init {})",
                               checkpoint.string(), then, now, then, of("batch_size", "-"),
                               of("gradient_accumulation_steps", "1"), of("world_size", "1"),
                               support::shell_word(checkpoint.string())));
}

std::vector<CheckpointFile> resumable_checkpoints(const std::filesystem::path& dir) {
  std::vector<CheckpointFile> existing = list_checkpoints(dir);
  if (existing.empty())
    throw TrainError(fmt::format("--resume: no checkpoint in {} (run without --resume to start fresh)", dir.string()));
  return existing;
}

int64_t prepare_state(const frontend::ModelDefinition& model, const RunStart& o,
                      const passes::TrainingProgram& program, const data::Vocab& vocab, support::Environment& env,
                      std::ostream& log, std::optional<ResumedFrom>& resumed) {
  const auto existing = o.resume ? resumable_checkpoints(o.checkpoint_dir) : list_checkpoints(o.checkpoint_dir);
  int64_t start = 0;
  if (o.resume) {
    const int ranks = o.ranks;
    const CheckpointContents c = [&] {
      try {
        return load_checkpoint(existing.back().path, manifest_of(program), env);
      } catch (const support::SafetensorsError& e) {
        // Tensors of other shapes, or other tensors: most often another [model] or precision, which
        // its recorded settings name (key, then and now), where a tensor's name would not say what
        // to change.
        std::map<std::string, std::string> saved;
        try {
          saved = support::read_safetensors_metadata(existing.back().path);
        } catch (const support::SafetensorsError&) {  // (not even its header reads: said below)
        }
        const auto format = saved.find("format");
        const bool checkpoint = is_checkpoint_record(saved);
        if (checkpoint) {
          check_same_run(saved, run_metadata(model, o.config, ranks), existing.back().path,
                         o.compiled);
          check_same_settings(saved, o.config, existing.back().path, log);
        }
        // A file that is no checkpoint of this run's (damaged, cut short, or another output written
        // under a checkpoint's name): the one before it is where the run goes on, once it is aside.
        if (checkpoint && format->second != "bertc-checkpoint-1" && format->second != "bertc-checkpoint-2") throw;
        const std::string before =
            existing.size() > 1 ? fmt::format(", and --resume goes on from the one before it (step {})",
                                              existing[existing.size() - 2].step)
                                : ": it is the folder's only checkpoint, so the run starts afresh (without --resume)";
        throw support::SafetensorsError(fmt::format(
            "{} ({} is the newest file named as a checkpoint in {}{}: if it is damaged or not a checkpoint, move it "
            "out of the folder{})",
            e.what(), existing.back().path.filename().string(), o.checkpoint_dir.string(),
            checkpoint ? "" : fmt::format(", and {}", format == saved.end() ? "its header does not read"
                                                                           : "a '" + format->second + "' file"),
            before));
      }
    }();
    check_same_run(c.metadata, run_metadata(model, o.config, ranks), existing.back().path,
                   o.compiled);
    check_same_settings(c.metadata, o.config, existing.back().path, log);
    say_allowed_changes(c.metadata, o.config, ranks, log);
    // The learning-rate schedule is planned over the run's total steps: another total (--steps, or
    // an --until run resumed without its --steps) changes every later rate, which is said.
    if (const auto planned = c.metadata.find("schedule_steps");
        planned != c.metadata.end() && planned->second != std::to_string(o.config.train.steps))
      log << fmt::format("resume: {} was trained on a schedule of {} steps, and this run has {}: the learning rate "
                         "from here on follows {} steps (warmup and decay are planned over the total), so the run "
                         "differs from the first plan; give --steps {} to keep it\n",
                         existing.back().path.string(), planned->second, o.config.train.steps,
                         o.config.train.steps, planned->second);
    if (const auto recorded = data::vocab_from_metadata(c.metadata))
      data::require_same_vocab(vocab, *recorded, fmt::format("checkpoint {}", existing.back().path.string()),
                               "resume with the vocabulary it was trained with (--vocab FILE, or [train] vocab)");
    if (c.step != existing.back().step)
      throw TrainError(fmt::format("{}: its metadata says step {}, its name step {}: the file is damaged or renamed "
                                   "(move it aside to resume from the one before)",
                                   existing.back().path.string(), c.step, existing.back().step));
    start = c.step;
    resumed = ResumedFrom{existing.back().path, c.metadata};
    say_other_runs(o.checkpoint_dir, existing, c.metadata, log);
    log << fmt::format("resuming from {} (step {})\n", existing.back().path.string(), start);
  } else {
    if (!existing.empty())
      throw TrainError(fmt::format("{} already holds checkpoints (newest: step {}): pass --resume to continue that run, "
                                   "or choose another --checkpoint-dir",
                                   o.checkpoint_dir.string(), existing.back().step));
    if (o.init) {
      const PretrainedReport r = load_pretrained(*o.init, program.step, env);
      // (no param of the model in it: another architecture's weights, trained from scratch, exit 0)
      if (r.loaded.empty())
        throw TrainError(fmt::format("--init {}: none of its {} tensors is a param of this model (it holds {}; the "
                                     "model's are named like '{}'): is it a checkpoint of this model? Give one (a bertc "
                                     "checkpoint, or Hugging Face BertForPreTraining or BertModel weights), or train "
                                     "without --init for fresh weights",
                                     o.init->string(), r.unexpected.size(),
                                     r.unexpected.empty() ? std::string("none") : "'" + r.unexpected.front() + "', ...",
                                     r.missing.empty() ? std::string("-") : r.missing.front()));
      check_init_vocab(*o.init, r.metadata, vocab, o.config.train.do_lower_case, log, "--vocab FILE, or [train] vocab");
      log << fmt::format("init: {} params from {}\n", r.loaded.size(), o.init->string());
      for (const std::string& note : init_notes(r)) log << note << "\n";
    }
  }
  fresh_state(o.config, program, env);
  return start;
}

std::string resumed_run_id(const std::map<std::string, std::string>& metadata) {
  if (const std::optional<std::string> named = recorded_run_id(metadata)) return *named;
  std::string record;
  for (const auto& [key, value] : metadata) record += key + "=" + value + "\n";
  return fmt::format("{:016x}", XXH3_64bits(record.data(), record.size()));
}

std::optional<std::string> recorded_run_id(const std::map<std::string, std::string>& metadata) {
  const auto it = metadata.find(kRunIdKey);
  if (it == metadata.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::map<std::string, std::string> data_metadata(const data::BatchStream& stream) {
  return {{"data_examples", std::to_string(stream.examples())},
          {"data_shards", std::to_string(stream.shards())},
          {"data_content", stream.content()}};
}

void check_same_data(const ResumedFrom& resumed, const data::BatchStream& stream, std::ostream& log) {
  const auto& saved = resumed.metadata;
  if (!saved.count("data_examples") || !saved.count("data_shards")) {
    log << fmt::format("resume: {} does not record its data stream (a bertc from before text shards, whose examples "
                       "were ordered otherwise): training continues on this bertc's order of the data\n",
                       resumed.path.string());
    return;
  }
  const std::map<std::string, std::string> now = data_metadata(stream);
  if (saved.at("data_examples") != now.at("data_examples") || saved.at("data_shards") != now.at("data_shards"))
    throw TrainError(fmt::format("{}: trained on {} {} in {} shard(s), and this run's data is {} {} in {}: "
                                 "the data (or [train] text_shards) changed, so the run cannot continue its stream; "
                                 "resume with the same data and settings, or start a fresh run in another "
                                 "--checkpoint-dir",
                                 resumed.path.string(), saved.at("data_examples"), stream.units(), saved.at("data_shards"),
                                 now.at("data_examples"), stream.units(), now.at("data_shards")));
  // The same counts of other examples (other text of as many documents, shards remade): the
  // stream continued would be another run's. (Absent in checkpoints of an older bertc.)
  if (const auto content = saved.find("data_content"); content != saved.end() && content->second != now.at("data_content"))
    throw TrainError(fmt::format("{}: trained on other data than this run's: the same {} {} in {} shard(s), but "
                                 "their content differs (xxh3 {} then, {} now: another text, or shards made again); "
                                 "resume with the data it was trained on (its place may change, not its content), or "
                                 "start a fresh run in another --checkpoint-dir (--init CHECKPOINT keeps its weights)",
                                 resumed.path.string(), now.at("data_examples"), stream.units(), now.at("data_shards"),
                                 content->second, now.at("data_content")));
}

void fresh_state(const run_config::Config& config, const passes::TrainingProgram& program, support::Environment& env) {
  const frontend::ModelConfig& m = config.model;
  initialize_parameters(program.step, m.initializer_range, m.pad_token_id, static_cast<uint64_t>(config.train.seed), env);
  initialize_states(program.step, env);
  initialize_states(program.optimizer, env);
}

}  // namespace bertc::run_folder
