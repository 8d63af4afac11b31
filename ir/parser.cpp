// Recursive-descent parser for IR text; every malformed input ends in ir::Error, never a crash.
#include "ir/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "ir/lexer.h"

namespace bertc::ir {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class Parser {
 public:
  explicit Parser(std::string_view text) : lexer_(text) { tok_ = lexer_.next(); }

  Graph parse_graph() {
    expect_keyword("graph");
    const Token name = expect(Tok::Global);
    Graph graph(name.text);
    parse_body(graph);
    if (tok_.kind != Tok::End) fail(fmt::format("expected end of input after the graph, found {}", describe(tok_)));
    return graph;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw Error(message, tok_.loc); }
  [[noreturn]] static void fail_at(const Token& t, const std::string& message) { throw Error(message, t.loc); }

  static std::string describe(const Token& t) {
    if (t.kind == Tok::End) return "end of input";
    return fmt::format("{} '{}'", tok_name(t.kind), t.text);
  }

  Token take() {
    Token t = std::move(tok_);
    tok_ = lexer_.next();
    return t;
  }
  Token expect(Tok kind) {
    if (tok_.kind != kind) fail(fmt::format("expected {}, found {}", tok_name(kind), describe(tok_)));
    return take();
  }
  bool accept(Tok kind) {
    if (tok_.kind != kind) return false;
    take();
    return true;
  }
  void expect_keyword(std::string_view word) {
    if (tok_.kind != Tok::Ident || tok_.text != word) fail(fmt::format("expected '{}', found {}", word, describe(tok_)));
    take();
  }

  ValueId resolve(const Token& t) {
    auto it = labels_.find(t.text);
    if (it == labels_.end()) fail_at(t, fmt::format("use of undefined value %{}", t.text));
    return it->second;
  }

  // The whole of a Number token as T, or an error at it ("99999999999999999999" is no int64).
  template <typename T>
  T number_value(const Token& t, std::string_view what) {
    T v{};
    const char* end = t.text.data() + t.text.size();
    const char* first = t.text.data() + (t.text[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(first, end, v);
    if (ec != std::errc() || ptr != end) fail_at(t, fmt::format("expected {}, found '{}'", what, t.text));
    return v;
  }

  int64_t parse_int() { return number_value<int64_t>(expect(Tok::Number), "an integer"); }

  double parse_float() {
    bool negative = accept(Tok::Minus);
    if (tok_.kind == Tok::Ident && (tok_.text == "inf" || tok_.text == "nan")) {
      const double v = take().text == "inf" ? std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::quiet_NaN();
      return negative ? -v : v;
    }
    if (negative) fail(fmt::format("expected 'inf' after '-', found {}", describe(tok_)));
    return number_value<double>(expect(Tok::Number), "a number");
  }

  DType parse_dtype() {
    const Token t = expect(Tok::Ident);
    auto d = dtype_from_name(t.text);
    if (!d) fail_at(t, fmt::format("unknown dtype '{}' (expected f64, f32, f16, bf16, i64, i32, u8 or bool)", t.text));
    return *d;
  }

  AttrValue parse_attr_value(AttrKind kind) {
    switch (kind) {
      case AttrKind::Bool: {
        if (tok_.kind != Tok::Ident || (tok_.text != "true" && tok_.text != "false"))
          fail(fmt::format("expected true or false, found {}", describe(tok_)));
        return take().text == "true";
      }
      case AttrKind::Int: return parse_int();
      case AttrKind::Float: return parse_float();
      case AttrKind::String: return expect(Tok::String).text;
      case AttrKind::Ints: {
        std::vector<int64_t> v;
        expect(Tok::LBracket);
        if (!accept(Tok::RBracket)) {
          do v.push_back(parse_int());
          while (accept(Tok::Comma));
          expect(Tok::RBracket);
        }
        return v;
      }
    }
    fail("unknown attribute kind");
  }

  std::vector<AttrValue> parse_attrs(const OpInfo& info, const Token& op_token) {
    std::vector<NamedAttr> given;
    if (accept(Tok::LBrace)) {
      do {
        const Token name = expect(Tok::Ident);
        auto index = info.attr_index(name.text);
        if (!index) fail_at(name, unknown_attr_message(info, name.text));
        expect(Tok::Equal);
        given.push_back({name.text, parse_attr_value(info.attrs[*index].kind)});
      } while (accept(Tok::Comma));
      expect(Tok::RBrace);
    }
    try {
      return complete_attrs(info, given);
    } catch (const Error& e) {
      fail_at(op_token, e.what());
    }
  }

  TensorType parse_type() {
    TensorType t{parse_dtype(), {}};
    expect(Tok::LBracket);
    if (!accept(Tok::RBracket)) {
      do {
        const Token at = tok_;
        const int64_t d = parse_int();
        if (d < 0) fail_at(at, fmt::format("dimension {} is negative", d));
        t.shape.push_back(d);
      } while (accept(Tok::Comma));
      expect(Tok::RBracket);
    }
    return t;
  }

  // "{ ops... return %a, %b }" into `graph`, with value names scoped to it (regions nest).
  void parse_body(Graph& graph) {
    Graph* outer_graph = std::exchange(graph_, &graph);
    auto outer_labels = std::exchange(labels_, {});
    auto outer_defined = std::exchange(defined_at_, {});
    expect(Tok::LBrace);
    while (!(tok_.kind == Tok::Ident && tok_.text == "return")) {
      if (tok_.kind == Tok::End || tok_.kind == Tok::RBrace) fail(fmt::format("expected 'return', found {}", describe(tok_)));
      parse_op();
    }
    take();
    do graph.add_output(resolve(expect(Tok::Value)));
    while (accept(Tok::Comma));
    expect(Tok::RBrace);
    graph_ = outer_graph;
    labels_ = std::move(outer_labels);
    defined_at_ = std::move(outer_defined);
  }

  void parse_op() {
    std::vector<Token> results;  // none for an effect such as update(%w, %1)
    if (tok_.kind != Tok::Ident) {
      do results.push_back(expect(Tok::Value));
      while (accept(Tok::Comma));
      expect(Tok::Equal);
    }
    const Token op_token = expect(Tok::Ident);
    auto kind = op_kind_from_name(op_token.text);
    if (!kind) fail_at(op_token, fmt::format("unknown op '{}'", op_token.text));
    const OpInfo& info = op_info(*kind);

    std::vector<ValueId> operands;
    if (accept(Tok::LParen) && !accept(Tok::RParen)) {
      do operands.push_back(resolve(expect(Tok::Value)));
      while (accept(Tok::Comma));
      expect(Tok::RParen);
    }
    std::vector<AttrValue> attrs = parse_attrs(info, op_token);
    std::vector<TensorType> types;
    if (!results.empty()) {
      expect(Tok::Colon);
      do types.push_back(parse_type());
      while (accept(Tok::Comma));
    }
    if (types.size() != results.size())
      fail_at(op_token, fmt::format("{} results but {} types after ':'", results.size(), types.size()));
    std::string scope;
    if (tok_.kind == Tok::Ident && tok_.text == "loc") {
      take();
      expect(Tok::LParen);
      scope = expect(Tok::String).text;
      expect(Tok::RParen);
    }
    Region region;
    if (tok_.kind == Tok::LBrace) {
      if (*kind != OpKind::Fused) fail(fmt::format("only a fused op has a region, not {}", info.name));
      // Kernels do not nest; the bound keeps hostile input from exhausting the stack.
      if (++region_depth_ > 2) fail("regions nest too deeply (a fused op inside a fused op's region)");
      Graph body("region");
      parse_body(body);
      region = Region(std::move(body));
      --region_depth_;
    }

    const OpId id = graph_->add_op(*kind, std::move(operands), std::move(attrs), std::move(types), op_token.loc);
    graph_->set_scope(id, std::move(scope));
    graph_->set_region(id, std::move(region));
    for (size_t i = 0; i < results.size(); ++i) define(results[i], graph_->op(id).results[i]);
  }

  void define(const Token& t, ValueId id) {
    if (auto it = defined_at_.find(t.text); it != defined_at_.end())
      fail_at(t, fmt::format("redefinition of %{} (first defined at line {})", t.text, it->second.line));
    if (!all_digits(t.text)) {
      if (!is_valid_value_name(t.text)) fail_at(t, fmt::format("'%{}' is not a valid value name", t.text));
      graph_->name_value(id, t.text);
    }
    labels_[t.text] = id;
    defined_at_[t.text] = t.loc;
  }

  Lexer lexer_;
  Token tok_;
  Graph* graph_ = nullptr;
  int region_depth_ = 0;
  std::unordered_map<std::string, ValueId> labels_;
  std::unordered_map<std::string, SourceLoc> defined_at_;
};

}  // namespace

Graph parse(std::string_view text) { return Parser(text).parse_graph(); }

}  // namespace bertc::ir
