#include "engine/ds/geohash.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <string>

namespace geo = keyshift::engine::geo;

namespace {

uint64_t score_of(double lon, double lat) {
  geo::HashBits h;
  REQUIRE(geo::encode(lon, lat, geo::k_step_max, h));
  return geo::align_52(h);
}

std::string fixed4(double d) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4f", d);
  return buf;
}

}  // namespace

TEST_SUITE("engine::geohash") {
  TEST_CASE("a point encodes to the 52-bit score Valkey stores for it") {
    // The scores ZSCORE shows after GEOADD Sicily 13.361389 38.115556 Palermo
    // 15.087269 37.502669 Catania on Valkey and Redis.
    CHECK(score_of(13.361389, 38.115556) == 3479099956230698ULL);
    CHECK(score_of(15.087269, 37.502669) == 3479447370796909ULL);
    CHECK(score_of(-180, -85.05112878) == 0);
  }

  TEST_CASE("points outside the Web Mercator limits cannot be encoded") {
    geo::HashBits h;
    CHECK_FALSE(geo::encode(0, 85.06, geo::k_step_max, h));
    CHECK_FALSE(geo::encode(180.0001, 0, geo::k_step_max, h));
    CHECK_FALSE(geo::encode(0, 0, 0, h));
    CHECK(geo::encode(180, 85.05112878, geo::k_step_max, h));
  }

  TEST_CASE("a score decodes to the centre of its cell, close to the point added") {
    std::array<double, 2> pos{};
    REQUIRE(geo::decode_score(3479099956230698.0, pos));
    CHECK(pos[0] == doctest::Approx(13.36138933897018433).epsilon(1e-15));
    CHECK(pos[1] == doctest::Approx(38.11555639549629859).epsilon(1e-15));
    for (double lon : {-179.9, -45.5, 0.0, 12.25, 179.99}) {
      for (double lat : {-85.0, -10.125, 0.0, 48.8566, 85.0}) {
        REQUIRE(geo::decode_score(static_cast<double>(score_of(lon, lat)), pos));
        CHECK(std::fabs(pos[0] - lon) < 1e-5);
        CHECK(std::fabs(pos[1] - lat) < 1e-5);
      }
    }
  }

  TEST_CASE("any score reads as the bits Valkey's integer cast gives on x86-64") {
    CHECK(geo::score_bits(3479099956230698.0) == 3479099956230698ULL);
    CHECK(geo::score_bits(0.5) == 0);
    CHECK(geo::score_bits(-1) == ~0ULL);
    CHECK(geo::score_bits(1e300) == 0);
    CHECK(geo::score_bits(-1e300) == 1ULL << 63);
  }

  TEST_CASE("a zero hash does not decode") {
    geo::Area a;
    CHECK_FALSE(geo::decode(geo::HashBits{}, a));
  }

  TEST_CASE("neighbours are the adjacent cells at the same step") {
    geo::HashBits h;
    REQUIRE(geo::encode(2.35, 48.85, 10, h));
    geo::Area centre;
    REQUIRE(geo::decode(h, centre));
    geo::Neighbors n = geo::neighbors(h);
    geo::Area a;
    REQUIRE(geo::decode(n.north, a));
    CHECK(a.lat.min == doctest::Approx(centre.lat.max));
    CHECK(a.lon.min == doctest::Approx(centre.lon.min));
    REQUIRE(geo::decode(n.south_west, a));
    CHECK(a.lat.max == doctest::Approx(centre.lat.min));
    CHECK(a.lon.max == doctest::Approx(centre.lon.min));
    REQUIRE(geo::decode(n.east, a));
    CHECK(a.lon.min == doctest::Approx(centre.lon.max));
    CHECK(n.east.step == 10);
  }

  TEST_CASE("distances are Valkey's haversine with its earth radius") {
    std::array<double, 2> palermo{};
    std::array<double, 2> catania{};
    REQUIRE(geo::decode_score(3479099956230698.0, palermo));
    REQUIRE(geo::decode_score(3479447370796909.0, catania));
    // GEODIST Sicily Palermo Catania replies 166274.1516 (166.2742 km).
    double d = geo::distance(palermo[0], palermo[1], catania[0], catania[1]);
    CHECK(fixed4(d) == "166274.1516");
    CHECK(fixed4(d / 1000) == "166.2742");
    CHECK(geo::distance(10, 10, 10, 10) == 0);
    // Equal longitudes take the meridian shortcut: one degree of latitude.
    CHECK(geo::distance(5, 0, 5, 1) ==
          doctest::Approx(geo::k_earth_radius_m * std::numbers::pi / 180));
    CHECK(geo::lat_distance(1, 0) == doctest::Approx(111226.29));
  }

  TEST_CASE("search precision follows the radius and is coarser near the poles") {
    CHECK(geo::steps_for_radius(0, 0) == 26);
    CHECK(geo::steps_for_radius(200000, 0) == 6);
    CHECK(geo::steps_for_radius(200000, 70) == 5);
    CHECK(geo::steps_for_radius(200000, -81) == 4);
    CHECK(geo::steps_for_radius(1e9, 0) == 1);
    CHECK(geo::steps_for_radius(0.01, 0) == 26);
  }

  TEST_CASE("a circle search keeps points within the radius and reports their distance") {
    geo::Shape s;
    s.lon = 15;
    s.lat = 37;
    s.radius = 200;
    s.to_meters = 1000;
    std::array<double, 2> catania{};
    REQUIRE(geo::decode_score(3479447370796909.0, catania));
    double dist = 0;
    CHECK(geo::within(s, catania[0], catania[1], dist));
    CHECK(fixed4(dist / 1000) == "56.4413");
    CHECK_FALSE(geo::within(s, 20, 37, dist));
    geo::SearchAreas areas = geo::search_areas(s);
    CHECK(areas.hash.step >= 1);
    CHECK(areas.area.lon.min <= 15);
    CHECK(areas.area.lon.max >= 15);
  }

  TEST_CASE("a box search compares each axis with half the box") {
    geo::Shape s;
    s.kind = geo::Shape::Kind::box;
    s.lon = 0;
    s.lat = 0;
    s.width = 200;
    s.height = 100;
    s.to_meters = 1000;
    double dist = 0;
    CHECK(geo::within(s, 0.8, 0.4, dist));
    CHECK_FALSE(geo::within(s, 0.8, 0.5, dist));
    CHECK_FALSE(geo::within(s, 0.95, 0.1, dist));
    std::array<double, 4> box = geo::bounding_box(s);
    CHECK(box[0] < -0.89);
    CHECK(box[2] > 0.89);
    CHECK(box[1] == doctest::Approx(-box[3]));
  }
}
