// Finds a kernel's main loop in its PTX and counts its math and shared-load instructions.
#include "codegen/ptx_loop.h"

#include <map>
#include <sstream>
#include <vector>

namespace bertc::codegen {
namespace {

struct Line {
  std::string label;   // "L" for a line "L:"
  std::string target;  // the label a bra jumps to
  std::string opcode;  // the instruction, predicate dropped
};

Line read_line(const std::string& text) {
  Line l;
  std::istringstream in(text);
  std::string word;
  if (!(in >> word)) return l;
  if (word.back() == ':') {
    l.label = word.substr(0, word.size() - 1);
    return l;
  }
  if (word[0] == '@' && !(in >> word)) return l;  // a predicate guards the instruction
  l.opcode = word;
  if (word.rfind("bra", 0) == 0 && in >> l.target && !l.target.empty() && l.target.back() == ';') l.target.pop_back();
  return l;
}

bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

LoopMix main_loop_mix(const std::string& ptx) {
  std::vector<Line> lines;
  std::istringstream in(ptx);
  for (std::string text; std::getline(in, text);) lines.push_back(read_line(text));
  // Loops: [label line, back branch line]. A label reached again from further down is a loop head
  // (PTX from NVRTC has no backward jump that is not a loop).
  std::map<std::string, size_t> label_at;
  std::vector<std::pair<size_t, size_t>> loops;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].label.empty()) label_at[lines[i].label] = i;
    if (!lines[i].target.empty())
      if (auto it = label_at.find(lines[i].target); it != label_at.end()) loops.emplace_back(it->second, i);
  }
  // Each loop's own instructions: those in no loop nested inside it (a loop the compiler kept,
  // such as a tile loader's, must not hide the main loop around it).
  LoopMix best;
  for (const auto& [from, to] : loops) {
    std::vector<bool> nested(to - from + 1, false);
    for (const auto& [f, t] : loops)
      if ((f != from || t != to) && from <= f && t <= to)
        for (size_t i = f; i <= t; ++i) nested[i - from] = true;
    LoopMix mix;
    for (size_t i = from; i <= to; ++i) {
      if (nested[i - from]) continue;
      const std::string& op = lines[i].opcode;
      if (starts(op, "fma.") || starts(op, "mma.")) ++mix.math;
      if (starts(op, "ld.shared") || starts(op, "ldmatrix")) ++mix.shared_loads;
    }
    if (mix.math > best.math) best = mix;
  }
  return best;
}

}  // namespace bertc::codegen
