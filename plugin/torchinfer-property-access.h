// How a torchinfer property reaches its value: the accessors of a Settings
// member or a load figure, and the validated special cases (float lists,
// crop). Internal to torchinfer-properties.cpp.
#pragma once

#include <gst/gst.h>

#include <string>
#include <type_traits>

#include "torchinfer-properties.h"

namespace torchinfer::gst {

using Entry = Property<Settings, Status>;
using MakeSpec = Entry::MakeSpec;
using Setter = Entry::Setter;
using Getter = Entry::Getter;

// Accessors of a Settings member (set/get) or of a load figure, a Stats
// member (get).
template <auto M>
bool set_field(Settings& s, const GValue* v, GParamSpec* pspec) {
  return set_member<M>(s, v, pspec);
}

template <auto M>
void get_field(const Settings& s, const Status& now, GValue* v) {
  if constexpr (std::is_same_v<decltype(owner_of(M)), Settings>)
    to_value(v, s.*M);
  else
    to_value(v, now.load().*M);
}

// Validated setters: false (after a g_warning naming the property and the
// value) keeps the previous value.
bool set_float_list(std::string& field, const GValue* value, GParamSpec* pspec, bool positive);

template <auto M, bool kPositive = false>
bool set_floats(Settings& s, const GValue* v, GParamSpec* pspec) {
  return set_float_list(s.*M, v, pspec, kPositive);
}

bool set_crop(Settings& s, const GValue* value, GParamSpec* pspec);
void get_crop(const Settings& s, const Status&, GValue* value);

}  // namespace torchinfer::gst
