#include "tests/unit/engine/commands/command_test_util.hpp"

#include "engine/commands/command_docs.hpp"
#include "engine/commands/registry.hpp"
#include "engine/engine.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

namespace ks = keyshift::engine;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;

namespace {

using keyshift::engine::command_test::show;

struct Fixture {
  ManualClock clock;
  Engine engine{EngineConfig{}, clock};
  Session* s2 = &engine.open_session(nullptr);
  Session* s3 = [this] {
    Session* s = &engine.open_session(nullptr);
    s->resp = 3;
    return s;
  }();

  std::string r(std::initializer_list<std::string_view> args) {
    std::vector<std::string_view> v(args);
    return show(engine.run(*s2, v));
  }
  std::string r3(std::initializer_list<std::string_view> args) {
    std::vector<std::string_view> v(args);
    return show(engine.run(*s3, v));
  }
  void sicily() {
    REQUIRE(r({"GEOADD", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669",
               "Catania"}) == ":2");
  }
};

}  // namespace

TEST_SUITE("engine::geo_family") {
  TEST_CASE("GEOADD stores the geohash as the member's score and GEOPOS decodes it") {
    Fixture f;
    f.sicily();
    CHECK(f.r({"ZSCORE", "Sicily", "Palermo"}) == "3479099956230698");
    CHECK(f.r({"GEOPOS", "Sicily", "Palermo", "Nowhere"}) ==
          "[[13.36138933897018433,38.11555639549629859],nil]");
    CHECK(f.r3({"GEOPOS", "Sicily", "Catania"}) ==
          "[[,15.08726745843887329,,37.50266842333162032]]");
    CHECK(f.r({"GEOADD", "Sicily", "CH", "XX", "13.361389", "38.115556", "Palermo", "1", "1",
               "Catania"}) == ":1");
    CHECK(f.r({"GEOADD", "Sicily", "NX", "XX", "1", "1", "a"}) == "-ERR syntax error");
    CHECK(f.r({"GEOADD", "Sicily", "200", "10", "a"}) ==
          "-ERR invalid longitude,latitude pair 200.000000,10.000000");
  }

  TEST_CASE("GEODIST replies four decimals in the requested unit and GEOHASH 11 characters") {
    Fixture f;
    f.sicily();
    CHECK(f.r({"GEODIST", "Sicily", "Palermo", "Catania"}) == "166274.1516");
    CHECK(f.r({"GEODIST", "Sicily", "Palermo", "Catania", "km"}) == "166.2742");
    CHECK(f.r({"GEODIST", "Sicily", "Palermo", "Catania", "mi"}) == "103.3182");
    CHECK(f.r({"GEODIST", "Sicily", "Palermo", "Palermo"}) == "0.0000");
    CHECK(f.r({"GEODIST", "Sicily", "Palermo", "Catania", "yd"}) ==
          "-ERR unsupported unit provided. please use M, KM, FT, MI");
    CHECK(f.r({"GEOHASH", "Sicily", "Palermo", "Catania", "x"}) == "[sqc8b49rny0,sqdtr74hyu0,nil]");
  }

  TEST_CASE("GEORADIUS and GEOSEARCH find the members in range, nearest first when asked") {
    Fixture f;
    f.sicily();
    CHECK(f.r({"GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "ASC"}) ==
          "[[Catania,56.4413],[Palermo,190.4424]]");
    CHECK(f.r({"GEORADIUS", "Sicily", "15", "37", "100", "km"}) == "[Catania]");
    CHECK(f.r({"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "DESC",
               "COUNT", "1"}) == "[Palermo]");
    CHECK(f.r({"GEOSEARCH", "Sicily", "FROMMEMBER", "Nowhere", "BYRADIUS", "1", "km"}) ==
          "-ERR could not decode requested zset member");
    CHECK(f.r({"geosearch", "Sicily", "BYRADIUS", "1", "km", "ASC", "WITHDIST"}) ==
          "-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch");
    CHECK(f.r({"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "ANY"}) ==
          "-ERR the ANY argument requires COUNT argument");
  }

  TEST_CASE("GEORADIUS STORE and GEOSEARCHSTORE write sorted sets of hashes or distances") {
    Fixture f;
    f.sicily();
    CHECK(f.r({"GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst"}) == ":2");
    CHECK(f.r({"ZSCORE", "dst", "Palermo"}) == "3479099956230698");
    CHECK(f.r({"GEOSEARCHSTORE", "d2", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
               "STOREDIST"}) == ":2");
    CHECK(f.r({"ZRANGE", "d2", "0", "-1"}) == "[Catania,Palermo]");
    CHECK(f.r({"GEOSEARCHSTORE", "d2", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"}) ==
          ":0");
    CHECK(f.r({"EXISTS", "d2"}) == ":0");
    CHECK(f.r({"GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "STORE", "x"}) ==
          "-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD "
          "options");
    CHECK(f.r({"COMMAND", "GETKEYS", "GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE",
               "dst"}) == "[Sicily,dst]");
    CHECK(f.r({"COMMAND", "GETKEYS", "GEOSEARCHSTORE", "dst", "src", "FROMLONLAT", "0", "0",
               "BYRADIUS", "1", "km"}) == "[dst,src]");
  }

  TEST_CASE("every geo command's row matches Valkey 8's commands.def") {
    Fixture f;
    for (std::string_view name :
         {"geoadd", "geodist", "geohash", "geopos", "georadius", "georadius_ro",
          "georadiusbymember", "georadiusbymember_ro", "geosearch", "geosearchstore"}) {
      CAPTURE(name);
      const ks::Command* c = f.engine.registry().find(name);
      REQUIRE(c != nullptr);
      const ks::CommandDoc* doc = ks::find_command_doc(name);
      REQUIRE(doc != nullptr);
      CHECK(c->spec.arity == doc->arity);
      CHECK(c->spec.first_key == doc->first_key);
      CHECK(c->spec.last_key == doc->last_key);
      CHECK(c->spec.step == doc->step);
      CHECK(((c->spec.flags & ks::k_cmd_write) != 0) == ((doc->flags & ks::k_vf_write) != 0));
      CHECK(((c->spec.flags & ks::k_cmd_readonly) != 0) == ((doc->flags & ks::k_vf_readonly) != 0));
      CHECK(((c->spec.flags & ks::k_cmd_denyoom) != 0) == ((doc->flags & ks::k_vf_denyoom) != 0));
      CHECK(((c->spec.flags & ks::k_cmd_movablekeys) != 0) ==
            ((doc->flags & ks::k_vf_movablekeys) != 0));
      std::string cats;
      for (size_t i = 0; i < std::size(ks::k_acl_category_names); ++i) {
        if (((doc->acl >> i) & 1u) != 0) {
          cats += (cats.empty() ? "@" : " @") + std::string(ks::k_acl_category_names[i]);
        }
      }
      CHECK(c->spec.acl_categories == cats);
    }
  }
}
