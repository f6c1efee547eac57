#include "engine/commands/context.hpp"

#include "engine/util/strconv.hpp"

#include <cctype>

namespace keyshift::engine {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

void CmdContext::reply_arity_error() {
  std::string msg = "ERR wrong number of arguments for '";
  msg += m_command.full_name;
  msg += "' command";
  m_reply.error(msg);
}

std::string_view ArgParser::next() {
  if (!has_next()) {
    fail(errors::k_syntax);
    return {};
  }
  return m_args[m_pos++];
}

bool ArgParser::accept(std::string_view keyword) {
  if (has_next() && iequals(m_args[m_pos], keyword)) {
    ++m_pos;
    return true;
  }
  return false;
}

int64_t ArgParser::next_int() {
  std::string_view s = next();
  int64_t v = 0;
  if (ok() && !parse_i64(s, v)) {
    fail(errors::k_not_integer);
  }
  return v;
}

double ArgParser::next_double() {
  std::string_view s = next();
  double v = 0;
  if (ok() && !parse_double(s, v)) {
    fail(errors::k_not_float);
  }
  return v;
}

void ArgParser::fail(std::string_view error) {
  if (m_error.empty()) {
    m_error.assign(error);
  }
}

void reply_help(CmdContext& ctx, std::initializer_list<std::string_view> lines) {
  std::string heading(ctx.arg(0));
  for (char& c : heading) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  ReplyBuilder& r = ctx.reply();
  r.array(lines.size() + 3);
  r.simple(heading + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  for (std::string_view line : lines) {
    r.simple(line);
  }
  r.simple("HELP");
  r.simple("    Print this help.");
}

}  // namespace keyshift::engine
