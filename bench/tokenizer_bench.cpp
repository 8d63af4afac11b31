// Benchmark: bertc's WordPiece tokenizer over a text file, one thread and then every core, in one
// run (tokens/s; bench/tokenizer_compare.py sets it beside Hugging Face tokenizers'). With --ids,
// every line's ids are written one line each (the comparison's input). No pass/fail.
//
//   bertc-bench-tokenizer TEXT VOCAB [--cased] [--threads N] [--ids FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/tokenizer.h"
#include "data/vocab.h"
#include "tools/cli_bounds.h"

using namespace bertc;

namespace {

// Tokens of lines [begin, end), ids kept in `ids` when it is given.
int64_t encode(const data::Tokenizer& t, const std::vector<std::string>& lines, size_t begin, size_t end,
               std::vector<std::vector<int64_t>>* ids) {
  int64_t n = 0;
  for (size_t i = begin; i < end; ++i) {
    std::vector<int64_t> line = t.encode(lines[i]);
    n += static_cast<int64_t>(line.size());
    if (ids) (*ids)[i] = std::move(line);
  }
  return n;
}

double run(const data::Tokenizer& t, const std::vector<std::string>& lines, int threads, int64_t& tokens) {
  const auto began = std::chrono::steady_clock::now();
  std::vector<int64_t> counts(static_cast<size_t>(threads), 0);
  std::vector<std::thread> pool;
  const size_t per = (lines.size() + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
  for (int k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      const size_t b = std::min(lines.size(), per * static_cast<size_t>(k));
      counts[static_cast<size_t>(k)] = encode(t, lines, b, std::min(lines.size(), b + per), nullptr);
    });
  for (auto& th : pool) th.join();
  tokens = 0;
  for (int64_t c : counts) tokens += c;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("bertc's WordPiece tokenizer: tokens/s on one thread and on every core");
  std::string text, vocab_path, ids_path;
  bool cased = false;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  app.add_option("text", text, "Text file, one line a unit")->required()->check(CLI::ExistingFile);
  app.add_option("vocab", vocab_path, "vocab.txt")->required()->check(CLI::ExistingFile);
  app.add_flag("--cased", cased, "Keep case and accents (default: lower-case, strip accents)");
  app.add_option("--threads", threads, "Threads of the second run")->check(bertc::tools::kCount);
  app.add_option("--ids", ids_path, "Write each line's ids here, space-separated, a line each");
  CLI11_PARSE(app, argc, argv);
  const data::Vocab vocab = data::Vocab::load(vocab_path);
  const data::Tokenizer tokenizer(vocab, !cased);
  std::vector<std::string> lines;
  uint64_t bytes = 0;
  {
    std::ifstream in(text);
    for (std::string line; std::getline(in, line);) {
      bytes += line.size() + 1;
      lines.push_back(std::move(line));
    }
  }
  int64_t tokens = 0;
  const double one = run(tokenizer, lines, 1, tokens);
  int64_t tokens_all = 0;
  const double all = run(tokenizer, lines, threads, tokens_all);
  std::printf("{\"lines\": %zu, \"bytes\": %llu, \"tokens\": %lld, \"seconds_1\": %.4f, \"seconds_n\": %.4f, "
              "\"threads\": %d}\n",
              lines.size(), static_cast<unsigned long long>(bytes), static_cast<long long>(tokens), one, all, threads);
  std::fprintf(stderr, "bertc tokenizer: %zu lines, %lld tokens: 1 thread %.0f tokens/s, %d threads %.0f tokens/s\n",
               lines.size(), static_cast<long long>(tokens), double(tokens) / one, threads, double(tokens_all) / all);
  if (!ids_path.empty()) {
    std::vector<std::vector<int64_t>> ids(lines.size());
    encode(tokenizer, lines, 0, lines.size(), &ids);
    std::ofstream out(ids_path);
    for (const auto& line : ids) out << fmt::format("{}\n", fmt::join(line, " "));
  }
  return 0;
}
