// Best-fit decreasing placement of examples into rows (see row_packing.h).
#include "data/row_packing.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace bertc::data {
namespace {

struct OpenRow {
  std::vector<size_t> examples;
  int64_t tokens = 0, predictions = 0;
};

}  // namespace

std::vector<std::vector<size_t>> pack_rows(std::span<const ExampleSize> sizes, const RowCapacity& capacity) {
  if (capacity.tokens <= 0 || capacity.predictions < 0 || capacity.examples <= 0)
    throw std::invalid_argument(fmt::format("a row of {} tokens, {} predictions and {} examples holds nothing",
                                            capacity.tokens, capacity.predictions, capacity.examples));
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i].tokens > capacity.tokens || sizes[i].predictions > capacity.predictions)
      throw std::invalid_argument(fmt::format("example {} ({} tokens, {} predictions) does not fit a row of {} tokens "
                                              "and {} predictions",
                                              i, sizes[i].tokens, sizes[i].predictions, capacity.tokens,
                                              capacity.predictions));
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a].tokens > sizes[b].tokens; });
  std::vector<OpenRow> rows;
  // The rows that may take more: (tokens left, row). The closest fit is the first at or after the
  // example's tokens whose predictions also fit (rows opened first come first among equals).
  std::set<std::pair<int64_t, size_t>> open;
  for (const size_t e : order) {
    const ExampleSize& s = sizes[e];
    auto it = open.lower_bound({s.tokens, 0});
    while (it != open.end() && rows[it->second].predictions + s.predictions > capacity.predictions) ++it;
    size_t r;
    if (it == open.end()) {
      r = rows.size();
      rows.emplace_back();
    } else {
      r = it->second;
      open.erase(it);
    }
    OpenRow& row = rows[r];
    row.examples.push_back(e);
    row.tokens += s.tokens;
    row.predictions += s.predictions;
    if (static_cast<int64_t>(row.examples.size()) < capacity.examples) open.insert({capacity.tokens - row.tokens, r});
  }
  std::vector<std::vector<size_t>> out;
  out.reserve(rows.size());
  for (OpenRow& row : rows) {
    std::sort(row.examples.begin(), row.examples.end());
    out.push_back(std::move(row.examples));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return out;
}

RowWork& RowWork::operator+=(const RowWork& o) {
  rows += o.rows;
  examples += o.examples;
  tokens += o.tokens;
  example_scores += o.example_scores;
  tile_scores += o.tile_scores;
  return *this;
}

RowWork row_work(std::span<const int64_t> lengths, int64_t seq_len, int64_t tile_q, int64_t tile_k) {
  if (tile_q <= 0 || tile_k <= 0)
    throw std::invalid_argument(fmt::format("tiles of {} queries and {} keys", tile_q, tile_k));
  RowWork w{1, static_cast<int64_t>(lengths.size()), 0, 0, 0};
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(seq_len, 0)), static_cast<int64_t>(lengths.size()));
  for (size_t k = 0; k < lengths.size(); ++k) {
    if (lengths[k] < 0 || w.tokens + lengths[k] > seq_len)
      throw std::invalid_argument(fmt::format("examples of {} tokens do not fit a row of {}", w.tokens + lengths[k], seq_len));
    std::fill_n(ids.begin() + w.tokens, lengths[k], static_cast<int64_t>(k));
    w.tokens += lengths[k];
    w.example_scores += lengths[k] * lengths[k];
  }
  // (ids rise along the row: two tiles share an example iff their first-to-last id ranges overlap)
  for (int64_t q0 = 0; q0 < seq_len; q0 += tile_q) {
    const int64_t q1 = std::min(q0 + tile_q, seq_len) - 1;
    for (int64_t k0 = 0; k0 < seq_len; k0 += tile_k) {
      const int64_t k1 = std::min(k0 + tile_k, seq_len) - 1;
      if (ids[q0] <= ids[k1] && ids[k0] <= ids[q1]) w.tile_scores += (q1 - q0 + 1) * (k1 - k0 + 1);
    }
  }
  return w;
}

}  // namespace bertc::data
