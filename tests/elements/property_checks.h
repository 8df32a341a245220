// Generic checks of an element's GObject properties, shared by the property
// tests of each element (fixed list, defaults, round trips, refusals).
#pragma once

#include <gst/gst.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace torchinfer::test {

// The element type's own properties (not those of its parent classes), in
// id order.
std::vector<GParamSpec*> own_specs(GstElement* e);

bool writable(GParamSpec* p);

// Initialises `v` to an in-range value other than p's default. Strings come
// from `strings` (name -> valid value); a missing one or an untested type
// is a test failure (returns false).
bool non_default(GParamSpec* p, GValue* v, const std::map<std::string, std::string>& strings);

// g_strdup_value_contents as a std::string.
std::string contents(const GValue* v);

// The current value of a property, as contents() prints it.
std::string read(GstElement* e, GParamSpec* p);

// Sets every writable property to a non-default value and checks it reads
// back; returns how many were written.
int round_trip_writable(GstElement* e, const std::map<std::string, std::string>& strings);

// Each of the element's own properties reads its ParamSpec default; boxed
// ones (structures of counters) are left to the caller. Returns how many
// were compared.
int expect_defaults(GstElement* e);

// On an element in PAUSED or PLAYING: sets each property writable only in
// NULL/READY to a non-default value and expects it refused, by one warning
// naming the property and the rule, with the previous value kept. Returns how
// many were refused.
int expect_ready_only_refused(GstElement* running,
                              const std::map<std::string, std::string>& strings);

// On an element in PAUSED or PLAYING: sets each property changeable while
// PLAYING to a non-default value and expects it stored without a warning.
// Returns how many were set.
int expect_playing_accepted(GstElement* running, const std::map<std::string, std::string>& strings);

// The warnings from writing (write) and then reading (read) property id 999,
// which the element never installed ('no-such-property', an int).
std::vector<std::string> unknown_id_warnings(GstElement* e, bool write, bool read);

// One row of an element's fixed property list. access: 'r' writable in
// NULL/READY, 'p' also while PLAYING, 'o' read-only.
struct ExpectedProperty {
  const char* name;
  const char* type;
  char access;
};

// The element's own properties are exactly `expected`, in id order, with
// those value types and flags.
void expect_property_list(GstElement* e, const ExpectedProperty* expected, std::size_t n);

}  // namespace torchinfer::test
