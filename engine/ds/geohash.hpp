#pragma once

// Geohash encoding and distances as Valkey 8's geo commands use them: a point is the
// interleave of its latitude and longitude cells (latitude on even bits) at 26 steps per
// axis, stored as a sorted-set score of 52 bits; latitudes are limited to the Web Mercator
// range, so a score decodes to the centre of its cell.

#include <array>
#include <cstdint>

namespace keyshift::engine::geo {

/// Coordinate limits (EPSG:3785): poles cannot be encoded.
inline constexpr double k_lon_min = -180;
inline constexpr double k_lon_max = 180;
inline constexpr double k_lat_min = -85.05112878;
inline constexpr double k_lat_max = 85.05112878;
/// Steps per axis of a stored score (26 + 26 = 52 bits).
inline constexpr uint8_t k_step_max = 26;
/// The earth radius Valkey's haversine uses (WGS-84 quadratic mean), in metres.
inline constexpr double k_earth_radius_m = 6372797.560856;

/// A cell: `step` bits per axis, interleaved in the low 2*step bits of `bits`.
struct HashBits {
  uint64_t bits = 0;
  uint8_t step = 0;
  bool is_zero() const { return bits == 0 && step == 0; }
  bool operator==(const HashBits&) const = default;
};

/// An interval of one axis.
struct Range {
  double min = 0;
  double max = 0;
};

/// The area a cell covers.
struct Area {
  Range lon;
  Range lat;
};

/// Encodes (lon, lat) within the given axis ranges at `step` (1..32); false when the point
/// lies outside the limits or the ranges.
bool encode(const Range& lon_range, const Range& lat_range, double lon, double lat, uint8_t step,
            HashBits& out);
/// Encodes with the standard geo ranges (longitude +-180, latitude +-85.05112878).
bool encode(double lon, double lat, uint8_t step, HashBits& out);
/// The area of `hash` within the given ranges; false for a zero hash.
bool decode(const Range& lon_range, const Range& lat_range, const HashBits& hash, Area& out);
/// The area of `hash` with the standard ranges.
bool decode(const HashBits& hash, Area& out);
/// The centre of a stored score's cell as {lon, lat}, clamped to the limits; false when
/// the score cannot be decoded.
bool decode_score(double score, std::array<double, 2>& lon_lat);
/// The cell bits of a stored score (any double, as Valkey's integer cast reads it).
uint64_t score_bits(double score);
/// The 52-bit score of a cell (its bits moved to the top of 52).
uint64_t align_52(const HashBits& hash);

/// The eight cells around `hash` at the same step.
struct Neighbors {
  HashBits north, east, west, south, north_east, south_east, north_west, south_west;
};
Neighbors neighbors(const HashBits& hash);

/// Great-circle distance in metres between two points given in degrees (Valkey's haversine,
/// including its shortcut for equal longitudes).
double distance(double lon1, double lat1, double lon2, double lat2);
/// Distance along a meridian between two latitudes, in metres.
double lat_distance(double lat1, double lat2);

/// A search area: a circle of `radius` or a `width` x `height` box, in the query's unit,
/// around (lon, lat); `to_meters` converts the unit.
struct Shape {
  enum class Kind : uint8_t { circle, box };
  Kind kind = Kind::circle;
  double lon = 0;
  double lat = 0;
  double to_meters = 1;
  double radius = 0;
  double width = 0;
  double height = 0;
};

/// The covering cell of a search, its eight neighbours (those that cannot hold a match are
/// zero) and the cell's area.
struct SearchAreas {
  HashBits hash;
  Neighbors around;
  Area area;
};

/// Cell precision for a search of `range_m` metres at latitude `lat`.
uint8_t steps_for_radius(double range_m, double lat);
/// The {min lon, min lat, max lon, max lat} box around a shape.
std::array<double, 4> bounding_box(const Shape& shape);
/// The cells to scan for `shape`, as Valkey picks them.
SearchAreas search_areas(const Shape& shape);
/// True when the point (lon, lat) is inside `shape`; `dist` receives its distance from the
/// shape's centre in metres.
bool within(const Shape& shape, double lon, double lat, double& dist);

}  // namespace keyshift::engine::geo
