#include "engine/ds/geohash.hpp"

#include <cmath>
#include <numbers>

namespace keyshift::engine::geo {
namespace {

constexpr double k_deg_to_rad = std::numbers::pi / 180.0;
// Half the Web Mercator world width: a search wider than this needs no finer cell.
constexpr double k_mercator_max = 20037726.37;

constexpr Range k_lon_range{k_lon_min, k_lon_max};
constexpr Range k_lat_range{k_lat_min, k_lat_max};

double to_rad(double deg) {
  return deg * k_deg_to_rad;
}
double to_deg(double rad) {
  return rad / k_deg_to_rad;
}

/// The 32 bits of `v` moved to the even bit positions of a 64-bit word.
uint64_t spread(uint32_t v) {
  // Each step doubles the gaps between groups of bits (16, 8, 4, 2, 1), with no loop per bit:
  // the decode of every candidate member of a GEOSEARCH runs this.
  uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x << 2)) & 0x3333333333333333ULL;
  x = (x | (x << 1)) & 0x5555555555555555ULL;
  return x;
}

/// The even bits of `v` packed into 32 bits.
uint32_t gather(uint64_t v) {
  uint64_t x = v & 0x5555555555555555ULL;
  x = (x | (x >> 1)) & 0x3333333333333333ULL;
  x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x >> 4)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x >> 16)) & 0x00000000FFFFFFFFULL;
  return static_cast<uint32_t>(x);
}

bool range_is_zero(const Range& r) {
  return r.min == 0 && r.max == 0;
}

// Moves a cell one column (the longitude bits, odd positions) or one row (the latitude
// bits, even positions) by carrying through the other axis's bits.
void move_axis(HashBits& h, int dir, bool lon_axis) {
  if (dir == 0) {
    return;
  }
  const uint64_t odd = 0xaaaaaaaaaaaaaaaaULL;
  const uint64_t even = 0x5555555555555555ULL;
  const unsigned shift = 64 - h.step * 2u;
  uint64_t mine = h.bits & (lon_axis ? odd : even);
  uint64_t other = h.bits & (lon_axis ? even : odd);
  // Filling the other axis's positions with ones makes +1 carry straight across them.
  uint64_t fill = (lon_axis ? even : odd) >> shift;
  if (dir > 0) {
    mine += fill + 1;
  } else {
    mine |= fill;
    mine -= fill + 1;
  }
  mine &= (lon_axis ? odd : even) >> shift;
  h.bits = mine | other;
}

HashBits moved(HashBits h, int dlon, int dlat) {
  move_axis(h, dlon, true);
  move_axis(h, dlat, false);
  return h;
}

}  // namespace

bool encode(const Range& lon_range, const Range& lat_range, double lon, double lat, uint8_t step,
            HashBits& out) {
  if (step == 0 || step > 32 || range_is_zero(lon_range) || range_is_zero(lat_range)) {
    return false;
  }
  if (lon > k_lon_max || lon < k_lon_min || lat > k_lat_max || lat < k_lat_min) {
    return false;
  }
  out.bits = 0;
  out.step = step;
  if (lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max) {
    return false;
  }
  double lat_cell = (lat - lat_range.min) / (lat_range.max - lat_range.min);
  double lon_cell = (lon - lon_range.min) / (lon_range.max - lon_range.min);
  lat_cell *= static_cast<double>(1ULL << step);
  lon_cell *= static_cast<double>(1ULL << step);
  out.bits =
      spread(static_cast<uint32_t>(lat_cell)) | (spread(static_cast<uint32_t>(lon_cell)) << 1);
  return true;
}

bool encode(double lon, double lat, uint8_t step, HashBits& out) {
  return encode(k_lon_range, k_lat_range, lon, lat, step, out);
}

bool decode(const Range& lon_range, const Range& lat_range, const HashBits& hash, Area& out) {
  if (hash.is_zero() || range_is_zero(lon_range) || range_is_zero(lat_range)) {
    return false;
  }
  uint32_t lat_cell = gather(hash.bits);
  uint32_t lon_cell = gather(hash.bits >> 1);
  const double cells = static_cast<double>(1ULL << hash.step);
  const double lat_span = lat_range.max - lat_range.min;
  const double lon_span = lon_range.max - lon_range.min;
  out.lat.min = lat_range.min + (lat_cell * 1.0 / cells) * lat_span;
  out.lat.max = lat_range.min + ((lat_cell + 1.0) * 1.0 / cells) * lat_span;
  out.lon.min = lon_range.min + (lon_cell * 1.0 / cells) * lon_span;
  out.lon.max = lon_range.min + ((lon_cell + 1.0) * 1.0 / cells) * lon_span;
  return true;
}

bool decode(const HashBits& hash, Area& out) {
  return decode(k_lon_range, k_lat_range, hash, out);
}

/// A score's bits as Valkey's (uint64_t) cast yields them on x86-64, without the undefined
/// behaviour of converting an out-of-range double in C++: negative scores wrap, scores of
/// 2^64 and above become 0, those at or below -2^63 the "integer indefinite" value.
uint64_t score_bits(double score) {
  constexpr double k_two_63 = 9223372036854775808.0;
  if (score >= 0) {
    return score < 2 * k_two_63 ? static_cast<uint64_t>(score) : 0;
  }
  if (score > -k_two_63) {
    return static_cast<uint64_t>(static_cast<int64_t>(score));
  }
  return 1ULL << 63;
}

bool decode_score(double score, std::array<double, 2>& lon_lat) {
  HashBits hash{score_bits(score), k_step_max};
  Area area;
  if (!decode(hash, area)) {
    return false;
  }
  double lon = (area.lon.min + area.lon.max) / 2;
  double lat = (area.lat.min + area.lat.max) / 2;
  lon_lat[0] = std::fmin(std::fmax(lon, k_lon_min), k_lon_max);
  lon_lat[1] = std::fmin(std::fmax(lat, k_lat_min), k_lat_max);
  return true;
}

uint64_t align_52(const HashBits& hash) {
  return hash.bits << (52 - hash.step * 2);
}

Neighbors neighbors(const HashBits& hash) {
  Neighbors n;
  n.east = moved(hash, 1, 0);
  n.west = moved(hash, -1, 0);
  n.south = moved(hash, 0, -1);
  n.north = moved(hash, 0, 1);
  n.north_west = moved(hash, -1, 1);
  n.north_east = moved(hash, 1, 1);
  n.south_east = moved(hash, 1, -1);
  n.south_west = moved(hash, -1, -1);
  return n;
}

double lat_distance(double lat1, double lat2) {
  return k_earth_radius_m * std::fabs(to_rad(lat2) - to_rad(lat1));
}

double distance(double lon1, double lat1, double lon2, double lat2) {
  double v = std::sin((to_rad(lon2) - to_rad(lon1)) / 2);
  if (v == 0.0) {
    return lat_distance(lat1, lat2);
  }
  double lat1r = to_rad(lat1);
  double lat2r = to_rad(lat2);
  double u = std::sin((lat2r - lat1r) / 2);
  double a = u * u + std::cos(lat1r) * std::cos(lat2r) * v * v;
  return 2.0 * k_earth_radius_m * std::asin(std::sqrt(a));
}

uint8_t steps_for_radius(double range_m, double lat) {
  if (range_m == 0) {
    return 26;
  }
  int step = 1;
  while (range_m < k_mercator_max) {
    range_m *= 2;
    ++step;
  }
  step -= 2;  // a margin so the radius fits the 3x3 cells in most cases
  // Cells narrow towards the poles.
  if (lat > 66 || lat < -66) {
    --step;
    if (lat > 80 || lat < -80) {
      --step;
    }
  }
  if (step < 1) {
    step = 1;
  }
  if (step > 26) {
    step = 26;
  }
  return static_cast<uint8_t>(step);
}

std::array<double, 4> bounding_box(const Shape& shape) {
  const bool circle = shape.kind == Shape::Kind::circle;
  double half_h = shape.to_meters * (circle ? shape.radius : shape.height / 2);
  double half_w = shape.to_meters * (circle ? shape.radius : shape.width / 2);
  const double dlat = to_deg(half_h / k_earth_radius_m);
  const double dlon_top = to_deg(half_w / k_earth_radius_m / std::cos(to_rad(shape.lat + dlat)));
  const double dlon_bottom = to_deg(half_w / k_earth_radius_m / std::cos(to_rad(shape.lat - dlat)));
  // The widest edge is the one nearer the equator.
  const double dlon = shape.lat < 0 ? dlon_bottom : dlon_top;
  return {shape.lon - dlon, shape.lat - dlat, shape.lon + dlon, shape.lat + dlat};
}

SearchAreas search_areas(const Shape& shape) {
  std::array<double, 4> box = bounding_box(shape);
  const double min_lon = box[0];
  const double min_lat = box[1];
  const double max_lon = box[2];
  const double max_lat = box[3];
  double radius_m = shape.kind == Shape::Kind::circle
                        ? shape.radius
                        : std::sqrt((shape.width / 2) * (shape.width / 2) +
                                    (shape.height / 2) * (shape.height / 2));
  radius_m *= shape.to_meters;
  uint8_t steps = steps_for_radius(radius_m, shape.lat);

  SearchAreas s;
  encode(shape.lon, shape.lat, steps, s.hash);
  s.around = neighbors(s.hash);
  decode(s.hash, s.area);

  // Near a cell's edge the estimate can be one step too fine for a neighbour to reach the
  // box's edge: then one coarser step is used.
  Area north;
  Area south;
  Area east;
  Area west;
  decode(s.around.north, north);
  decode(s.around.south, south);
  decode(s.around.east, east);
  decode(s.around.west, west);
  bool coarser = north.lat.max < max_lat || south.lat.min > min_lat || east.lon.max < max_lon ||
                 west.lon.min > min_lon;
  if (steps > 1 && coarser) {
    --steps;
    encode(shape.lon, shape.lat, steps, s.hash);
    s.around = neighbors(s.hash);
    decode(s.hash, s.area);
  }

  // Neighbours on a side the box does not reach cannot hold a match.
  if (steps >= 2) {
    if (s.area.lat.min < min_lat) {
      s.around.south = s.around.south_west = s.around.south_east = HashBits{};
    }
    if (s.area.lat.max > max_lat) {
      s.around.north = s.around.north_east = s.around.north_west = HashBits{};
    }
    if (s.area.lon.min < min_lon) {
      s.around.west = s.around.south_west = s.around.north_west = HashBits{};
    }
    if (s.area.lon.max > max_lon) {
      s.around.east = s.around.south_east = s.around.north_east = HashBits{};
    }
  }
  return s;
}

bool within(const Shape& shape, double lon, double lat, double& dist) {
  if (shape.kind == Shape::Kind::circle) {
    dist = distance(shape.lon, shape.lat, lon, lat);
    return dist <= shape.radius * shape.to_meters;
  }
  const double width_m = shape.width * shape.to_meters;
  const double height_m = shape.height * shape.to_meters;
  // The cheaper latitude test first.
  if (lat_distance(lat, shape.lat) > height_m / 2) {
    return false;
  }
  if (distance(lon, lat, shape.lon, lat) > width_m / 2) {
    return false;
  }
  dist = distance(shape.lon, shape.lat, lon, lat);
  return true;
}

}  // namespace keyshift::engine::geo
