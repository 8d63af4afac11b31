// racecheck over a launch's global memory (global_races.h).
#include "ptx/global_races.h"

#include <algorithm>

namespace bertc::ptx {

void GlobalRaces::begin_launch() {
  pages_.clear();
  released_.clear();
  running_.clear();
  current_ = nullptr;
  last_page_ = ~uint64_t{0};
  last_cells_ = nullptr;
  clock_ = 1;  // (time 0 comes before everything: no access has it)
  covered_ = true;
}

void GlobalRaces::begin_block(uint64_t block, uint32_t warps) {
  block_ = static_cast<uint32_t>(block);
  current_ = &running_[block_];
  current_->block_barrier = ++clock_;
  current_->acquired = 0;  // (no fence of its own yet: nothing another block did is ordered before it)
  current_->warp_barrier.assign(warps, clock_);
}

void GlobalRaces::resume_block(uint64_t block) {
  block_ = static_cast<uint32_t>(block);
  current_ = &running_.at(block_);
}

void GlobalRaces::end_block(uint64_t block) {
  running_.erase(static_cast<uint32_t>(block));
  if (block_ == static_cast<uint32_t>(block)) current_ = nullptr;
}

void GlobalRaces::fence() {
  released_[block_].push_back(++clock_);
  current_->acquired = clock_;
}

GlobalRaces::Cell* GlobalRaces::cell(uint64_t address) {
  const uint64_t page = address / kPage;
  if (page != last_page_) {
    auto it = pages_.find(page);
    if (it == pages_.end()) {
      if (pages_.size() >= most_pages_) {
        covered_ = false;
        return nullptr;
      }
      it = pages_.emplace(page, std::make_unique<Cell[]>(kPage)).first;
    }
    last_page_ = page;
    last_cells_ = it->second.get();
  }
  return last_cells_ + address % kPage;
}

// Whether `earlier` happened before `now`, an access of the current block: the same thread
// (program order); in the block, a bar.sync since, or a bar.warp.sync of their one warp since;
// from another block, a fence of that block after the access and one of this block after that
// (see the header: the first fence after the access, which comes before any later one).
bool GlobalRaces::ordered(const Stamp& earlier, const Stamp& now) const {
  if (earlier.thread == 0 || (earlier.thread == now.thread && earlier.block == now.block)) return true;
  if (earlier.block == now.block) {
    if (earlier.time < current_->block_barrier) return true;
    return (earlier.thread - 1) / 32 == (now.thread - 1) / 32 &&
           earlier.time < current_->warp_barrier.at((now.thread - 1) / 32);
  }
  const auto released = released_.find(earlier.block);
  if (released == released_.end()) return false;
  const auto first_after = std::upper_bound(released->second.begin(), released->second.end(), earlier.time);
  return first_after != released->second.end() && *first_after <= current_->acquired;
}

GlobalHazard GlobalRaces::hazard(GlobalHazard::Kind kind, uint64_t address, const Stamp& other) const {
  return {kind, address, other.block, other.thread - 1, other.pc};
}

// Each remembered byte of [at, at + n): `fresh(cell, address)` for one whose record differs from
// the byte's before it (it returns whether a next byte holding the record this one held may skip
// the checks: their outcome would be the same), `same(cell)` for one that may. An access's bytes
// are most often last touched together: checked once, not once a byte.
template <typename Fresh, typename Same>
void GlobalRaces::each_byte(uint64_t at, uint64_t n, Fresh fresh, Same same) {
  Cell before;
  bool may_skip = false;
  for (uint64_t a = at; a < at + n; ++a) {
    Cell* c = cell(a);
    if (!c) continue;
    if (may_skip && c->write == before.write && c->read == before.read) {
      same(*c);
      continue;
    }
    before = *c;
    may_skip = fresh(*c, a);
  }
}

std::optional<GlobalHazard> GlobalRaces::read(uint32_t thread, uint32_t pc, uint64_t at, uint64_t n) {
  std::optional<GlobalHazard> found;
  const Stamp now{block_, thread + 1, pc, clock_};
  each_byte(
      at, n,
      [&](Cell& c, uint64_t a) {
        if (!found && !ordered(c.write, now)) found = hazard(GlobalHazard::Kind::ReadAfterWrite, a, c.write);
        // (one read kept: a later read replaces it unless the kept one is another thread's that the
        // new one is not ordered after, which stays the witness for a write to come)
        if (c.read.thread != 0 && !ordered(c.read, now)) return false;
        c.read = now;
        return true;
      },
      [&](Cell& c) { c.read = now; });
  return found;
}

std::optional<GlobalHazard> GlobalRaces::write(uint32_t thread, uint32_t pc, uint64_t at, uint64_t n) {
  std::optional<GlobalHazard> found;
  const Stamp now{block_, thread + 1, pc, clock_};
  each_byte(
      at, n,
      [&](Cell& c, uint64_t a) {
        if (!found && !ordered(c.write, now)) found = hazard(GlobalHazard::Kind::WriteAfterWrite, a, c.write);
        if (!found && !ordered(c.read, now)) found = hazard(GlobalHazard::Kind::WriteAfterRead, a, c.read);
        c.write = now;
        return true;
      },
      [&](Cell& c) { c.write = now; });
  return found;
}

}  // namespace bertc::ptx
