// Loading and checking vocab.txt.
#include "data/vocab.h"

#include <fstream>

#include <fmt/format.h>

namespace bertc::data {

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::string& source) {
  Vocab v;
  v.tokens_ = std::move(tokens);
  for (size_t i = 0; i < v.tokens_.size(); ++i)
    if (!v.ids_.emplace(v.tokens_[i], static_cast<int64_t>(i)).second)
      throw DataError(fmt::format("{}:{}: token '{}' appears twice (first on line {})", source, i + 1, v.tokens_[i],
                                  v.ids_[v.tokens_[i]] + 1));
  auto special = [&](const char* name) {
    auto id = v.find(name);
    if (!id) throw DataError(fmt::format("{}: the vocabulary has no {} token, which BERT needs", source, name));
    return *id;
  };
  v.pad_ = special("[PAD]");
  v.unk_ = special("[UNK]");
  v.cls_ = special("[CLS]");
  v.sep_ = special("[SEP]");
  v.mask_ = special("[MASK]");
  return v;
}

Vocab Vocab::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw DataError(fmt::format("{}: cannot open vocabulary file (set [train] vocab or --vocab)", path.string()));
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // files written on Windows
    tokens.push_back(line);
  }
  if (tokens.empty()) throw DataError(fmt::format("{}: the vocabulary file is empty", path.string()));
  return from_tokens(std::move(tokens), path.string());
}

std::optional<int64_t> Vocab::find(const std::string& token) const {
  auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace bertc::data
