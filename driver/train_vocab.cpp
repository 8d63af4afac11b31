// bertc vocab (see vocab_command.h).
#include "driver/train_vocab.h"

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include <unistd.h>

#include <fmt/format.h>

#include "data/tokenizer.h"
#include "data/vocab.h"
#include "data/vocab_trainer.h"
#include "run_config/config.h"
#include "support/atomic_file.h"
#include "support/file_errors.h"
#include "driver/output_file.h"
#include "run_folder/stop_request.h"
#include "support/resolved_path.h"

namespace bertc::driver {

namespace {

// Writes the vocabulary to `output`, a new file; when something made a file of that name while
// the words were counted and merged (checked at the start, hours ago on a large corpus), the
// vocabulary goes to the first free STEM.new-N.EXT beside it instead, said on `log`: neither the
// file there nor the hours of work are lost. Returns where it went.
std::filesystem::path place_vocabulary(const std::filesystem::path& output, const std::string& text, std::ostream& log) {
  if (output == "-") {
    write_output("-", text);
    return output;
  }
  const std::string stem = output.stem().string(), ext = output.extension().string();
  for (int n = 0; n < 1000; ++n) {
    const std::filesystem::path path =
        n == 0 ? output : output.parent_path() / fmt::format("{}.new-{}{}", stem, n, ext);
    try {
      support::write_new_file_atomically(path, text);
      if (n > 0)
        log << fmt::format("vocab: {} was made by something else while the vocabulary was computed, and is left as "
                           "it is: the new vocabulary is {}\n",
                           output.string(), path.string());
      return path;
    } catch (const support::FileError& e) {
      if (e.code().value() != EEXIST) throw;
    }
  }
  throw data::DataError(fmt::format("{} and 999 files {}.new-N{} beside it exist: the vocabulary is not written; move "
                                    "them away and run the same command again",
                                    output.string(), stem, ext));
}

// Why a vocabulary fell short when the alphabet limit did it: the words with a character outside
// the alphabet kept are never merged ("" when none were left out).
std::string left_out_by_alphabet(const data::VocabTrainResult& r, int64_t limit) {
  if (r.words_left_out == 0) return "";
  return fmt::format("; {} of the {} words ({:.0f}%) hold a character outside the alphabet kept (--limit-alphabet {} "
                     "of the text's {} characters) and were left out of the merges: raise --limit-alphabet",
                     r.words_left_out, r.words, 100.0 * static_cast<double>(r.words_left_out) / static_cast<double>(r.words),
                     limit, r.characters_seen);
}

}  // namespace

int train_vocab(const VocabArgs& given, const frontend::ModelDefinition& model, std::ostream& log) {
  VocabArgs a = given;
  a.output = through_output_link(a.output);  // (a link given to -o: the new file goes where it leads)
  const run_config::Config config = run_config::load_data_config(a.config, model.extra_keys);
  refuse_console(a.output, "-o", "a vocabulary (a new file)");
  refuse_dangling_link(a.output, "-o");
  refuse_checkpoint_name(a.output, "-o", "a vocabulary");
  if (std::filesystem::exists(a.output))
    throw data::DataError(fmt::format("{} exists: write the vocabulary to a new file (a run's vocabulary must not "
                                      "change under its checkpoints)",
                                      a.output));
  // The folder it goes into, checked before the counting and merging (hours on a large corpus).
  const std::filesystem::path folder = std::filesystem::path(a.output).has_parent_path()
                                           ? std::filesystem::path(a.output).parent_path()
                                           : std::filesystem::path(".");
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    const int why = errno;
    const std::string fix = support::file_error_fix(why, a.output);
    throw data::DataError(fmt::format("cannot write {}: {}{}", a.output, std::strerror(why),
                                      fix.empty() ? ": give -o a file in a writable folder" : ": " + fix));
  }
  const std::filesystem::path input = a.input.empty() ? config.resolve(config.train.data) : std::filesystem::path(a.input);
  // (A vocabulary larger than [model] vocab_size is refused by every run of the config: by
  // default the size is the config's, and a size past it is said with the vocabulary written.)
  const bool size_of_config = a.size == 0;
  if (size_of_config) a.size = config.model.vocab_size;
  // (A vocabulary written among the text it was made from would be read as text by the next run.)
  if (std::error_code ec; std::filesystem::is_directory(input, ec) &&
                          support::resolved_path(input) ==
                              support::resolved_path(std::filesystem::path(a.output)).parent_path())
    throw data::DataError(fmt::format("-o {}: in the folder of text it is made from ({}), where a run on the folder "
                                      "would read the vocabulary as a document: write it outside the folder",
                                      a.output, input.string()));
  // Basic tokenization needs no vocabulary: any will do for it.
  const data::Vocab specials = data::Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}, "specials");
  const data::Tokenizer tokenizer(specials, config.train.do_lower_case);
  const auto began = std::chrono::steady_clock::now();
  // A signal stops the counting between lines and the merging between merges: nothing is written.
  std::optional<run_folder::StopOnSignal> stop_on_signal;
  stop_on_signal.emplace("stopping bertc vocab: nothing will be written; signal again to end at once",
                         "ended at once by a second signal: nothing written; run the same command again");
  std::map<std::string, int64_t> counts;
  data::VocabTrainResult r;
  try {
    counts = data::count_words(input, tokenizer, a.threads, [&](uint64_t read, uint64_t total) {
      log << fmt::format("vocab: counting words {:5.1f}%\n", total ? 100.0 * double(read) / double(total) : 100.0);
    }, [&](const std::string& m) { log << "vocab: " << m << "\n"; }, run_folder::stop_requested);
    const std::string raise_size =
        size_of_config ? fmt::format("set [model] vocab_size in {} (the size --size takes by default; a model of "
                                     "more rows) to",
                                     a.config)
                       : "give --size";
    r = data::train_wordpiece(counts, {a.size, a.min_frequency, a.limit_alphabet, raise_size}, run_folder::stop_requested);
  } catch (const data::Stopped& stopped) {
    log << fmt::format("vocab: stopped by {} {}: {} not written; run the same command again\n",
                       run_folder::signal_name(stopped.signal()), stopped.what(), a.output);
    return 128 + stopped.signal();
  }
  // A stop asked as the merging ended: nothing written, as the first signal's words promised.
  // (Asked after the stop is given up: the request stays until the next StopOnSignal is made.)
  stop_on_signal.reset();
  if (const int stop = run_folder::stop_requested()) {
    log << fmt::format("vocab: stopped by {} as the merging ended: {} not written; {}run the same command again\n",
                       run_folder::signal_name(stop), a.output,
                       stop == SIGXCPU ? "raise the CPU-time limit (ulimit -t, or the batch system's time limit) and "
                                       : "");
    return 128 + stop;
  }
  // The write is whole or nothing: a signal during it ends the command at once, the file being
  // written removed.
  const run_folder::StopOnSignal ends_at_once(nullptr, "vocab ended by a signal while writing: nothing written (the file "
                                                  "being written is removed); run the same command again");
  std::string text;
  for (const std::string& t : r.tokens) text += t + "\n";
  const std::filesystem::path written = place_vocabulary(a.output, text, log);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  log << fmt::format("vocab: {} tokens ({} special, {} alphabet of {} characters, {} merges) from {} words ({} distinct) of {} in "
                     "{:.1f} s -> {}{}\n",
                     r.tokens.size(), 5, r.alphabet, r.characters, r.merges, r.words, r.distinct_words, input.string(), seconds,
                     written.string(),
                     r.size_reached ? ""
                                    : fmt::format(" (fewer than the {} asked: no pair left seen {} times or more{})",
                                                  a.size, a.min_frequency, left_out_by_alphabet(r, a.limit_alphabet)));
  if (static_cast<int64_t>(r.tokens.size()) > config.model.vocab_size)
    log << fmt::format("vocab: note: its {} tokens are more than {}'s [model] vocab_size ({}), which a run of that "
                       "config refuses: to train with it, set vocab_size to {} or more\n",
                       r.tokens.size(), a.config, config.model.vocab_size, r.tokens.size());
  return 0;
}

}  // namespace bertc::driver
