// bertc prepare-data (see prepare_data.h).
#include "driver/prepare_data.h"

#include <unistd.h>

#include <csignal>

#include <fmt/format.h>

#include "train/batches.h"
#include "data/prepare_shards.h"
#include "data/vocab.h"
#include "run_config/config.h"
#include "driver/output_file.h"
#include "run_folder/stop_request.h"

namespace bertc::driver {
namespace {

std::string duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds);
  return s >= 3600 ? fmt::format("{}h{:02d}m", s / 3600, s / 60 % 60) : fmt::format("{}m{:02d}s", s / 60, s % 60);
}

std::string progress_line(const data::PrepareProgress& p) {
  if (p.pass == 1) {
    const double share = p.bytes_total ? static_cast<double>(p.bytes_read) / static_cast<double>(p.bytes_total) : 1;
    const double eta = share > 0 ? p.seconds * (1 - share) / share : 0;
    return fmt::format("prepare-data: tokenizing {:5.1f}%  {} documents ({:.0f}/s)  {} tokens ({:.0f}/s)  ETA {}",
                       100 * share, p.documents, p.documents / std::max(p.seconds, 1e-9), p.tokens,
                       p.tokens / std::max(p.seconds, 1e-9), duration(eta));
  }
  return fmt::format("prepare-data: shards {}/{}  {} examples  {}", p.shards_done, p.shards, p.examples,
                     duration(p.seconds));
}

}  // namespace

int prepare_data(const PrepareDataArgs& a, const frontend::ModelDefinition& model, std::ostream& log) {
  const run_config::Config config = run_config::load_data_config(a.config, model.extra_keys);
  const run_config::TrainConfig& t = config.train;
  data::PrepareOptions o;
  std::error_code ec;
  refuse_console(a.output, "-o", "a folder of shards");
  refuse_dangling_link(a.output, "-o");
  const bool made_folder = !std::filesystem::exists(a.output, ec);
  o.input = a.input.empty() ? config.resolve(t.data) : std::filesystem::path(a.input);
  o.output = a.output;
  o.shards = a.shards;
  // (past a petabyte the bound is no machine's, and its bytes wrapped past 64 bits into 0)
  if (constexpr double kMostMib = 1e9; a.memory_mb > kMostMib)
    throw std::invalid_argument(fmt::format("--memory-mb {:g}: give at most {:g} (the memory this machine has, in MiB)",
                                            a.memory_mb, kMostMib));
  o.memory_bytes = static_cast<uint64_t>(a.memory_mb * double(1 << 20));
  o.threads = a.threads;
  o.examples = {t.seq_len, t.max_predictions_per_seq, t.masked_lm_prob, t.short_seq_prob, t.dupe_factor,
                static_cast<uint64_t>(t.seed)};
  o.rows = train::row_capacity(config);
  const std::filesystem::path vocab_path = a.vocab.empty() ? config.resolve(t.vocab) : std::filesystem::path(a.vocab);
  const data::Vocab vocab = data::Vocab::load(vocab_path);
  log << "prepare-data: vocab " << vocab.describe() << " (recorded in every shard)\n";
  const data::Tokenizer tokenizer(vocab, t.do_lower_case);
  const bool live = ::isatty(STDERR_FILENO) != 0;
  int last_pass = 0;
  double last_logged = -1e9;
  data::PrepareCallbacks callbacks;
  // A note takes a line of its own (on a terminal, over the progress line, which comes back).
  callbacks.note = [&](const std::string& m) { log << (live ? "\r\033[K" : "") << "prepare-data: " << m << "\n"; };
  callbacks.progress = [&](const data::PrepareProgress& p) {
    // A terminal sees one line rewritten (every half second); a log a line every 10 s and at each
    // pass's start.
    const bool new_pass = p.pass != last_pass;
    if (live && new_pass && last_pass != 0) log << "\n";  // pass 1's last line stays
    last_pass = p.pass;
    if (live) {
      log << "\r\033[K" << progress_line(p) << std::flush;
    } else if (new_pass || p.seconds - last_logged >= 10) {
      log << progress_line(p) << "\n";
      last_logged = p.seconds;
    }
  };
  // A signal stops the run between lines or shards; what it made goes (the scratch, the lock, a
  // folder it made), and it says so.
  const run_folder::StopOnSignal stop_on_signal(
      "stopping prepare-data: what it made so far goes (unless its last shard is being finished: then all is kept); "
      "signal again to end at once",
      "ended at once by a second signal: this run's scratch and lock are left in the output folder, and the next "
      "prepare-data into it removes them; run the same command again");
  callbacks.stop_requested = run_folder::stop_requested;
  data::PrepareReport r;
  try {
    r = data::prepare_shards(o, tokenizer, vocab, callbacks);
  } catch (const data::Stopped& stopped) {
    log << (live ? "\n" : "")
        << fmt::format("prepare-data: stopped by {} {}: no shard written, and nothing of this run left in {} (its "
                       "scratch, its lock{}); {}run the same command again to prepare the shards\n",
                       run_folder::signal_name(stopped.signal()), stopped.what(), o.output.string(),
                       made_folder ? ", the folder it made unless something else was put there" : "",
                       // (under the same CPU-time limit it would stop at the same place: it keeps nothing)
                       stopped.signal() == SIGXCPU ? "raise the CPU-time limit (ulimit -t, or the batch system's time "
                                                     "limit) and "
                                                   : "");
    return 128 + stopped.signal();
  }
  if (live) log << "\n";
  const int64_t at_once = std::min<int64_t>(r.shards_at_once, o.shards);
  log << fmt::format("prepare-data: {} documents, {} sentences, {} tokens from {} -> {} examples in {} shard{} of {} "
                     "(seq {}, {} predictions; up to {} examples a shard) in {}; {} shard{} made at once, planned "
                     "peak {} MiB of {} MiB\n",
                     r.documents, r.sentences, r.tokens, o.input.string(), r.examples, o.shards,
                     o.shards == 1 ? "" : "s", o.output.string(),
                     t.seq_len, t.max_predictions_per_seq, r.largest_shard_examples, duration(r.seconds),
                     at_once, at_once == 1 ? "" : "s", r.planned_peak_bytes >> 20, o.memory_bytes >> 20);
  if (o.rows)
    log << fmt::format("prepare-data: the examples placed in {} rows of up to {} ({:.2f} a row; [train] packing = "
                       "\"pack\"), recorded in the shards\n",
                       r.rows, o.rows->examples, static_cast<double>(r.examples) / static_cast<double>(std::max<int64_t>(r.rows, 1)));
  if (const auto cut = data::cut_note(r.figures, t.seq_len, config.model.max_position_embeddings)) log << "prepare-data: " << *cut << "\n";
  return 0;
}

}  // namespace bertc::driver
