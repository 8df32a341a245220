// Every element's property table checked the same way (property-table.h):
// entries by id with the flags of their access, defaults read back through
// the getters, round trips through the setters, the one rule for changes
// while running, unknown and read-only ids. Then torchinfer's own cases:
// Status figures asked for only when read, validated strings, overrides.
// Built from the plugin sources (the runtime library exports nothing).
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "property_checks.h"
#include "torchinfer-properties.h"
#include "torchmetaconvert-properties.h"
#include "torchnms-properties.h"
#include "torchoverlay-properties.h"
#include "torchpublish-properties.h"
#include "torchtrack-properties.h"
#include "torchcodes-properties.h"

using namespace torchinfer;
using namespace torchinfer::gst;
using torchinfer::test::contents;
using torchinfer::test::non_default;
using torchinfer::test::WarningCatcher;

namespace {

// torchinfer's Status with fixed figures, counting the questions asked.
class FixedStatus final : public gst::Status {
 public:
  Stats figures;
  std::uint64_t frames = 0;
  double last_ms = 0;
  StatsSnapshot snap;
  mutable int asked = 0;

  Stats load() const override { return ++asked, figures; }
  std::uint64_t frames_inferred() const override { return ++asked, frames; }
  double last_inference_ms() const override { return ++asked, last_ms; }
  StatsSnapshot stream() const override { return ++asked, snap; }
};

// One element's table, its Status at start and a valid non-default value for
// each of its string properties.
struct TorchInfer {
  using Settings = gst::Settings;
  static const PropertyTable<gst::Settings, gst::Status>& table() { return gst::properties(); }
  static const gst::Status& status() {
    static const FixedStatus s;
    return s;
  }
  static std::map<std::string, std::string> strings() {
    return {{"model", "/models/net.pt"},
            {"model-config", "/models/net.json"},
            {"labels", "/models/labels.txt"},
            {"mean", "0.5,0.4,0.3"},
            {"std", "0.2,0.3,0.4"},
            {"offset", "-1,-1,-1"},
            {"crop", "2,4,64,48"},
            {"model-instance-id", "cam-7"},
            {"cores", "0-1"},
            {"object-class", "bolt,nut"}};
  }
};

struct Nms {
  using Settings = nms::Settings;
  static const PropertyTable<nms::Settings, nms::Status>& table() { return nms::properties(); }
  static const nms::Status& status() {
    static const nms::Status s;
    return s;
  }
  static std::map<std::string, std::string> strings() {
    return {{"labels", "/models/labels.txt"}, {"model-config", "/models/det.json"},
            {"model-instance-id", "qa-seg"}};
  }
};

struct Track {
  using Settings = track::Settings;
  static const PropertyTable<track::Settings, track::Status>& table() {
    return track::properties();
  }
  static const track::Status& status() {
    static const track::Status s;
    return s;
  }
  static std::map<std::string, std::string> strings() { return {}; }
};

struct Overlay {
  using Settings = overlay::Settings;
  static const PropertyTable<overlay::Settings, overlay::Status>& table() {
    return overlay::properties();
  }
  static const overlay::Status& status() {
    static const overlay::Status s;
    return s;
  }
  static std::map<std::string, std::string> strings() { return {}; }
};

struct MetaConvert {
  using Settings = metaconvert::Settings;
  static const PropertyTable<metaconvert::Settings, metaconvert::Status>& table() {
    return metaconvert::properties();
  }
  static const metaconvert::Status& status() {
    static const metaconvert::Status s;
    return s;
  }
  static std::map<std::string, std::string> strings() {
    return {{"location", "/tmp/results.jsonl"}};
  }
};

struct Publish {
  using Settings = publish::Settings;
  static const PropertyTable<publish::Settings, publish::Status>& table() {
    return publish::properties();
  }
  static const publish::Status& status() {
    static const publish::Status s;
    return s;
  }
  static std::map<std::string, std::string> strings() {
    return {{"host", "broker.example"},
            {"topic", "line1/cam0"},
            {"client-id", "cam-7"},
            {"username", "operator"},
            {"password", "secret"},
            {"tls-ca-file", "/etc/mqtt/ca.pem"},
            {"tls-cert-file", "/etc/mqtt/c.pem"},
            {"tls-key-file", "/etc/mqtt/c.key"}};
  }
};

struct Codes {
  using Settings = codes::Settings;
  static const PropertyTable<codes::Settings, codes::Status>& table() {
    return codes::properties();
  }
  static const codes::Status& status() {
    static const codes::Status s;
    return s;
  }
  static std::map<std::string, std::string> strings() {
    return {{"formats", "QRCode,DataMatrix"}, {"object-class", "part,label"}};
  }
};

// A bare GObject class with T's properties installed: their GParamSpecs.
template <class T>
GType class_with_table() {
  static GType type = 0;
  if (type) return type;
  GTypeInfo info = {};
  info.class_size = sizeof(GObjectClass);
  info.instance_size = sizeof(GObject);
  info.class_init = [](gpointer klass, gpointer) {
    GObjectClass* o = G_OBJECT_CLASS(klass);
    // GObject requires the vfuncs; the tests call the table directly.
    o->set_property = [](GObject*, guint, const GValue*, GParamSpec*) {};
    o->get_property = [](GObject*, guint, GValue*, GParamSpec*) {};
    T::table().install(o);
  };
  const std::string name = std::string("PropertyTableOf-") + T::table().element();
  type = g_type_register_static(G_TYPE_OBJECT, name.c_str(), &info, GTypeFlags(0));
  return type;
}

// T's GParamSpecs in id order.
template <class T>
std::vector<GParamSpec*> specs() {
  auto* k = static_cast<GObjectClass*>(g_type_class_ref(class_with_table<T>()));
  guint n = 0;
  GParamSpec** all = g_object_class_list_properties(k, &n);
  std::vector<GParamSpec*> out(all, all + n);
  g_free(all);
  g_type_class_unref(k);  // static types keep their class
  std::sort(out.begin(), out.end(),
            [](GParamSpec* a, GParamSpec* b) { return a->param_id < b->param_id; });
  return out;
}

template <class T>
GParamSpec* spec(const char* name) {
  for (GParamSpec* p : specs<T>())
    if (std::string(p->name) == name) return p;
  ADD_FAILURE() << "no property " << name;
  return nullptr;
}

// The value of p through T's getter, as g_strdup_value_contents prints it.
template <class T, class Settings>
std::string get(const Settings& s, GParamSpec* p) {
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(p));
  T::table().get(s, T::status(), p->param_id, &v, p);
  std::string out = contents(&v);
  g_value_unset(&v);
  return out;
}

struct TableNames {
  template <class T>
  static std::string GetName(int) {
    return T::table().element();
  }
};

template <class T>
class EveryTable : public ::testing::Test {};
using Tables = ::testing::Types<TorchInfer, Nms, Track, Overlay, MetaConvert, Publish, Codes>;
TYPED_TEST_SUITE(EveryTable, Tables, TableNames);

}  // namespace

TYPED_TEST(EveryTable, InstallsEachEntryByIdWithTheFlagsOfItsAccess) {
  const auto& table = TypeParam::table();
  const std::vector<GParamSpec*> all = specs<TypeParam>();
  ASSERT_EQ(all.size(), table.size());
  for (guint id = 1; id <= all.size(); ++id) {
    GParamSpec* p = all[id - 1];
    const auto* e = table.find(id);
    ASSERT_NE(e, nullptr) << id;
    EXPECT_EQ(p->param_id, id) << p->name;
    EXPECT_EQ(e->id, id) << p->name;
    EXPECT_TRUE(p->flags & G_PARAM_READABLE) << p->name;
    EXPECT_EQ((p->flags & G_PARAM_WRITABLE) != 0, e->access != Access::kReadOnly) << p->name;
    EXPECT_EQ((p->flags & GST_PARAM_MUTABLE_READY) != 0, e->access == Access::kReady) << p->name;
    EXPECT_EQ((p->flags & GST_PARAM_MUTABLE_PLAYING) != 0, e->access == Access::kPlaying)
        << p->name;
    EXPECT_EQ(e->set != nullptr, e->access != Access::kReadOnly) << p->name;
    EXPECT_EQ(std::string(p->name).find('_'), std::string::npos) << p->name;
    EXPECT_GT(std::string(g_param_spec_get_blurb(p)).size(), 10u) << p->name;
  }
  EXPECT_EQ(table.find(0), nullptr);
  EXPECT_EQ(table.find(table.size() + 1), nullptr);
}

TYPED_TEST(EveryTable, DefaultSettingsReadTheParamSpecDefaults) {
  const typename TypeParam::Settings fresh{};
  int compared = 0;
  for (GParamSpec* p : specs<TypeParam>()) {
    GValue got = G_VALUE_INIT, def = G_VALUE_INIT;
    g_value_init(&got, G_PARAM_SPEC_VALUE_TYPE(p));
    g_value_init(&def, G_PARAM_SPEC_VALUE_TYPE(p));
    TypeParam::table().get(fresh, TypeParam::status(), p->param_id, &got, p);
    g_param_value_set_default(p, &def);
    if (G_IS_PARAM_SPEC_BOXED(p))  // a structure of figures
      EXPECT_NE(g_value_get_boxed(&got), nullptr) << p->name;
    else
      EXPECT_EQ(g_param_values_cmp(p, &got, &def), 0)
          << p->name << ": " << contents(&got) << " vs default " << contents(&def);
    g_value_unset(&got);
    g_value_unset(&def);
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(TypeParam::table().size()));
}

TYPED_TEST(EveryTable, WritablePropertiesRoundTrip) {
  typename TypeParam::Settings s;
  WarningCatcher w;
  int written = 0;
  for (GParamSpec* p : specs<TypeParam>()) {
    if (!(p->flags & G_PARAM_WRITABLE)) continue;
    GValue v = G_VALUE_INIT;
    ASSERT_TRUE(non_default(p, &v, TypeParam::strings())) << p->name;
    EXPECT_TRUE(TypeParam::table().set(s, p->param_id, &v, p, false)) << p->name;
    EXPECT_EQ(get<TypeParam>(s, p), contents(&v)) << p->name;
    g_value_unset(&v);
    ++written;
  }
  EXPECT_GT(written, 0);
  EXPECT_TRUE(w.messages().empty()) << w.messages().front();
}

TYPED_TEST(EveryTable, WhileRunningReadyOnlyAreRefusedAndPlayingOnesStored) {
  const std::string element = TypeParam::table().element();
  typename TypeParam::Settings s;
  for (GParamSpec* p : specs<TypeParam>()) {
    if (!(p->flags & G_PARAM_WRITABLE)) continue;
    const bool ready_only = p->flags & GST_PARAM_MUTABLE_READY;
    const std::string before = get<TypeParam>(s, p);
    GValue v = G_VALUE_INIT;
    ASSERT_TRUE(non_default(p, &v, TypeParam::strings())) << p->name;
    WarningCatcher w;
    EXPECT_EQ(TypeParam::table().set(s, p->param_id, &v, p, true), !ready_only) << p->name;
    if (ready_only) {
      EXPECT_EQ(w.messages(), std::vector<std::string>{element + ": property '" + p->name +
                                                       "' cannot change while the element is "
                                                       "running; set it in the NULL or READY "
                                                       "state"});
      EXPECT_EQ(get<TypeParam>(s, p), before) << p->name;
    } else {
      EXPECT_TRUE(w.messages().empty()) << p->name;
      EXPECT_EQ(get<TypeParam>(s, p), contents(&v)) << p->name;
    }
    g_value_unset(&v);
  }
}

// ---- negative -------------------------------------------------------------

TYPED_TEST(EveryTable, UnknownAndReadOnlyIdsWarnNamingTheElement) {
  const auto& table = TypeParam::table();
  const std::string element = table.element();
  const guint past = static_cast<guint>(table.size()) + 1;
  typename TypeParam::Settings s;
  GParamSpec* first = specs<TypeParam>().front();
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(first));
  WarningCatcher w;
  EXPECT_FALSE(table.set(s, 0, &v, nullptr, false));
  EXPECT_FALSE(table.set(s, past, &v, first, false));
  table.get(s, TypeParam::status(), past, &v, first);
  std::vector<std::string> expected = {
      element + ": no writable property with id 0 ('?')",
      element + ": no writable property with id " + std::to_string(past) + " ('" + first->name +
          "')",
      element + ": no property with id " + std::to_string(past) + " ('" + first->name + "')"};
  g_value_unset(&v);
  for (GParamSpec* p : specs<TypeParam>()) {
    if (p->flags & G_PARAM_WRITABLE) continue;
    g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(p));
    EXPECT_FALSE(table.set(s, p->param_id, &v, p, false)) << p->name;
    expected.push_back(element + ": no writable property with id " + std::to_string(p->param_id) +
                       " ('" + p->name + "')");
    g_value_unset(&v);
  }
  EXPECT_EQ(w.messages(), expected);
}

// ---- the template itself ------------------------------------------------------

namespace {

struct ToySettings {
  int n = 0;
};
struct ToyStatus {};
using Toy = Property<ToySettings, ToyStatus>;

GParamSpec* toy_spec(GParamFlags f) {
  return g_param_spec_int("n", "N", "A number for the template's own tests", 0, 9, 0, f);
}
bool throwing_set(ToySettings&, const GValue*, GParamSpec*) {
  throw std::runtime_error("out of memory");
}
void throwing_get(const ToySettings&, const ToyStatus&, GValue*) {
  throw 42;
}

}  // namespace

TEST(PropertyTableErrors, AThrowingAccessorBecomesAWarning) {
  static constexpr Toy kEntries[] = {{1, Access::kPlaying, toy_spec, throwing_set, throwing_get}};
  constexpr PropertyTable<ToySettings, ToyStatus> table{"toy", kEntries};
  static_assert(table.in_id_order());
  GParamSpec* p = toy_spec(G_PARAM_READWRITE);
  g_param_spec_ref_sink(p);
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_TYPE_INT);
  ToySettings s;
  WarningCatcher w;
  EXPECT_FALSE(table.set(s, 1, &v, p, false));
  table.get(s, ToyStatus{}, 1, &v, p);
  EXPECT_EQ(w.messages(), (std::vector<std::string>{"toy: property 'n' failed: out of memory",
                                                    "toy: property 'n' failed: unknown error"}));
  g_value_unset(&v);
  g_param_spec_unref(p);
}

TEST(PropertyTableErrors, TablesOutOfIdOrderOrWithWrongSettersAreRejected) {
  constexpr Toy::Setter set = set_member<&ToySettings::n, ToySettings>;
  constexpr Toy::Getter get = get_member<&ToySettings::n, ToySettings, ToyStatus>;
  static constexpr Toy kGood[] = {{1, Access::kReady, toy_spec, set, get},
                                  {2, Access::kReadOnly, toy_spec, nullptr, get}};
  static constexpr Toy kSwapped[] = {{2, Access::kReady, toy_spec, set, get},
                                     {1, Access::kReady, toy_spec, set, get}};
  static constexpr Toy kGap[] = {{1, Access::kReady, toy_spec, set, get},
                                 {3, Access::kReady, toy_spec, set, get}};
  static constexpr Toy kReadOnlyWithSetter[] = {{1, Access::kReadOnly, toy_spec, set, get}};
  static constexpr Toy kWritableWithoutSetter[] = {{1, Access::kPlaying, toy_spec, nullptr, get}};
  static constexpr Toy kNoGetter[] = {{1, Access::kReady, toy_spec, set, nullptr}};
  static_assert(PropertyTable<ToySettings, ToyStatus>("toy", kGood).in_id_order());
  EXPECT_TRUE((PropertyTable<ToySettings, ToyStatus>("toy", kGood).in_id_order()));
  EXPECT_FALSE((PropertyTable<ToySettings, ToyStatus>("toy", kSwapped).in_id_order()));
  EXPECT_FALSE((PropertyTable<ToySettings, ToyStatus>("toy", kGap).in_id_order()));
  EXPECT_FALSE((PropertyTable<ToySettings, ToyStatus>("toy", kReadOnlyWithSetter).in_id_order()));
  EXPECT_FALSE(
      (PropertyTable<ToySettings, ToyStatus>("toy", kWritableWithoutSetter).in_id_order()));
  EXPECT_FALSE((PropertyTable<ToySettings, ToyStatus>("toy", kNoGetter).in_id_order()));
}

// ---- torchinfer -------------------------------------------------------------

namespace {

bool set_string(gst::Settings& s, Prop id, const char* name, const char* v, bool running = false) {
  GValue value = G_VALUE_INIT;
  g_value_init(&value, G_TYPE_STRING);
  g_value_set_string(&value, v);
  const bool ok = properties().set(s, id, &value, spec<TorchInfer>(name), running);
  g_value_unset(&value);
  return ok;
}

bool set_int(gst::Settings& s, Prop id, const char* name, int v, bool running = false) {
  GValue value = G_VALUE_INIT;
  g_value_init(&value, G_TYPE_INT);
  g_value_set_int(&value, v);
  const bool ok = properties().set(s, id, &value, spec<TorchInfer>(name), running);
  g_value_unset(&value);
  return ok;
}

// The value of torchinfer property `name` with `now` as Status.
std::string read_with(const gst::Status& now, const char* name) {
  GParamSpec* p = spec<TorchInfer>(name);
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(p));
  properties().get(gst::Settings{}, now, p->param_id, &v, p);
  std::string out = contents(&v);
  g_value_unset(&v);
  return out;
}

}  // namespace

TEST(PropertyTable, OnlyTheModelIsChangeableWhilePlaying) {
  for (guint id = 0; id <= PROP_LANES + 1; ++id)
    EXPECT_EQ(properties().changeable_while_running(id), id == PROP_MODEL) << id;
}

TEST(PropertyTable, WhileRunningTheModelIsStoredAndOthersRefused) {
  gst::Settings s;
  WarningCatcher w;
  EXPECT_TRUE(set_string(s, PROP_MODEL, "model", "/m/new.pt", true));
  EXPECT_EQ(s.model, "/m/new.pt");
  EXPECT_FALSE(set_int(s, PROP_INPUT_WIDTH, "input-width", 320, true));
  EXPECT_EQ(s.input_width, 0);
  ASSERT_EQ(w.messages().size(), 1u);
  EXPECT_EQ(w.messages()[0],
            "torchinfer: property 'input-width' cannot change while the element is running; set "
            "it in the NULL or READY state");
}

TEST(PropertyTable, ReadsTheFiguresFromStatus) {
  FixedStatus now;
  now.frames = 42;
  now.last_ms = 3.25;
  now.figures.load_ms = 12.5;
  now.figures.read_ms = 1.5;
  now.figures.optimize_ms = 2.5;
  now.figures.warmup_ms = 8.5;
  now.figures.active_precision = "bf16";
  now.figures.active_lanes = 3;
  const std::pair<const char*, const char*> cases[] = {{"frames", "42"},
                                                       {"load-time", "12.500000"},
                                                       {"read-time", "1.500000"},
                                                       {"optimize-time", "2.500000"},
                                                       {"warmup-time", "8.500000"},
                                                       {"last-inference-time", "3.250000"},
                                                       {"active-precision", "\"bf16\""},
                                                       {"active-lanes", "3"}};
  for (const auto& [name, expected] : cases) EXPECT_EQ(read_with(now, name), expected) << name;
  EXPECT_EQ(now.asked, 8);  // one question per read
}

TEST(PropertyTable, StreamFiguresComeFromTheSnapshot) {
  FixedStatus now;
  now.snap.dropped = 7;
  now.snap.fps = 29.5;
  now.snap.total.p50 = 4.25;
  now.snap.total.p99 = 9.75;
  now.snap.frames_in = 11;
  now.snap.in_flight_limit = 42;
  EXPECT_EQ(read_with(now, "dropped"), "7");
  EXPECT_EQ(read_with(now, "fps"), "29.500000");
  EXPECT_EQ(read_with(now, "latency-p50"), "4.250000");
  EXPECT_EQ(read_with(now, "latency-p99"), "9.750000");
  GParamSpec* p = spec<TorchInfer>("stats");
  GValue v = G_VALUE_INIT;
  g_value_init(&v, GST_TYPE_STRUCTURE);
  properties().get(gst::Settings{}, now, PROP_STATS, &v, p);
  const GstStructure* st = gst_value_get_structure(&v);
  ASSERT_NE(st, nullptr);
  EXPECT_TRUE(gst_structure_has_name(st, "torchinfer-stats"));
  guint64 frames_in = 0;
  EXPECT_TRUE(gst_structure_get_uint64(st, "frames-in", &frames_in));
  EXPECT_EQ(frames_in, 11u);
  // frames-invalid, frames-saturated, frames-in-flight, its limit and the
  // five frames-skipped-<reason> (still: inference-gate=motion) included
  EXPECT_EQ(gst_structure_n_fields(st), 28);
  guint64 limit = 0;
  EXPECT_TRUE(gst_structure_get_uint64(st, "frames-in-flight-limit", &limit));
  EXPECT_EQ(limit, 42u);
  g_value_unset(&v);
  EXPECT_EQ(now.asked, 5);
}

// A setting never asks Status (no snapshot, no lock taken for it); a figure
// asks exactly once.
TEST(PropertyTable, OnlyFiguresAskTheStatus) {
  int figures = 0;
  for (GParamSpec* p : specs<TorchInfer>()) {
    FixedStatus now;
    read_with(now, p->name);
    const bool figure = !(p->flags & G_PARAM_WRITABLE);
    EXPECT_EQ(now.asked, figure ? 1 : 0) << p->name;
    figures += figure;
  }
  EXPECT_EQ(figures, 13);
}

TEST(PropertyTable, SettingsBecomeOverrides) {
  gst::Settings s;
  EXPECT_FALSE(s.overrides().mean.has_value());
  ASSERT_TRUE(set_string(s, PROP_MEAN, "mean", "0.5,0.25,0.125"));
  ASSERT_TRUE(set_string(s, PROP_CROP, "crop", "2, 4, 64, 48"));
  ASSERT_TRUE(set_string(s, PROP_CORES, "cores", "0-1"));
  ASSERT_TRUE(set_int(s, PROP_TOP_K, "top-k", 3));
  const ConfigOverrides o = s.overrides();
  ASSERT_TRUE(o.mean.has_value());
  EXPECT_EQ(*o.mean, (std::vector<float>{0.5f, 0.25f, 0.125f}));
  EXPECT_EQ(o.top_k, 3);
  EXPECT_EQ(s.crop.x, 2);
  EXPECT_EQ(s.crop.height, 48);
  EXPECT_EQ(s.cores, std::optional<std::string>("0-1"));
  ASSERT_TRUE(set_string(s, PROP_CORES, "cores", nullptr));
  EXPECT_FALSE(s.cores.has_value());
}

// ---- torchinfer, negative ---------------------------------------------------

TEST(PropertyTableErrors, RejectedValuesKeepThePreviousOne) {
  gst::Settings s;
  ASSERT_TRUE(set_string(s, PROP_STD, "std", "0.25"));
  ASSERT_TRUE(set_string(s, PROP_CROP, "crop", "1,2,3,4"));
  WarningCatcher w;
  EXPECT_FALSE(set_string(s, PROP_STD, "std", "0.2,-0.1,0.2"));
  EXPECT_FALSE(set_string(s, PROP_CROP, "crop", "1,2"));
  EXPECT_EQ(s.std, "0.25");
  EXPECT_EQ(s.crop.width, 3);
  ASSERT_EQ(w.messages().size(), 2u);
  EXPECT_EQ(w.messages()[1],
            "torchinfer: rejected value '1,2' for property 'crop': expected "
            "\"x,y,width,height\" with x,y >= 0 and width,height >= 1");
}
