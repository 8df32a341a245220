// A station's PLC settings by name (pipelines/lineio/plc_settings.h), the one
// parser of torchinfer-qa-line's flags and station file and the server's
// per-camera "plc": values, the JSON object, what finishing requires.
#include <gtest/gtest.h>

#include "lineio/plc_settings.h"

namespace torchinfer {
namespace {

nlohmann::json station() {
  return {{"plc", "modbus://10.0.0.5:1502?unit=7"},
          {"plc-encoder", 3},
          {"plc-encoder-bits", 32},
          {"belt-units-per-px", 0.07},
          {"belt-counts-per-unit", 2},
          {"ejector-distance", 75},
          {"ejector-lead-ms", 20},
          {"plc-pulse-ms", 10},
          {"reject-late", false},
          {"plc-pass-coil", -1},
          {"plc-recheck-coil", 4}};
}

TEST(PlcSettings, StationObjectSetsEveryValue) {
  PlcOptions o;
  const PlcSettingProblem p = apply_plc_json(station(), o);
  ASSERT_EQ(p.why, "");
  ASSERT_EQ(finish_plc_options(o).why, "");
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.modbus.host, "10.0.0.5");
  EXPECT_EQ(o.modbus.port, 1502);
  EXPECT_EQ(o.modbus.map.unit, 7);
  EXPECT_EQ(o.modbus.map.encoder_register, 3);
  EXPECT_EQ(o.modbus.map.encoder_bits, 32);
  EXPECT_DOUBLE_EQ(o.calibration.units_per_px, 0.07);
  EXPECT_DOUBLE_EQ(o.calibration.counts_per_unit, 2);
  EXPECT_DOUBLE_EQ(o.ejector.distance_units, 75);
  EXPECT_EQ(o.ejector.lead_ns, 20'000'000);
  EXPECT_EQ(o.modbus.map.pulse_ns, 10'000'000);
  EXPECT_FALSE(o.ejector.reject_late);
  // What finishing derives: no pass output, late parts to coil 4, no queue.
  EXPECT_FALSE(o.ejector.pass_pulses);
  EXPECT_TRUE(o.ejector.has_recheck);
  EXPECT_EQ(o.modbus.map.queue_base, -1);
}

TEST(PlcSettings, NumbersAreReadTheSameInAnyLocaleAndWhole) {
  PlcOptions o;
  EXPECT_EQ(set_plc_setting(o, "belt-units-per-px", "0.25"), "");
  EXPECT_DOUBLE_EQ(o.calibration.units_per_px, 0.25);
  EXPECT_EQ(set_plc_setting(o, "belt-units-per-px", "0,25"),
            "'0,25': give a number from 1e-06 to 1e+06");
  EXPECT_EQ(set_plc_setting(o, "plc-encoder", "2.5"), "'2.5': give a whole number");
  EXPECT_EQ(set_plc_setting(o, "plc-pulse-ms", "0"), "'0': give a number from 1 to 10000");
  EXPECT_EQ(set_plc_setting(o, "plc-mode", "shift"), "'shift': give one of fire, queue");
  EXPECT_EQ(set_plc_setting(o, "ejector-distanse", "3"), "unknown setting 'ejector-distanse'");
}

TEST(PlcSettings, BadObjectsNameTheSetting) {
  PlcOptions o;
  EXPECT_EQ(apply_plc_json(nlohmann::json::array(), o).why,
            "give a JSON object of settings (docs/line-io.md)");
  PlcSettingProblem p = apply_plc_json({{"ejector-distance", {3}}}, o);
  EXPECT_EQ(p.setting, "ejector-distance");
  EXPECT_EQ(p.why, "must be a number, string or boolean");
  p = apply_plc_json({{"ejector-distance", nullptr}}, o);
  EXPECT_EQ(p.why, "must be a number, string or boolean");
  p = apply_plc_json({{"plc", "tcp://plc:502"}}, o);
  EXPECT_EQ(p.setting, "plc");
  EXPECT_NE(p.why.find("modbus://"), std::string::npos) << p.why;
  p = apply_plc_json({{"nope", 1}}, o);
  EXPECT_EQ(p.setting, "nope");
  EXPECT_EQ(p.why, "unknown setting");
}

TEST(PlcSettings, FinishingNamesWhatIsMissing) {
  PlcOptions o;
  EXPECT_EQ(finish_plc_options(o).setting, "plc");
  ASSERT_EQ(set_plc_setting(o, "plc", "modbus://127.0.0.1:502"), "");
  EXPECT_EQ(finish_plc_options(o).setting, "ejector-distance");
  ASSERT_EQ(set_plc_setting(o, "ejector-distance", "5"), "");
  EXPECT_EQ(finish_plc_options(o).setting, "belt-speed");
  ASSERT_EQ(set_plc_setting(o, "belt-speed", "100"), "");
  ASSERT_EQ(set_plc_setting(o, "belt-counts-per-unit", "4"), "");
  EXPECT_EQ(finish_plc_options(o).why, "");
  EXPECT_DOUBLE_EQ(o.modbus.belt_counts_per_s, 400);
  ASSERT_EQ(set_plc_setting(o, "plc-mode", "queue"), "");
  ASSERT_EQ(set_plc_setting(o, "plc-queue", "65530"), "");
  const PlcSettingProblem p = finish_plc_options(o);
  EXPECT_EQ(p.setting, "plc");
  EXPECT_EQ(p.why.rfind("register map: ", 0), 0u) << p.why;
}

TEST(PlcSettings, AlongTheBeltFollowsTheDirection) {
  PlcOptions o;
  EXPECT_EQ(along_belt(o, 10, 20), 10);
  ASSERT_EQ(set_plc_setting(o, "belt-direction", "-y"), "");
  EXPECT_EQ(along_belt(o, 10, 20), -20);
}

}  // namespace
}  // namespace torchinfer
