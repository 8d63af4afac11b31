// The fuzz driver where clang's libFuzzer is not used: mutates seed files (a corpus) at random,
// deterministically from --seed, and runs each mutant through the harness's
// LLVMFuzzerTestOneInput; mutants the reader accepted join the pool, to be mutated deeper.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tests/fuzz/harness.h"

namespace {

using Bytes = std::string;

std::vector<Bytes> read_corpus(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> files;
  for (const std::string& p : paths) {
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (std::filesystem::is_regular_file(p)) {
      files.push_back(p);
    } else {
      throw std::runtime_error(p + ": no such seed file or folder");
    }
  }
  std::sort(files.begin(), files.end());  // the same order, so the same mutants, on every machine
  std::vector<Bytes> out;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (out.empty()) throw std::runtime_error("the corpus has no seed files");
  return out;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  // One to four random edits of `b`; `other` is another input, for splices.
  Bytes mutate(Bytes b, const Bytes& other) {
    const size_t edits = 1 + below(4);
    for (size_t e = 0; e < edits; ++e) edit(b, other);
    return b;
  }

 private:
  size_t below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  // Edits at random, weighted to what readers trip on: sizes and offsets (8-byte words), numbers in
  // text, structure characters, truncation, and pieces of the input moved around.
  void edit(Bytes& b, const Bytes& other) {
    static const std::string structure = "{}[]\",:=-.0123456789e\n \x00\xff\x7f\x80#'";
    static const uint64_t words[] = {0, 1, 7, 8, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000, 0x7fffffffffffffff,
                                     0x8000000000000000, ~0ull, ~0ull - 7};
    static const char* numbers[] = {"-5", "0", "-1", "1e309", "99999999999999999999", "4294967296", "nan", "inf",
                                    "2147483648", "-0", "1.5", "-9223372036854775808", "18446744073709551615"};
    const size_t at = below(b.size() + 1);
    switch (below(10)) {
      case 0: if (!b.empty()) b[below(b.size())] ^= static_cast<char>(1u << below(8)); break;
      case 1: if (!b.empty()) b[below(b.size())] = structure[below(structure.size())]; break;
      case 2: b.erase(std::min(at, b.size()), 1 + below(16)); break;
      case 3: for (size_t i = 1 + below(8); i > 0; --i) b.insert(b.begin() + static_cast<long>(std::min(at, b.size())), static_cast<char>(below(256))); break;
      case 4: {  // a piece copied elsewhere
        if (b.empty()) break;
        const size_t from = below(b.size()), n = 1 + below(std::min<size_t>(64, b.size() - from));
        b.insert(below(b.size() + 1), b.substr(from, n));
        break;
      }
      case 5: b.resize(below(b.size() + 1)); break;
      case 6: if (b.size() >= 8) bertc::fuzz::put_u64(b, below(b.size() - 7), words[below(std::size(words))]); break;
      case 7: {  // a run of digits replaced by a number readers must bound
        const size_t d = b.find_first_of("0123456789", at);
        if (d == Bytes::npos) break;
        const size_t end = b.find_first_not_of("0123456789.", d);
        b.replace(d, (end == Bytes::npos ? b.size() : end) - d, numbers[below(std::size(numbers))]);
        break;
      }
      case 8: if (!other.empty()) b = b.substr(0, at) + other.substr(below(other.size())); break;
      default: {  // a text line (or 64 bytes) dropped or doubled
        const size_t start = b.rfind('\n', at) == Bytes::npos ? 0 : b.rfind('\n', at) + 1;
        size_t end = b.find('\n', std::min(at, b.size()));
        end = end == Bytes::npos ? b.size() : std::min(end + 1, start + 64);
        if (below(2)) b.erase(start, end - start);
        else b.insert(start, b.substr(start, end - start));
      }
    }
  }

  std::mt19937_64 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs a bertc reader's fuzz harness on random mutants of seed files; a crash or sanitizer report "
               "fails (exit non-zero)"};
  uint64_t runs = 10000, seed = 1;
  double seconds = 0;
  std::vector<std::string> corpus;
  app.add_option("--runs", runs, "Mutants to run (after the seeds themselves)");
  app.add_option("--seconds", seconds, "Stop after this long even if fewer mutants ran (0: no limit)")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "Seed of the mutations (the same seed, the same mutants)");
  size_t max_len = 0;
  app.add_option("--max-len", max_len,
                 "Longest mutant; longer ones are cut (default: twice the longest seed, so that inputs a reader "
                 "accepts with bytes added cannot grow from generation to generation)");
  app.add_option("corpus", corpus, "Seed files, or folders of them")->required();
  CLI11_PARSE(app, argc, argv);

  std::vector<Bytes> pool;
  try {
    pool = read_corpus(corpus);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  const size_t seeds = pool.size();
  if (max_len == 0)
    for (const Bytes& b : pool) max_len = std::max(max_len, 2 * b.size());
  for (const Bytes& b : pool) LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  const size_t seeds_accepted = bertc::fuzz::accepted_inputs;
  if (seeds_accepted == 0) {  // mutants of files the reader refuses outright test little beyond its first check
    fmt::print(stderr, "error: the reader accepted none of the {} seeds: they are not files of its format\n", seeds);
    return 3;
  }

  Mutator mutator(seed);
  std::mt19937_64 pick(seed ^ 0x9e3779b97f4a7c15ull);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  uint64_t ran = 0;
  double next_report = 60;
  constexpr size_t kPoolLimit = 512;  // accepted mutants kept (then each replaces a random one)
  for (; ran < runs && (seconds <= 0 || elapsed() < seconds); ++ran) {
    const Bytes& parent = pool[pick() % pool.size()];
    Bytes mutant = mutator.mutate(parent, pool[pick() % pool.size()]);
    if (mutant.size() > max_len) mutant.resize(max_len);
    const size_t before = bertc::fuzz::accepted_inputs;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(mutant.data()), mutant.size());
    if (bertc::fuzz::accepted_inputs != before) {
      if (pool.size() < seeds + kPoolLimit) pool.push_back(mutant);
      else pool[seeds + pick() % kPoolLimit] = mutant;
    }
    // Progress on long runs: a line every 100,000 mutants or every minute, whichever comes first.
    if ((ran + 1) % 100000 == 0 || elapsed() >= next_report) {
      fmt::print("#{} mutants, {:.0f} s, {} accepted\n", ran + 1, elapsed(), bertc::fuzz::accepted_inputs - seeds_accepted);
      std::fflush(stdout);
      next_report = elapsed() + 60;
    }
  }
  fmt::print("{} seeds ({} accepted), {} mutants in {:.1f} s ({:.0f}/s), {} accepted, 0 crashes\n", seeds, seeds_accepted, ran,
             elapsed(), ran / std::max(elapsed(), 1e-9), bertc::fuzz::accepted_inputs - seeds_accepted);
  return 0;
}
