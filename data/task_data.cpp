// Reading .tsv and .jsonl task files into tokenized examples, and batching them by length.
#include "data/task_data.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "data/pretraining_data.h"
#include "data/text_input.h"

namespace bertc::data {
namespace {

using nlohmann::json;

// The file's lines (without "\r\n" or "\n"), blank ones left out with their numbers kept; read as
// training text is (data/text_input.h: a UTF-8 byte-order mark skipped, UTF-16 and binary files
// refused, some bytes that are not text said in `notes`).
std::vector<std::pair<int64_t, std::string>> read_lines(const std::filesystem::path& path,
                                                        std::vector<std::string>& notes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw DataError(fmt::format("{}: {}: give the path of the task examples, a .tsv or .jsonl file (the flag that "
                                "named it, or [finetune] train_data / dev_data)",
                                path.string(), std::filesystem::exists(path, ec) ? "not a file" : "no such task file"));
  LineReader in(path, size_t{64} << 20, [&](const std::string& note) { notes.push_back(note); });
  std::vector<std::pair<int64_t, std::string>> lines;
  int64_t number = 0;
  for (std::string line; in.next(line);) {
    ++number;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) lines.emplace_back(number, std::move(line));
  }
  return lines;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t begin = 0;
  while (true) {
    const size_t end = line.find('\t', begin);
    fields.push_back(line.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return fields;
    begin = end + 1;
  }
}

// Turns raw labels into classes, targets and tags, and texts into token ids, for one file.
class ExampleMaker {
 public:
  ExampleMaker(const std::filesystem::path& path, const TaskFormat& f, const Tokenizer& t, const Vocab& v)
      : path_(path.string()), f_(f), tokenizer_(t), vocab_(v) {}

  [[noreturn]] void fail(int64_t line, const std::string& message) const {
    throw DataError(fmt::format("{}:{}: {}", path_, line, message));
  }

  // A class from its name ([finetune] labels) or number.
  int32_t class_of(int64_t line, const std::string& text) const {
    if (!f_.label_names.empty()) {
      const auto it = std::find(f_.label_names.begin(), f_.label_names.end(), text);
      // (A name with spaces around it: [finetune] labels are trimmed, so adding it there cannot work.)
      const size_t b = text.find_first_not_of(" \t"), e = text.find_last_not_of(" \t");
      const std::string bare = b == std::string::npos ? "" : text.substr(b, e - b + 1);
      if (it == f_.label_names.end() && bare != text &&
          std::find(f_.label_names.begin(), f_.label_names.end(), bare) != f_.label_names.end())
        fail(line, fmt::format("label '{}' is the label '{}' with spaces around it: remove them from the line "
                               "(labels are matched as written)",
                               text, bare));
      // (a whole number that names no class is a class number, as a JSON number is: said once,
      // with the names it stands for, by read_task_file; refused where the names are numerals, and
      // written other than plainly, "01" or "-0", which names nothing)
      if (int64_t n = -1; it == f_.label_names.end() && whole_number(text, n)) {
        if (text != std::to_string(n))
          fail(line, fmt::format("label '{}' is the number {} written another way: write it {}{}", text, n, n,
                                 std::find(f_.label_names.begin(), f_.label_names.end(), std::to_string(n)) !=
                                         f_.label_names.end()
                                     ? ", as [finetune] labels names it"
                                     : " (a class number), or as one of [finetune] labels' names"));
        return numbered_class(line, n);
      }
      // (a name in other letter case: adding it would make it another class)
      if (const auto same = std::find_if(f_.label_names.begin(), f_.label_names.end(),
                                         [&](const std::string& name) { return name != text && equal_ignoring_case(name, text); });
          it == f_.label_names.end() && same != f_.label_names.end())
        fail(line, fmt::format("label '{}' is the label '{}' in other letter case, and labels are matched as written: "
                               "write it '{}' in the file (or, if the two are other classes, name both in "
                               "[finetune] labels)",
                               text, *same, *same));
      // (a file's header read as an example: adding its column name made a class of it)
      if (it == f_.label_names.end() && line == 1 && !f_.tsv_header)
        fail(line, fmt::format("label '{}' is not one of [finetune] labels ({}), and [finetune] tsv_header is false: if "
                               "line 1 is the file's header, set tsv_header = true and name the columns by it",
                               text, fmt::join(f_.label_names, ", ")));
      // (a comma parts [finetune] labels' names: "add it there" made two classes of it)
      if (it == f_.label_names.end() && text.find(',') != std::string::npos)
        fail(line, fmt::format("label '{}' is not one of [finetune] labels ({}), and holds a comma, which parts the "
                               "names there, so no class can be named so: rename it in the file (and name it so in "
                               "labels)",
                               text, fmt::join(f_.label_names, ", ")));
      if (it == f_.label_names.end())
        fail(line, fmt::format("label '{}' is not one of [finetune] labels ({}): add it there, or fix the line", text,
                               fmt::join(f_.label_names, ", ")));
      return static_cast<int32_t>(it - f_.label_names.begin());
    }
    int64_t n = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size())
      fail(line, fmt::format("label '{}' is not a class number: {}", text,
                             line == 1 && !f_.tsv_header
                                 ? "if line 1 is the file's header, set [finetune] tsv_header = true and name the "
                                   "columns by it; else name the classes in order with [finetune] labels = \"a,b,...\""
                                 : "name the classes in order with [finetune] labels = \"a,b,...\""));
    return class_number(line, n);
  }

  static bool whole_number(const std::string& text, int64_t& n) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
  }

  // A class number where [finetune] labels names the classes: the class at that position; refused
  // where the names are numerals themselves (zero-based 0..4 under labels "1,2,3,4,5" took 1 as the
  // name "1" and 0 as its position, two labels in one class).
  int32_t numbered_class(int64_t line, int64_t n) const {
    std::vector<std::string> numerals;
    for (const std::string& name : f_.label_names)
      if (int64_t v = 0; whole_number(name, v)) numerals.push_back(name);
    if (!numerals.empty())
      fail(line, fmt::format("label {} is a number, and [finetune] labels names numerals ({}) but not {}: write the "
                             "label as one of its names ({})",
                             n, fmt::join(numerals, ", "), n, fmt::join(f_.label_names, ", ")));
    numbered_ = true;
    return class_number(line, n);
  }
  bool numbered() const { return numbered_; }
  bool capitals() const { return capitals_; }

  int32_t class_number(int64_t line, int64_t n) const {
    // (class numbers start at 0: a -1/1 file's classes want names, which no num_labels gives)
    if (n < 0)
      fail(line, fmt::format("label {} is negative, and class numbers run from 0: name the classes in order with "
                             "[finetune] labels (e.g. labels = \"-1,1\" for a file of -1 and 1)",
                             n));
    if (n >= f_.num_labels)
      fail(line, fmt::format("label {} is outside 0..{} ({})", n, f_.num_labels - 1,
                             !f_.label_names.empty()
                                 ? fmt::format("the {} classes [finetune] labels names", f_.label_names.size())
                             : f_.num_labels_default
                                 ? fmt::format("[finetune] num_labels is not set, so its default of {} applies: set it "
                                               "to the number of classes, {} or more",
                                               f_.num_labels, std::max<int64_t>(n + 1, 2))
                                 : fmt::format("[finetune] num_labels = {}", f_.num_labels)));
    return static_cast<int32_t>(n);
  }

  float real_of(int64_t line, const std::string& cell) const {
    // (spaces around a number are a spreadsheet's, not part of it)
    const size_t first = cell.find_first_not_of(" \t"), last = cell.find_last_not_of(" \t");
    std::string text = first == std::string::npos ? cell : cell.substr(first, last - first + 1);
    // (a written plus sign, "+3", as a spreadsheet keeps it; from_chars takes none)
    if (text.size() > 1 && text[0] == '+' && (std::isdigit(static_cast<unsigned char>(text[1])) || text[1] == '.'))
      text.erase(0, 1);
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    // (out of a double's range either way: past it, too large; below its smallest, 0 — as a JSON
    // reader takes 1e-400 — not "too large")
    if (ec == std::errc::result_out_of_range)
      return target(line, text, std::abs(std::strtod(text.c_str(), nullptr)) < 1 ? 0.0 : HUGE_VAL);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
      fail(line, fmt::format("regression target '{}' is not a finite number", text));
    return target(line, text, v);
  }

  // A regression target the loss can take (kLargestRegressionTarget).
  float target(int64_t line, const std::string& text, double v) const {
    constexpr double kLargest = kLargestRegressionTarget;
    if (!(std::abs(v) <= kLargest))
      fail(line, fmt::format("regression target {} is too large for training: its squared error would overflow the "
                             "float32 loss (targets must lie within +-{:g}): scale the targets (divide them all by the "
                             "same power of ten, and the predictions back)",
                             text, kLargest));
    return static_cast<float>(v);
  }

  // [CLS] a [SEP] (b [SEP]), the pair cut longest-first to max_len.
  void set_texts(TaskExample& e, const std::string& a, const std::optional<std::string>& b, int64_t& truncated) const {
    capitals_ = capitals_ || has_capital(a) || (b && has_capital(*b));
    std::vector<int64_t> ta = tokenizer_.encode(a), tb = b ? tokenizer_.encode(*b) : std::vector<int64_t>{};
    if (ta.empty() || (b && tb.empty()))  // (it would train on [CLS] [SEP] alone)
      fail(e.line, fmt::format("the text '{}' holds no words (it is empty, or holds only characters the tokenizer "
                               "drops): remove the example, or fill its text in",
                               ta.empty() ? f_.text_a : f_.text_b));
    const size_t room = static_cast<size_t>(f_.max_len) - (b ? 3 : 2);
    if (ta.size() + tb.size() > room) ++truncated;
    while (ta.size() + tb.size() > room) (ta.size() > tb.size() ? ta : tb).pop_back();
    e.ids.push_back(static_cast<int32_t>(vocab_.cls()));
    for (int64_t id : ta) e.ids.push_back(static_cast<int32_t>(id));
    e.ids.push_back(static_cast<int32_t>(vocab_.sep()));
    e.types.assign(e.ids.size(), 0);
    if (!b) return;
    for (int64_t id : tb) e.ids.push_back(static_cast<int32_t>(id));
    e.ids.push_back(static_cast<int32_t>(vocab_.sep()));
    e.types.resize(e.ids.size(), 1);
  }

  // Each word's pieces, its tag on the first piece; cut to max_len with [CLS] and [SEP].
  void set_words(TaskExample& e, const std::vector<std::string>& words, const std::vector<int32_t>& tags,
                 TaskData& data) const {
    e.ids = {static_cast<int32_t>(vocab_.cls())};
    e.tags = {0};
    e.tag_weights = {0};
    const size_t room = static_cast<size_t>(f_.max_len) - 1;
    bool cut = false;
    for (size_t w = 0; w < words.size(); ++w) {
      capitals_ = capitals_ || has_capital(words[w]);
      const std::vector<int64_t> pieces = tokenizer_.encode(words[w]);
      // (its tag would go with it, and the line's tags no longer match its words, without a word)
      if (pieces.empty())
        fail(e.line, fmt::format("word {} ({}) makes no token (empty, spaces, or characters the tokenizer drops), "
                                 "so its tag would be left out: remove the word and its tag, or correct the word",
                                 w + 1, json(words[w]).dump()));
      ++data.words;
      for (size_t p = 0; p < pieces.size(); ++p) {
        if (e.ids.size() >= room) {
          data.words_cut += p == 0;  // (its tag went with its first piece: never scored)
          cut = true;
          break;
        }
        e.ids.push_back(static_cast<int32_t>(pieces[p]));
        e.tags.push_back(p == 0 ? tags[w] : 0);
        e.tag_weights.push_back(p == 0 ? 1.0f : 0.0f);
      }
    }
    data.truncated += cut;
    if (cut) data.words_in_cut += static_cast<int64_t>(words.size());
    if (std::find(e.tag_weights.begin(), e.tag_weights.end(), 1.0f) == e.tag_weights.end())
      fail(e.line, "no word of the line makes a token (an empty word list?): it would count for nothing");
    e.ids.push_back(static_cast<int32_t>(vocab_.sep()));
    e.tags.push_back(0);
    e.tag_weights.push_back(0);
    e.types.assign(e.ids.size(), 0);
  }

  const std::string path_;
  const TaskFormat& f_;
  const Tokenizer& tokenizer_;
  mutable bool numbered_ = false;  // a label was a class number where labels names the classes
  mutable bool capitals_ = false;  // a text held a capital (unknown_note's letter-case advice)
  const Vocab& vocab_;
};

// A column's number: by header name, or the key itself as a number without a header.
size_t column_of(const std::string& key, const std::string& what, const std::vector<std::string>& header,
                 const std::string& path) {
  if (!header.empty()) {
    const auto it = std::find(header.begin(), header.end(), key);
    if (const auto again = it == header.end() ? it : std::find(it + 1, header.end(), key); again != header.end())
      throw DataError(fmt::format("{}:1: the header names two columns '{}' (columns {} and {}, from 0), and [finetune] "
                                  "{} reads that name: rename one of them in the header",
                                  path, key, it - header.begin(), again - header.begin(), what));
    if (it == header.end()) {
      // (Each name quoted, so that spaces around one show; one that is the key but for them is named.)
      std::vector<std::string> quoted;
      std::string spaced;
      for (const std::string& name : header) {
        quoted.push_back(fmt::format("'{}'", name));
        const size_t b = name.find_first_not_of(" \t\r"), e = name.find_last_not_of(" \t\r");
        if (spaced.empty() && b != std::string::npos && name.substr(b, e - b + 1) == key) spaced = name;
      }
      if (!spaced.empty())
        throw DataError(fmt::format("{}:1: no column '{}' ([finetune] {}), but the header names '{}': spaces around "
                                    "the name; remove them from the header (or set [finetune] {} = \"{}\")",
                                    path, key, what, spaced, what, spaced));
      // (a name in other letter case: the file has a header, and tsv_header = false would not help)
      for (const std::string& name : header)
        if (equal_ignoring_case(name, key))
          throw DataError(fmt::format("{}:1: no column '{}' ([finetune] {}), but the header names '{}', in other "
                                      "letter case (column names are matched as written): set [finetune] {} = "
                                      "\"{}\", or rename the column",
                                      path, key, what, name, what, name));
      throw DataError(fmt::format("{}:1: no column '{}' ([finetune] {}); the header names: {} (set [finetune] "
                                  "tsv_header = false for a file without one)",
                                  path, key, what, fmt::join(quoted, ", ")));
    }
    return static_cast<size_t>(it - header.begin());
  }
  size_t n = 0;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), n);
  if (ec != std::errc() || end != key.data() + key.size())
    throw DataError(fmt::format("{}: [finetune] {} = '{}' names a column, and the file has no header (tsv_header = "
                                "false): give the column's 0-based number",
                                path, what, key));
  return n;
}

TaskData read_tsv(const std::filesystem::path& path, const TaskFormat& f, const ExampleMaker& maker) {
  if (f.kind == LabelKind::Tags)
    throw DataError(fmt::format("{}: token-classification reads .jsonl (a list of words and a list of tags a line), "
                                "not .tsv",
                                path.string()));
  TaskData data{path, {}, 0, {}};
  auto lines = read_lines(path, data.notes);
  if (lines.empty()) throw DataError(fmt::format("{}: no examples in the file (it is empty, or blank lines only)", path.string()));
  std::vector<std::string> header;
  if (f.tsv_header && !lines.empty()) {
    header = split_tabs(lines.front().second);
    lines.erase(lines.begin());
  }
  const size_t a = column_of(f.text_a, "text_a", header, path.string());
  const bool pairs = !f.text_b.empty();
  const size_t b = pairs ? column_of(f.text_b, "text_b", header, path.string()) : 0;
  const size_t label = column_of(f.label, "label", header, path.string());
  const size_t needed = std::max({a, b, label}) + 1;
  // Every row has the header's fields (or, without one, the first row's): a row with more has a
  // tab inside a text, which would cut the text there without a word.
  const size_t width = !header.empty() ? header.size() : lines.empty() ? 0 : split_tabs(lines.front().second).size();
  const std::string width_is = !header.empty() ? "the header has" : "the first row has";
  for (const auto& [number, line] : lines) {
    const std::vector<std::string> fields = split_tabs(line);
    if (fields.size() < needed)
      maker.fail(number, fmt::format("{} fields separated by tabs, and the columns read need {}", fields.size(), needed));
    if (fields.size() != width)
      maker.fail(number, fmt::format("{} fields separated by tabs, and {} {}: a tab inside a text would cut it there "
                                     "(replace tabs in texts by spaces), or a field is missing",
                                     fields.size(), width_is, width));

    TaskExample e;
    e.line = number;
    maker.set_texts(e, fields[a], pairs ? std::optional(fields[b]) : std::nullopt, data.truncated);
    if (f.kind == LabelKind::Class) e.label = maker.class_of(number, fields[label]);
    else e.target = maker.real_of(number, fields[label]);
    data.examples.push_back(std::move(e));
  }
  return data;
}

const json& member(const json& object, const std::string& key, const std::string& what, int64_t line,
                   const ExampleMaker& maker) {
  const auto it = object.find(key);
  if (it == object.end())
    maker.fail(line, fmt::format("no key '{}' ([finetune] {}) in the object", key, what));
  return *it;
}

std::string text_member(const json& object, const std::string& key, const std::string& what, int64_t line,
                        const ExampleMaker& maker) {
  const json& v = member(object, key, what, line, maker);
  if (!v.is_string()) maker.fail(line, fmt::format("'{}' must be a string, found {}", key, v.type_name()));
  return v.get<std::string>();
}

int32_t class_member(const json& v, int64_t line, const ExampleMaker& maker, const std::vector<std::string>& names) {
  // A whole number where the labels are named numerals ("1,0", as datasets' to_json writes a
  // string label's numbers) is the label of that name, not the class at that position (JSON 1 was
  // the class named "0", silently); one that names none of them is refused as ambiguous
  // (numbered_class).
  // (v.dump(): a whole number's own decimal; one of 2^63 or more, which JSON keeps unsigned, read as
  // a signed one wrapped to a negative number: 2^64-1 became -1, the class "-1", silently)
  if (v.is_number_integer() && !names.empty()) {
    const std::string text = v.dump();
    if (std::find(names.begin(), names.end(), text) != names.end()) return maker.class_of(line, text);
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    maker.fail(line, fmt::format("label {} is too large to be a class number: {}", v.dump(),
                                 names.empty() ? "name the classes in order with [finetune] labels = \"a,b,...\""
                                               : fmt::format("write it as one of [finetune] labels' names ({})",
                                                             fmt::join(names, ", "))));
  if (v.is_number_integer())
    return names.empty() ? maker.class_number(line, v.get<int64_t>()) : maker.numbered_class(line, v.get<int64_t>());
  if (v.is_string()) return maker.class_of(line, v.get<std::string>());
  // (A number that is not a whole one of 64 bits: 1.0, 1e3, 2^64; said as the number it is.)
  if (v.is_number())
    maker.fail(line, fmt::format("a label must be a class number (a whole number from 0) or name, found {}: write "
                                 "the class as a whole number",
                                 v.dump()));
  maker.fail(line, fmt::format("a label must be a class number or name, found {}", v.type_name()));
}

TaskData read_jsonl(const std::filesystem::path& path, const TaskFormat& f, const ExampleMaker& maker) {
  TaskData data{path, {}, 0, {}};
  for (const auto& [number, line] : read_lines(path, data.notes)) {
    json object;
    // A key twice in one object: JSON parsers keep one of them, and which is not the file's to say.
    std::vector<std::set<std::string>> keys;
    std::string twice;
    const json::parser_callback_t note_keys = [&](int, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) keys.emplace_back();
      if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
          twice.empty())
        twice = parsed.get<std::string>();
      return true;
    };
    try {
      object = json::parse(line, note_keys);
    } catch (const json::parse_error& e) {
      maker.fail(number, fmt::format("not a JSON object: {}", e.what()));
    } catch (const json::out_of_range& e) {  // (a number past a double's range, in any key: 1e999)
      maker.fail(number, fmt::format("{}: a number beyond a double's range (about 1.8e308), which no key can hold: "
                                     "correct it (or remove the key, if bertc does not read it)",
                                     e.what()));
    }
    if (!twice.empty()) maker.fail(number, fmt::format("the key '{}' is there twice: keep one", twice));
    if (!object.is_object()) maker.fail(number, fmt::format("a line must be a JSON object, found {}", object.type_name()));
    TaskExample e;
    e.line = number;
    if (f.kind == LabelKind::Tags) {
      const json& words = member(object, f.text_a, "text_a", number, maker);
      const json& tags = member(object, f.label, "label", number, maker);
      if (!words.is_array() || !tags.is_array() || words.size() != tags.size())
        maker.fail(number, fmt::format("'{}' and '{}' must be lists of equal length (a tag per word)", f.text_a, f.label));
      std::vector<std::string> w;
      std::vector<int32_t> t;
      for (size_t i = 0; i < words.size(); ++i) {
        if (!words[i].is_string()) maker.fail(number, fmt::format("word {} of '{}' is not a string", i, f.text_a));
        w.push_back(words[i].get<std::string>());
        t.push_back(class_member(tags[i], number, maker, f.label_names));
      }
      maker.set_words(e, w, t, data);
    } else {
      const std::string a = text_member(object, f.text_a, "text_a", number, maker);
      const std::optional<std::string> b =
          f.text_b.empty() ? std::nullopt : std::optional(text_member(object, f.text_b, "text_b", number, maker));
      maker.set_texts(e, a, b, data.truncated);
      const json& label = member(object, f.label, "label", number, maker);
      if (f.kind == LabelKind::Class) {
        e.label = class_member(label, number, maker, f.label_names);
      } else {
        if (!label.is_number() || !std::isfinite(label.get<double>()))
          maker.fail(number, fmt::format("regression target '{}' must be a finite number", f.label));
        e.target = maker.target(number, label.dump(), label.get<double>());
      }
    }
    data.examples.push_back(std::move(e));
  }
  return data;
}

}  // namespace

bool equal_ignoring_case(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

TaskData read_task_file(const std::filesystem::path& path, const TaskFormat& format, const Tokenizer& tokenizer,
                        const Vocab& vocab) {
  if (format.max_len < (format.text_b.empty() ? 3 : 5))
    throw DataError(fmt::format("{}: sequences of {} tokens leave no room for text between [CLS] and [SEP]",
                                path.string(), format.max_len));
  const ExampleMaker maker(path, format, tokenizer, vocab);
  // The kind by name; gzip'd files (.tsv.gz, .jsonl.gz) are read as their lines are (LineReader
  // reads gzip by its bytes).
  const std::string ext = path.extension() == ".gz" ? path.stem().extension().string() : path.extension().string();
  // (A pipe, as <(...) gives: its name says no kind, and it can be read once only; a file can.)
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw DataError(fmt::format("{}: not a regular file (a pipe, as <(...) gives, a device or a folder): a task file "
                                "is read from a file named .tsv or .jsonl; write it to one and give that",
                                path.string()));
  TaskData data;
  if (ext == ".tsv") data = read_tsv(path, format, maker);
  else if (ext == ".jsonl") data = read_jsonl(path, format, maker);
  else
    throw DataError(fmt::format("{}: a task file is .tsv (GLUE-style columns) or .jsonl (a JSON object a line), "
                                "gzip'd or not (.tsv.gz, .jsonl.gz); rename it to say which",
                                path.string()));
  if (data.examples.empty()) throw DataError(fmt::format("{}: no examples in the file", path.string()));
  if (maker.numbered()) {
    std::vector<std::string> meaning;
    for (size_t i = 0; i < format.label_names.size(); ++i) meaning.push_back(fmt::format("{} = {}", i, format.label_names[i]));
    data.notes.push_back(fmt::format("{}: labels written as class numbers are the classes at those positions in "
                                     "[finetune] labels: {} (write the names to say it plainly)",
                                     path.string(), fmt::join(meaning, ", ")));
  }
  // (the text's tokens: [CLS] and [SEP] aside)
  int64_t tokens = 0, unknown = 0;
  for (const TaskExample& e : data.examples)
    for (const int32_t id : e.ids)
      if (id != vocab.cls() && id != vocab.sep()) ++tokens, unknown += id == vocab.unk();
  if (const auto said = unknown_note(unknown, tokens, tokenizer, maker.capitals(), /*pretraining_text=*/std::nullopt))
    data.notes.push_back(fmt::format("{}: {}", path.string(), *said));
  return data;
}

TaskBatch make_task_batch(const std::vector<const TaskExample*>& examples, LabelKind kind, int64_t batch,
                          int64_t seq_len) {
  if (static_cast<int64_t>(examples.size()) > batch) throw std::logic_error("more examples than rows in a task batch");
  TaskBatch out;
  out.batch = batch, out.seq_len = seq_len, out.examples = static_cast<int64_t>(examples.size());
  const size_t cells = static_cast<size_t>(batch * seq_len);
  out.input_ids.assign(cells, 0);
  out.token_type_ids.assign(cells, 0);
  out.attention_mask.assign(cells, 0);
  const bool tags = kind == LabelKind::Tags;
  out.labels.assign(tags ? cells : static_cast<size_t>(batch), 0);
  out.weights.assign(tags ? cells : static_cast<size_t>(batch), 0.0f);
  if (kind == LabelKind::Real) out.targets.assign(static_cast<size_t>(batch), 0.0f);
  for (size_t r = 0; r < examples.size(); ++r) {
    const TaskExample& e = *examples[r];
    if (static_cast<int64_t>(e.ids.size()) > seq_len) throw std::logic_error("a task example longer than its bucket");
    const size_t row = r * static_cast<size_t>(seq_len);
    std::copy(e.ids.begin(), e.ids.end(), out.input_ids.begin() + row);
    std::copy(e.types.begin(), e.types.end(), out.token_type_ids.begin() + row);
    std::fill_n(out.attention_mask.begin() + row, e.ids.size(), 1);
    if (tags) {
      std::copy(e.tags.begin(), e.tags.end(), out.labels.begin() + row);
      std::copy(e.tag_weights.begin(), e.tag_weights.end(), out.weights.begin() + row);
    } else {
      out.weights[r] = 1.0f;
      if (kind == LabelKind::Real) out.targets[r] = e.target;
      else out.labels[r] = e.label;
    }
  }
  return out;
}

size_t bucket_of(int64_t length, const std::vector<int64_t>& buckets) {
  for (size_t b = 0; b < buckets.size(); ++b)
    if (length <= buckets[b]) return b;
  return buckets.size() - 1;
}

std::string task_examples_xxh3(const std::vector<TaskExample>& examples) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), XXH3_freeState);
  XXH3_64bits_reset(state.get());
  // (each part led by its length: two examples whose parts split alike cannot hash alike by shifting)
  const auto add = [&](const auto& values) {
    const uint64_t n = values.size();
    XXH3_64bits_update(state.get(), &n, sizeof n);
    XXH3_64bits_update(state.get(), values.data(), values.size() * sizeof(values[0]));
  };
  for (const TaskExample& e : examples) {
    add(e.ids), add(e.types), add(e.tags), add(e.tag_weights);
    XXH3_64bits_update(state.get(), &e.label, sizeof e.label);
    XXH3_64bits_update(state.get(), &e.target, sizeof e.target);
  }
  return fmt::format("{:016x}", XXH3_64bits_digest(state.get()));
}

std::vector<PlannedBatch> plan_batches(const std::vector<TaskExample>& examples, const std::vector<int64_t>& buckets,
                                       int64_t batch, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // One stream per epoch, a function of the seed only: a rerun shuffles the same way.
  Rng rng(seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(epoch));
  if (shuffle) rng.shuffle(order);
  std::vector<std::vector<size_t>> by_bucket(buckets.size());
  for (size_t i : order) by_bucket[bucket_of(static_cast<int64_t>(examples[i].ids.size()), buckets)].push_back(i);
  std::vector<PlannedBatch> out;
  for (size_t b = 0; b < buckets.size(); ++b)
    for (size_t begin = 0; begin < by_bucket[b].size(); begin += static_cast<size_t>(batch)) {
      const size_t end = std::min(by_bucket[b].size(), begin + static_cast<size_t>(batch));
      out.push_back({b, std::vector<size_t>(by_bucket[b].begin() + begin, by_bucket[b].begin() + end)});
    }
  if (shuffle) rng.shuffle(out);
  return out;
}

BatchFill batch_fill(const std::vector<TaskExample>& examples, const std::vector<int64_t>& buckets, int64_t batch) {
  BatchFill f;
  for (const PlannedBatch& b : plan_batches(examples, buckets, batch, 0, 0, false)) {
    for (size_t i : b.examples) f.tokens += static_cast<int64_t>(examples[i].ids.size());
    f.positions += batch * buckets[b.bucket];
  }
  const auto longest_batches = (static_cast<int64_t>(examples.size()) + batch - 1) / batch;
  f.positions_longest_only = longest_batches * batch * buckets.back();
  return f;
}

}  // namespace bertc::data
