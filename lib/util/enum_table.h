// EnumTable: one constexpr (value, name) table per enumeration, from which both the name of a
// value and whether the value is defined at all derive, so the two can never disagree.
#ifndef ECD_LIB_UTIL_ENUM_TABLE_H_
#define ECD_LIB_UTIL_ENUM_TABLE_H_

#include <cstddef>
#include <string_view>

#include "absl/types/span.h"

namespace ecd {

// One defined value of E and its name. E is an enumeration or an integer type.
template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// A view of a static array of EnumName<E> plus the name every value outside it gets. The array
// must outlive the table (declare both constexpr at namespace scope):
//
//   constexpr EnumName<Color> kColorNames[] = {{Color::kRed, "Red"}, {Color::kBlue, "Blue"}};
//   constexpr EnumTable kColors(kColorNames, "Reserved");
//   static_assert(kColors.Valid());
template <typename E>
class EnumTable {
 public:
  template <size_t N>
  constexpr EnumTable(const EnumName<E> (&entries)[N], std::string_view fallback)
      : entries_(entries, N), fallback_(fallback) {}

  // True iff `v` is one of the table's values.
  constexpr bool IsKnown(E v) const {
    for (const EnumName<E>& e : entries_) {
      if (e.value == v) return true;
    }
    return false;
  }
  // The table's name for `v`, or the fallback if `v` is not in the table.
  constexpr std::string_view Name(E v) const {
    for (const EnumName<E>& e : entries_) {
      if (e.value == v) return e.name;
    }
    return fallback_;
  }
  constexpr std::string_view fallback() const { return fallback_; }
  constexpr absl::Span<const EnumName<E>> entries() const { return entries_; }

  // True iff no value is listed twice and every name is non-empty and differs from the
  // fallback, i.e. Name(v) != fallback() exactly when IsKnown(v).
  constexpr bool Valid() const {
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].name.empty() || entries_[i].name == fallback_) return false;
      for (size_t j = i + 1; j < entries_.size(); ++j) {
        if (entries_[i].value == entries_[j].value) return false;
      }
    }
    return true;
  }

 private:
  absl::Span<const EnumName<E>> entries_;
  std::string_view fallback_;
};

}  // namespace ecd

#endif  // ECD_LIB_UTIL_ENUM_TABLE_H_
