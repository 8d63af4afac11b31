// Loading and checking vocab.txt.
#include "data/vocab.h"

#include "data/text_check.h"

#include <cerrno>
#include <memory>

#include <xxhash.h>

#include "data/text_input.h"

#include <fmt/format.h>

namespace bertc::data {

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::string& source) {
  Vocab v;
  v.tokens_ = std::move(tokens);
  v.source_ = source;
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), XXH3_freeState);
  XXH3_64bits_reset(state.get());
  for (const std::string& t : v.tokens_) {
    XXH3_64bits_update(state.get(), t.data(), t.size());
    XXH3_64bits_update(state.get(), "\n", 1);
  }
  v.xxh3_ = fmt::format("{:016x}", XXH3_64bits_digest(state.get()));
  // (A token holds no space: a line with one between its characters is text, and the file no
  // vocabulary; said as such, before a blank line's "token '' appears twice".)
  for (size_t i = 0; i < v.tokens_.size(); ++i)
    if (const std::string& t = v.tokens_[i]; t.find_first_of(" \t", t.find_first_not_of(" \t")) <
                                             t.find_last_not_of(" \t"))  // (inside it: spaces around are said below)
      throw DataError(fmt::format("{}:{}: '{}' holds a space, and a WordPiece vocabulary is one token a line: this "
                                  "is not a vocabulary (training text?); give the vocab.txt ([train] vocab or --vocab), "
                                  "or make one (bertc vocab CONFIG -o vocab.txt)",
                                  source, i + 1, v.tokens_[i].substr(0, 60)));
  for (size_t i = 0; i < v.tokens_.size(); ++i)
    if (!v.ids_.emplace(v.tokens_[i], static_cast<int64_t>(i)).second)
      throw DataError(fmt::format("{}:{}: token '{}' appears twice (first on line {})", source, i + 1, v.tokens_[i],
                                  v.ids_[v.tokens_[i]] + 1));
  auto special = [&](const char* name) {
    auto id = v.find(name);
    if (id) return *id;
    // (A token that is the special one but for spaces around it: an editor's trailing spaces.)
    for (size_t i = 0; i < v.tokens_.size(); ++i) {
      const std::string& t = v.tokens_[i];
      const size_t b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
      if (b != std::string::npos && t.substr(b, e - b + 1) == name)
        throw DataError(fmt::format("{}:{}: the token is '{}', {} with spaces around it, and BERT needs {} itself: "
                                    "remove the spaces (an editor's trailing spaces? every line is a token as it is)",
                                    source, i + 1, t, name, name));
    }
    throw DataError(fmt::format("{}: the vocabulary has no {} token, which BERT needs", source, name));
  };
  v.pad_ = special("[PAD]");
  v.unk_ = special("[UNK]");
  v.cls_ = special("[CLS]");
  v.sep_ = special("[SEP]");
  v.mask_ = special("[MASK]");
  return v;
}

Vocab Vocab::load(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw DataError(fmt::format("{}: is a folder, and a vocabulary is a file (vocab.txt, one token a line){}",
                                path.string(),
                                std::filesystem::is_regular_file(path / "vocab.txt", ec)
                                    ? fmt::format(": give {}", (path / "vocab.txt").string())
                                    : ""));
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw DataError(fmt::format("{}: not a regular file (a pipe, a device or a socket): checkpoints and shards record "
                                "the vocabulary's file, to be read again; write it to a file and give that",
                                path.string()));
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (ec.value() == ENAMETOOLONG)  // (there, maybe, but not by this path)
      throw DataError(fmt::format("{}...: the vocabulary's path cannot be opened: it has {} bytes, more than a path "
                                  "may have; give it by a shorter path (--vocab FILE, relative to a folder nearer it)",
                                  path.string().substr(0, 60), path.string().size()));
    throw DataError(fmt::format("{}: no such vocabulary file: set [train] vocab to your vocab.txt (train, prepare-data and "
                                "batch also take --vocab FILE)", path.string()));
  }
  // Checkpoints, shards and exported folders record where the vocabulary was read, as text (JSON):
  // a name that is not UTF-8 would fail the first checkpoint's write, after the steps before it.
  TextFigures name;
  name.add_line(std::filesystem::absolute(path, ec).string());
  if (name.not_text > 0)
    throw DataError(fmt::format("{}: the vocabulary's path is not UTF-8 text (or holds control characters), and "
                                "checkpoints and shards record it as text: copy or move it to a path in UTF-8 and give "
                                "that",
                                path.string()));
  // Read as text is (data/text_input.h): a byte-order mark skipped, UTF-16 and binary files refused.
  LineReader in(path);
  std::vector<std::string> tokens;
  for (std::string line; in.next(line);) {
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (!line.empty() && line.back() == '\r') line.pop_back();  // files written on Windows
    tokens.push_back(line);
  }
  if (tokens.empty()) throw DataError(fmt::format("{}: the vocabulary file is empty", path.string()));
  return from_tokens(std::move(tokens), path.string());
}

std::string Vocab::describe() const { return fmt::format("{} ({} tokens, xxh3 {})", source_, size(), xxh3_); }

std::optional<int64_t> Vocab::find(const std::string& token) const {
  auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace bertc::data
