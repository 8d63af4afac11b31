// Which vocabulary a file was made with (see vocab_identity.h).
#include "data/vocab_identity.h"

#include <charconv>

#include <fmt/format.h>

namespace bertc::data {

std::string VocabRecord::describe() const {
  const std::string tokens_text = tokens > 0 ? fmt::format("{} tokens, ", tokens) : "";
  return path.empty() ? fmt::format("{}xxh3 {}", tokens_text, xxh3) : fmt::format("{} ({}xxh3 {})", path, tokens_text, xxh3);
}

VocabRecord record_of(const Vocab& vocab) { return {vocab.xxh3(), vocab.size(), vocab.source()}; }

std::map<std::string, std::string> vocab_metadata(const VocabRecord& r) {
  std::map<std::string, std::string> m{{"vocab_xxh3", r.xxh3}, {"vocab_tokens", std::to_string(r.tokens)}};
  if (!r.path.empty()) m["vocab"] = r.path;
  return m;
}

std::optional<VocabRecord> vocab_from_metadata(const std::map<std::string, std::string>& m) {
  const auto hash = m.find("vocab_xxh3");
  if (hash == m.end() || hash->second.empty()) return std::nullopt;
  VocabRecord r;
  r.xxh3 = hash->second;
  if (const auto it = m.find("vocab"); it != m.end()) r.path = it->second;
  if (const auto it = m.find("vocab_tokens"); it != m.end()) {
    const std::string& t = it->second;
    std::from_chars(t.data(), t.data() + t.size(), r.tokens);
  }
  return r;
}

void require_same_vocab(const VocabRecord& used, const VocabRecord& recorded, const std::string& holder,
                        const std::string& fix) {
  if (used.xxh3 == recorded.xxh3) return;
  const bool same_size = recorded.tokens == used.tokens;
  // (One path, two hashes: the file was edited or replaced since, which is the thing to undo.)
  // (absolute first: weakly_canonical leaves a relative path whose first part is missing as it is)
  auto resolved = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  };
  const bool same_file = !used.path.empty() && !recorded.path.empty() && resolved(used.path) == resolved(recorded.path);
  throw DataError(fmt::format("the vocabulary {} is not the one {} was made with, {}{}{}: {}", used.describe(), holder,
                              recorded.describe(),
                              same_size ? " (the same size: the same tokens in another order, or others)" : "",
                              same_file ? "; it is the same file, changed since (edited or replaced in place): put "
                                          "back the one it was"
                                        : "",
                              fix));
}

}  // namespace bertc::data
