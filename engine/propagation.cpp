#include "engine/propagation.hpp"

namespace keyshift::engine {
namespace {

void append_bulk(std::string_view arg, std::string& out) {
  out += '$';
  out += std::to_string(arg.size());
  out += "\r\n";
  out += arg;
  out += "\r\n";
}

void append_fixed(std::initializer_list<std::string_view> argv, std::string& out) {
  out += '*';
  out += std::to_string(argv.size());
  out += "\r\n";
  for (std::string_view a : argv) {
    append_bulk(a, out);
  }
}

}  // namespace

void encode_command(std::span<const std::string> argv, std::string& out) {
  out += '*';
  out += std::to_string(argv.size());
  out += "\r\n";
  for (const std::string& a : argv) {
    append_bulk(a, out);
  }
}

void encode_propagated(std::span<const PropagatedCommand> unit, int& selected_db,
                       std::string& out) {
  bool transaction = unit.size() > 1;
  bool opened = false;
  for (const PropagatedCommand& c : unit) {
    if (c.db != selected_db) {
      // Valkey selects before MULTI when the first command needs it, inside otherwise.
      std::string db = std::to_string(c.db);
      append_fixed({"SELECT", db}, out);
      selected_db = c.db;
    }
    if (transaction && !opened) {
      append_fixed({"MULTI"}, out);
      opened = true;
    }
    encode_command(c.argv, out);
  }
  if (opened) {
    append_fixed({"EXEC"}, out);
  }
}

}  // namespace keyshift::engine
