#pragma once

#include <CLI/CLI.hpp>

namespace keyshift::cli {

// One function per subcommand file: it declares its flags on `app` and binds the action.
void add_serve(CLI::App& app);
void add_rdb(CLI::App& app);
void add_rewrite(CLI::App& app);
void add_bench(CLI::App& app);
void add_import(CLI::App& app);
void add_verify(CLI::App& app);
void add_kb(CLI::App& app);
void add_capture(CLI::App& app);
void add_replay(CLI::App& app);
void add_migrate(CLI::App& app);

}  // namespace keyshift::cli
