#pragma once

#include <string>

namespace keyshift::engine {

/// `value` as Valkey's bundled fpconv_dtoa prints it (Grisu2): what Valkey 8 digests
/// sorted-set scores with and what its d2string prints for non-integral doubles. "-0" for
/// -0.0, "inf"/"-inf"/"nan" spelled out.
std::string format_grisu2(double value);

}  // namespace keyshift::engine
