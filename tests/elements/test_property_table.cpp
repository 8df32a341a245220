// The torchinfer property table's entry points as the element calls them:
// set_property while running, unknown ids, the figures read from Stats and
// from the stream statistics, and the overrides the settings turn into.
// Built from the plugin sources (the runtime library exports nothing).
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "torchinfer-settings.h"

using namespace torchinfer;
using namespace torchinfer::gst;

namespace {

// A bare GObject class with torchinfer's properties: their GParamSpecs.
struct PropsObject {
  GObject parent;
};
struct PropsObjectClass {
  GObjectClass parent;
};
G_DEFINE_TYPE(PropsObject, props_object, G_TYPE_OBJECT)
void props_object_class_init(PropsObjectClass* k) {
  GObjectClass* o = G_OBJECT_CLASS(k);
  // GObject requires the vfuncs; the tests call the table directly.
  o->set_property = [](GObject*, guint, const GValue*, GParamSpec*) {};
  o->get_property = [](GObject*, guint, GValue*, GParamSpec*) {};
  install_properties(o);
}
void props_object_init(PropsObject*) {}

GParamSpec* spec(const char* name) {
  auto* k = static_cast<GObjectClass*>(g_type_class_ref(props_object_get_type()));
  GParamSpec* p = g_object_class_find_property(k, name);
  g_type_class_unref(k);
  EXPECT_NE(p, nullptr) << name;
  return p;
}

class Warnings {
 public:
  Warnings() { id_ = g_log_set_handler(nullptr, G_LOG_LEVEL_WARNING, &Warnings::handler, this); }
  ~Warnings() { g_log_remove_handler(nullptr, id_); }
  std::vector<std::string> messages;

 private:
  static void handler(const gchar*, GLogLevelFlags, const gchar* m, gpointer self) {
    static_cast<Warnings*>(self)->messages.push_back(m);
  }
  guint id_;
};

bool set_string(Settings& s, Prop id, const char* name, const char* v, bool running = false) {
  GValue value = G_VALUE_INIT;
  g_value_init(&value, G_TYPE_STRING);
  g_value_set_string(&value, v);
  const bool ok = set_property(s, id, &value, spec(name), running);
  g_value_unset(&value);
  return ok;
}

bool set_int(Settings& s, Prop id, const char* name, int v, bool running = false) {
  GValue value = G_VALUE_INIT;
  g_value_init(&value, G_TYPE_INT);
  g_value_set_int(&value, v);
  const bool ok = set_property(s, id, &value, spec(name), running);
  g_value_unset(&value);
  return ok;
}

}  // namespace

TEST(PropertyTable, OnlyTheModelIsChangeableWhilePlaying) {
  for (guint id = 0; id <= PROP_LANES + 1; ++id)
    EXPECT_EQ(changeable_while_playing(id), id == PROP_MODEL) << id;
}

TEST(PropertyTable, WhileRunningTheModelIsStoredAndOthersRefused) {
  Settings s;
  Warnings w;
  EXPECT_TRUE(set_string(s, PROP_MODEL, "model", "/m/new.pt", true));
  EXPECT_EQ(s.model, "/m/new.pt");
  EXPECT_FALSE(set_int(s, PROP_INPUT_WIDTH, "input-width", 320, true));
  EXPECT_EQ(s.input_width, 0);
  ASSERT_EQ(w.messages.size(), 1u);
  EXPECT_EQ(w.messages[0],
            "torchinfer: property 'input-width' can only be changed in the NULL or READY state");
}

TEST(PropertyTable, ReadsStatsFigures) {
  Settings s;
  Stats st;
  st.frames = 42;
  st.load_ms = 12.5;
  st.read_ms = 1.5;
  st.optimize_ms = 2.5;
  st.warmup_ms = 8.5;
  st.last_inference_ms = 3.25;
  st.active_precision = "bf16";
  const struct {
    Prop id;
    const char* name;
    const char* expected;
  } cases[] = {{PROP_FRAMES, "frames", "42"},
               {PROP_LOAD_TIME, "load-time", "12.500000"},
               {PROP_READ_TIME, "read-time", "1.500000"},
               {PROP_OPTIMIZE_TIME, "optimize-time", "2.500000"},
               {PROP_WARMUP_TIME, "warmup-time", "8.500000"},
               {PROP_LAST_INFERENCE_TIME, "last-inference-time", "3.250000"},
               {PROP_ACTIVE_PRECISION, "active-precision", "\"bf16\""}};
  for (const auto& c : cases) {
    GParamSpec* p = spec(c.name);
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(p));
    get_property(s, st, c.id, &v, p);
    gchar* text = g_strdup_value_contents(&v);
    EXPECT_STREQ(text, c.expected) << c.name;
    g_free(text);
    g_value_unset(&v);
  }
}

TEST(PropertyTable, StreamFiguresComeFromTheSnapshotOnly) {
  StatsSnapshot snap;
  snap.dropped = 7;
  snap.fps = 29.5;
  snap.total.p50 = 4.25;
  snap.total.p99 = 9.75;
  snap.frames_in = 11;
  for (guint id = 0; id <= PROP_LANES + 1; ++id)
    EXPECT_EQ(reads_stream_stats(id), id == PROP_DROPPED || id == PROP_FPS ||
                                          id == PROP_LATENCY_P50 || id == PROP_LATENCY_P99 ||
                                          id == PROP_STATS)
        << id;
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_TYPE_UINT64);
  get_stream_property(PROP_DROPPED, snap, &v);
  EXPECT_EQ(g_value_get_uint64(&v), 7u);
  g_value_set_uint64(&v, 99);  // get_property leaves stream figures to the element
  get_property(Settings{}, Stats{}, PROP_DROPPED, &v, spec("dropped"));
  EXPECT_EQ(g_value_get_uint64(&v), 99u);
  g_value_unset(&v);
  const std::pair<Prop, double> doubles[] = {
      {PROP_FPS, 29.5}, {PROP_LATENCY_P50, 4.25}, {PROP_LATENCY_P99, 9.75}};
  for (const auto& [id, expected] : doubles) {
    g_value_init(&v, G_TYPE_DOUBLE);
    get_stream_property(id, snap, &v);
    EXPECT_EQ(g_value_get_double(&v), expected) << id;
    g_value_unset(&v);
  }
  g_value_init(&v, GST_TYPE_STRUCTURE);
  get_stream_property(PROP_STATS, snap, &v);
  const GstStructure* st = gst_value_get_structure(&v);
  ASSERT_NE(st, nullptr);
  EXPECT_TRUE(gst_structure_has_name(st, "torchinfer-stats"));
  guint64 frames_in = 0;
  EXPECT_TRUE(gst_structure_get_uint64(st, "frames-in", &frames_in));
  EXPECT_EQ(frames_in, 11u);
  // frames-invalid, frames-in-flight and the four frames-skipped-<reason> included
  EXPECT_EQ(gst_structure_n_fields(st), 25);
  g_value_unset(&v);
}

TEST(PropertyTable, SettingsBecomeOverrides) {
  Settings s;
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

// ---- negative -------------------------------------------------------------

TEST(PropertyTableErrors, UnknownAndReadOnlyIdsWarn) {
  Settings s;
  Warnings w;
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_TYPE_UINT64);
  EXPECT_FALSE(set_property(s, PROP_LANES + 1, &v, spec("frames"), false));
  EXPECT_FALSE(set_property(s, PROP_FRAMES, &v, spec("frames"), false));
  EXPECT_FALSE(set_property(s, 0, &v, nullptr, false));
  get_property(s, Stats{}, 4242, &v, nullptr);
  g_value_unset(&v);
  ASSERT_EQ(w.messages.size(), 4u);
  EXPECT_NE(w.messages[0].find(std::to_string(PROP_LANES + 1)), std::string::npos);
  EXPECT_NE(w.messages[1].find("'frames'"), std::string::npos) << w.messages[1];
  EXPECT_NE(w.messages[2].find("id 0"), std::string::npos) << w.messages[2];
  EXPECT_NE(w.messages[3].find("4242"), std::string::npos) << w.messages[3];
}

TEST(PropertyTableErrors, RejectedValuesKeepThePreviousOne) {
  Settings s;
  ASSERT_TRUE(set_string(s, PROP_STD, "std", "0.25"));
  ASSERT_TRUE(set_string(s, PROP_CROP, "crop", "1,2,3,4"));
  Warnings w;
  EXPECT_FALSE(set_string(s, PROP_STD, "std", "0.2,-0.1,0.2"));
  EXPECT_FALSE(set_string(s, PROP_CROP, "crop", "1,2"));
  EXPECT_EQ(s.std, "0.25");
  EXPECT_EQ(s.crop.width, 3);
  ASSERT_EQ(w.messages.size(), 2u);
  EXPECT_EQ(w.messages[1],
            "torchinfer: rejected value '1,2' for property 'crop': expected "
            "\"x,y,width,height\" with x,y >= 0 and width,height >= 1");
}
