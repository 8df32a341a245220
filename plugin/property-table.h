// The one property machinery of every element: each property is declared
// once, in its element's table (its GParamSpec, when it may change, a setter
// that validates and a getter), and installing, setting and reading are
// generated from the table. The rules, the same for every element:
//
// - Order: the table lists the properties by id, from 1; an entry's id is its
//   position (in_id_order(), checked at compile time). GObject lists
//   properties by id, so gst-inspect-1.0 shows them in table order; a new
//   property goes at the end, so the order users know stays.
// - When: Access::kReady settings are refused while the element runs (PAUSED
//   or PLAYING, or on the way there) with a warning naming the property;
//   kPlaying ones may change at any time; kReadOnly ones have no setter.
// - Refusals: a setter that refuses a value warns (naming the property and the
//   value) and returns false; the previous value stays.
// - Status: read-only figures are read by their getter from Status, the
//   element's live figures (its counters, or a view that asks its session
//   only for the figure read); nothing is copied into the settings and
//   nothing is overwritten on read.
// - Locking: the element holds its settings lock around set() and get();
//   Status getters lock what else they read themselves.
// - Failures: an exception from a setter or getter (std::bad_alloc, a figure
//   that cannot be computed) becomes a warning naming the property; none
//   reaches GObject's C frames.
#pragma once

#include <gst/gst.h>

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>

#include "property-access.h"

namespace torchinfer::gst {

// PAUSED or PLAYING, or on the way there: the element uses its settings.
inline bool element_running(GstElement* e) {
  GST_OBJECT_LOCK(e);
  const bool running = GST_STATE(e) >= GST_STATE_PAUSED || GST_STATE_PENDING(e) >= GST_STATE_PAUSED;
  GST_OBJECT_UNLOCK(e);
  return running;
}

template <class Settings, class Status>
struct Property {
  using MakeSpec = GParamSpec* (*)(GParamFlags);
  using Setter = bool (*)(Settings&, const GValue*, GParamSpec*);
  using Getter = void (*)(const Settings&, const Status&, GValue*);

  guint id;
  Access access;
  MakeSpec spec;         // called with the flags of `access`
  Setter set = nullptr;  // null: read-only
  Getter get = nullptr;
};

template <class Settings, class Status>
class PropertyTable {
 public:
  using Entry = Property<Settings, Status>;

  // `element` prefixes every warning.
  template <std::size_t N>
  constexpr PropertyTable(const char* element, const Entry (&entries)[N])
      : element_(element), entries_(entries), size_(N) {}

  // The ordering rule, and a setter on exactly the writable entries.
  constexpr bool in_id_order() const {
    for (std::size_t i = 0; i < size_; ++i) {
      const Entry& e = entries_[i];
      if (e.id != i + 1 || !e.spec || !e.get) return false;
      if ((e.set == nullptr) != (e.access == Access::kReadOnly)) return false;
    }
    return size_ > 0;
  }

  constexpr std::size_t size() const { return size_; }
  constexpr const char* element() const { return element_; }

  // The entry of prop_id, null for an unknown id.
  constexpr const Entry* find(guint prop_id) const {
    return prop_id >= 1 && prop_id <= size_ ? &entries_[prop_id - 1] : nullptr;
  }

  void install(GObjectClass* klass) const {
    for (std::size_t i = 0; i < size_; ++i)
      g_object_class_install_property(klass, entries_[i].id,
                                      entries_[i].spec(flags_for(entries_[i].access)));
  }

  bool changeable_while_running(guint prop_id) const {
    const Entry* e = find(prop_id);
    return e && e->access == Access::kPlaying;
  }

  // False, after a g_warning, for a refused value, for a kReady property
  // while `running` and for an unknown or read-only id; `s` keeps its value.
  bool set(Settings& s, guint prop_id, const GValue* value, GParamSpec* pspec, bool running) const {
    const Entry* e = find(prop_id);
    if (!e || !e->set) {
      g_warning("%s: no writable property with id %u ('%s')", element_, prop_id, name_of(pspec));
      return false;
    }
    if (running && e->access == Access::kReady) {
      g_warning(
          "%s: property '%s' cannot change while the element is running; set it in the NULL or "
          "READY state",
          element_, name_of(pspec));
      return false;
    }
    try {
      return e->set(s, value, pspec);
    } catch (const std::exception& x) {  // never into GObject's C frames
      failed(pspec, x.what());
    } catch (...) {
      failed(pspec, "unknown error");
    }
    return false;
  }

  void get(const Settings& s, const Status& now, guint prop_id, GValue* value,
           GParamSpec* pspec) const {
    const Entry* e = find(prop_id);
    if (!e) {
      g_warning("%s: no property with id %u ('%s')", element_, prop_id, name_of(pspec));
      return;
    }
    try {
      e->get(s, now, value);
    } catch (const std::exception& x) {
      failed(pspec, x.what());
    } catch (...) {
      failed(pspec, "unknown error");
    }
  }

 private:
  void failed(GParamSpec* pspec, const char* what) const {
    g_warning("%s: property '%s' failed: %s", element_, name_of(pspec), what);
  }

  static const char* name_of(GParamSpec* pspec) {
    return pspec ? g_param_spec_get_name(pspec) : "?";
  }

  const char* element_;
  const Entry* entries_;
  std::size_t size_;
};

// ---- values: a C++ member type <-> the GValue of its GParamSpec -----------
// Integers follow the GValue's type, so one C++ type (std::size_t, guint64)
// can back a guint or a guint64 property.

template <class T>
constexpr bool kUnsupported = false;

template <class T>
constexpr bool kOptional = false;
template <class T>
constexpr bool kOptional<std::optional<T>> = true;

template <class T>
T from_value(const GValue* v) {
  if constexpr (std::is_same_v<T, bool>) {
    return g_value_get_boolean(v) != FALSE;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(g_value_get_enum(v));
  } else if constexpr (std::is_integral_v<T>) {
    switch (G_VALUE_TYPE(v)) {
      case G_TYPE_INT:
        return static_cast<T>(g_value_get_int(v));
      case G_TYPE_UINT:
        return static_cast<T>(g_value_get_uint(v));
      case G_TYPE_INT64:
        return static_cast<T>(g_value_get_int64(v));
      default:
        return static_cast<T>(g_value_get_uint64(v));
    }
  } else if constexpr (std::is_same_v<T, double>) {
    return g_value_get_double(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    const char* s = g_value_get_string(v);
    return s ? s : "";
  } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
    const char* s = g_value_get_string(v);
    return s ? T(s) : std::nullopt;
  } else if constexpr (kOptional<T>) {  // an override: once set, set
    return from_value<typename T::value_type>(v);
  } else {
    static_assert(kUnsupported<T>, "add this member type to from_value");
  }
}

template <class T>
void to_value(GValue* v, const T& x) {
  if constexpr (std::is_same_v<T, bool>) {
    g_value_set_boolean(v, x);
  } else if constexpr (std::is_enum_v<T>) {
    g_value_set_enum(v, static_cast<int>(x));
  } else if constexpr (std::is_integral_v<T>) {
    switch (G_VALUE_TYPE(v)) {
      case G_TYPE_INT:
        g_value_set_int(v, static_cast<gint>(x));
        break;
      case G_TYPE_UINT:
        g_value_set_uint(v, static_cast<guint>(x));
        break;
      case G_TYPE_INT64:
        g_value_set_int64(v, static_cast<gint64>(x));
        break;
      default:
        g_value_set_uint64(v, static_cast<guint64>(x));
    }
  } else if constexpr (std::is_same_v<T, double>) {
    g_value_set_double(v, x);
  } else if constexpr (std::is_same_v<T, std::string>) {
    // An empty string reads back as NULL, like a property never set.
    g_value_set_string(v, x.empty() ? nullptr : x.c_str());
  } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
    g_value_set_string(v, x ? x->c_str() : nullptr);
  } else {
    static_assert(kUnsupported<T>, "add this member type to to_value");
  }
}

template <class C, class T>
C owner_of(T C::*);
template <class C, class T>
T type_of(T C::*);

// Plain accessors of a Settings member M (the store for a value GObject has
// already range-checked) and of a Status member M.
template <auto M, class Settings>
bool set_member(Settings& s, const GValue* v, GParamSpec*) {
  s.*M = from_value<decltype(type_of(M))>(v);
  return true;
}

template <auto M, class Settings, class Status>
void get_member(const Settings& s, const Status& now, GValue* v) {
  if constexpr (std::is_same_v<decltype(owner_of(M)), Settings>)
    to_value(v, s.*M);
  else
    to_value(v, now.*M);
}

}  // namespace torchinfer::gst
