// How a torchinfer property reaches its value: generic accessors picked by
// the member's C++ type, and the validated special cases (float lists, crop).
// Internal to torchinfer-properties.cpp.
#pragma once

#include <gst/gst.h>

#include <optional>
#include <string>
#include <type_traits>

#include "property-access.h"
#include "torchinfer-settings.h"

namespace torchinfer::gst {

using MakeSpec = GParamSpec* (*)(GParamFlags);
using Setter = bool (*)(Settings&, const GValue*, GParamSpec*);
using Getter = void (*)(const Settings&, const Stats&, GValue*);
using StreamGetter = void (*)(const StatsSnapshot&, GValue*);

struct Property {
  Prop id;
  Access access;
  MakeSpec spec;                  // called with the flags of `access`
  Setter set = nullptr;           // null: read-only
  Getter get = nullptr;           // from Settings or Stats
  StreamGetter stream = nullptr;  // from the element's stream statistics instead
};

template <class C, class T>
C owner_of(T C::*);
template <class C, class T>
T type_of(T C::*);

template <class T>
constexpr bool kUnsupported = false;

template <class T>
T from_value(const GValue* v) {
  if constexpr (std::is_same_v<T, int>) {
    return g_value_get_int(v);
  } else if constexpr (std::is_same_v<T, guint>) {
    return g_value_get_uint(v);
  } else if constexpr (std::is_same_v<T, guint64>) {
    return g_value_get_uint64(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return g_value_get_double(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return g_value_get_boolean(v) != FALSE;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(g_value_get_enum(v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    const char* s = g_value_get_string(v);
    return s ? s : "";
  } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
    const char* s = g_value_get_string(v);
    return s ? T(s) : std::nullopt;
  } else {
    static_assert(kUnsupported<T>, "add this member type to from_value");
  }
}

template <class T>
void to_value(GValue* v, const T& x) {
  if constexpr (std::is_same_v<T, int>) {
    g_value_set_int(v, x);
  } else if constexpr (std::is_same_v<T, guint>) {
    g_value_set_uint(v, x);
  } else if constexpr (std::is_same_v<T, guint64>) {
    g_value_set_uint64(v, x);
  } else if constexpr (std::is_same_v<T, double>) {
    g_value_set_double(v, x);
  } else if constexpr (std::is_same_v<T, bool>) {
    g_value_set_boolean(v, x);
  } else if constexpr (std::is_enum_v<T>) {
    g_value_set_enum(v, static_cast<int>(x));
  } else if constexpr (std::is_same_v<T, std::string>) {
    // An empty string reads back as NULL, like a property never set.
    g_value_set_string(v, x.empty() ? nullptr : x.c_str());
  } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
    g_value_set_string(v, x ? x->c_str() : nullptr);
  } else {
    static_assert(kUnsupported<T>, "add this member type to to_value");
  }
}

// Accessors of a Settings member (set/get) or a Stats member (get).
template <auto M>
bool set_field(Settings& s, const GValue* v, GParamSpec*) {
  s.*M = from_value<decltype(type_of(M))>(v);
  return true;
}

template <auto M>
void get_field(const Settings& s, const Stats& st, GValue* v) {
  if constexpr (std::is_same_v<decltype(owner_of(M)), Settings>)
    to_value(v, s.*M);
  else
    to_value(v, st.*M);
}

// Validated setters: false (after a g_warning naming the property and the
// value) keeps the previous value.
bool set_float_list(std::string& field, const GValue* value, GParamSpec* pspec, bool positive);

template <auto M, bool kPositive = false>
bool set_floats(Settings& s, const GValue* v, GParamSpec* pspec) {
  return set_float_list(s.*M, v, pspec, kPositive);
}

bool set_crop(Settings& s, const GValue* value, GParamSpec* pspec);
void get_crop(const Settings& s, const Stats&, GValue* value);

}  // namespace torchinfer::gst
