# Turns targets.toml into a C++ source so the table ships inside the binary.
file(READ ${IN} content)
file(WRITE ${OUT}.tmp
     "// Generated from migrate/rewrite/targets.toml; do not edit.\n"
     "#include \"migrate/rewrite/target_table.hpp\"\n\n"
     "namespace keyshift::migrate {\n"
     "std::string_view builtin_target_toml() {\n"
     "  static constexpr std::string_view k_text = R\"keyshift_toml(${content})keyshift_toml\";\n"
     "  return k_text;\n}\n}  // namespace keyshift::migrate\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
