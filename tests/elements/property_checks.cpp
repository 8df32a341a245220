#include "property_checks.h"

#include <gtest/gtest.h>

#include "element_helpers.h"

namespace torchinfer::test {

std::vector<GParamSpec*> own_specs(GstElement* e) {
  guint n = 0;
  GParamSpec** all = g_object_class_list_properties(G_OBJECT_GET_CLASS(e), &n);
  std::vector<GParamSpec*> out;
  for (guint i = 0; i < n; ++i)
    if (all[i]->owner_type == G_OBJECT_TYPE(e)) out.push_back(all[i]);
  g_free(all);
  return out;
}

bool writable(GParamSpec* p) {
  return (p->flags & G_PARAM_WRITABLE) != 0;
}

namespace {

// The other end of the range from the default (the minimum unless that is
// the default).
template <class Spec, class V>
V other_end(const Spec* s) {
  return s->default_value != s->minimum ? s->minimum : s->maximum;
}

}  // namespace

bool non_default(GParamSpec* p, GValue* v, const std::map<std::string, std::string>& strings) {
  g_value_init(v, G_PARAM_SPEC_VALUE_TYPE(p));
  if (G_IS_PARAM_SPEC_STRING(p)) {
    const auto it = strings.find(p->name);
    if (it == strings.end()) {
      ADD_FAILURE() << "no test value for " << p->name;
      return false;
    }
    g_value_set_string(v, it->second.c_str());
  } else if (G_IS_PARAM_SPEC_INT(p)) {
    g_value_set_int(v, other_end<GParamSpecInt, gint>(G_PARAM_SPEC_INT(p)));
  } else if (G_IS_PARAM_SPEC_UINT(p)) {
    g_value_set_uint(v, other_end<GParamSpecUInt, guint>(G_PARAM_SPEC_UINT(p)));
  } else if (G_IS_PARAM_SPEC_UINT64(p)) {
    g_value_set_uint64(v, other_end<GParamSpecUInt64, guint64>(G_PARAM_SPEC_UINT64(p)));
  } else if (G_IS_PARAM_SPEC_DOUBLE(p)) {
    g_value_set_double(v, other_end<GParamSpecDouble, gdouble>(G_PARAM_SPEC_DOUBLE(p)));
  } else if (G_IS_PARAM_SPEC_BOOLEAN(p)) {
    g_value_set_boolean(v, !G_PARAM_SPEC_BOOLEAN(p)->default_value);
  } else if (G_IS_PARAM_SPEC_ENUM(p)) {
    auto* s = G_PARAM_SPEC_ENUM(p);
    const GEnumValue& last = s->enum_class->values[s->enum_class->n_values - 1];
    g_value_set_enum(v,
                     last.value != s->default_value ? last.value : s->enum_class->values[0].value);
  } else {
    ADD_FAILURE() << "untested property type for " << p->name;
    return false;
  }
  return true;
}

std::string contents(const GValue* v) {
  gchar* s = g_strdup_value_contents(v);
  std::string out = s;
  g_free(s);
  return out;
}

std::string read(GstElement* e, GParamSpec* p) {
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(p));
  g_object_get_property(G_OBJECT(e), p->name, &v);
  std::string out = contents(&v);
  g_value_unset(&v);
  return out;
}

int round_trip_writable(GstElement* e, const std::map<std::string, std::string>& strings) {
  int written = 0;
  for (GParamSpec* p : own_specs(e)) {
    if (!writable(p)) continue;
    GValue v = G_VALUE_INIT;
    if (!non_default(p, &v, strings)) return written;
    GValue def = G_VALUE_INIT;
    g_value_init(&def, G_PARAM_SPEC_VALUE_TYPE(p));
    g_param_value_set_default(p, &def);
    EXPECT_NE(g_param_values_cmp(p, &v, &def), 0) << p->name;
    g_object_set_property(G_OBJECT(e), p->name, &v);
    EXPECT_EQ(read(e, p), contents(&v)) << p->name;
    g_value_unset(&v);
    g_value_unset(&def);
    ++written;
  }
  return written;
}

int expect_ready_only_refused(GstElement* running,
                              const std::map<std::string, std::string>& strings) {
  const std::string element = GST_OBJECT_NAME(gst_element_get_factory(running));
  int refused = 0;
  for (GParamSpec* p : own_specs(running)) {
    if (!(p->flags & GST_PARAM_MUTABLE_READY)) continue;
    const std::string before = read(running, p);
    GValue v = G_VALUE_INIT;
    if (!non_default(p, &v, strings)) return refused;
    WarningCatcher w;
    g_object_set_property(G_OBJECT(running), p->name, &v);
    g_value_unset(&v);
    EXPECT_EQ(w.messages(), std::vector<std::string>{element + ": property '" + p->name +
                                                     "' cannot change while the element is "
                                                     "running; set it in the NULL or READY state"});
    EXPECT_EQ(read(running, p), before) << p->name;
    ++refused;
  }
  return refused;
}

int expect_playing_accepted(GstElement* running,
                            const std::map<std::string, std::string>& strings) {
  int accepted = 0;
  for (GParamSpec* p : own_specs(running)) {
    if (!(p->flags & GST_PARAM_MUTABLE_PLAYING)) continue;
    GValue v = G_VALUE_INIT;
    if (!non_default(p, &v, strings)) return accepted;
    WarningCatcher w;
    g_object_set_property(G_OBJECT(running), p->name, &v);
    EXPECT_TRUE(w.messages().empty()) << p->name << ": " << w.messages().front();
    EXPECT_EQ(read(running, p), contents(&v)) << p->name;
    g_value_unset(&v);
    ++accepted;
  }
  return accepted;
}

void expect_property_list(GstElement* e, const ExpectedProperty* expected, std::size_t n) {
  const std::vector<GParamSpec*> specs = own_specs(e);
  ASSERT_EQ(specs.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    GParamSpec* p = specs[i];
    const ExpectedProperty& x = expected[i];
    EXPECT_STREQ(p->name, x.name);
    EXPECT_STREQ(g_type_name(G_PARAM_SPEC_VALUE_TYPE(p)), x.type) << x.name;
    EXPECT_TRUE(p->flags & G_PARAM_READABLE) << x.name;
    EXPECT_EQ(writable(p), x.access != 'o') << x.name;
    EXPECT_EQ((p->flags & GST_PARAM_MUTABLE_READY) != 0, x.access == 'r') << x.name;
    EXPECT_EQ((p->flags & GST_PARAM_MUTABLE_PLAYING) != 0, x.access == 'p') << x.name;
  }
}

int expect_defaults(GstElement* e) {
  int compared = 0;
  for (GParamSpec* p : own_specs(e)) {
    if (G_IS_PARAM_SPEC_BOXED(p)) continue;
    GValue got = G_VALUE_INIT, def = G_VALUE_INIT;
    g_value_init(&got, G_PARAM_SPEC_VALUE_TYPE(p));
    g_value_init(&def, G_PARAM_SPEC_VALUE_TYPE(p));
    g_object_get_property(G_OBJECT(e), p->name, &got);
    g_param_value_set_default(p, &def);
    EXPECT_EQ(g_param_values_cmp(p, &got, &def), 0)
        << p->name << ": " << contents(&got) << " vs default " << contents(&def);
    g_value_unset(&got);
    g_value_unset(&def);
    ++compared;
  }
  return compared;
}

std::vector<std::string> unknown_id_warnings(GstElement* e, bool write, bool read) {
  GParamSpec* p = g_param_spec_int("no-such-property", "x", "x", 0, 10, 0, G_PARAM_READWRITE);
  g_param_spec_ref_sink(p);
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_TYPE_INT);
  std::vector<std::string> out;
  {
    WarningCatcher w;
    if (write) G_OBJECT_GET_CLASS(e)->set_property(G_OBJECT(e), 999, &v, p);
    if (read) G_OBJECT_GET_CLASS(e)->get_property(G_OBJECT(e), 999, &v, p);
    out = w.messages();
  }
  g_value_unset(&v);
  g_param_spec_unref(p);
  return out;
}

}  // namespace torchinfer::test
