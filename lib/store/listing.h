// Paged, filtered listing of object names (the AIP-158 pattern, with S3's prefix and delimiter):
// one page at a time over any source that returns names in order from a point.
// Thread safety: the functions are pure; ListPageOf calls `fetch` on the caller's thread.
#ifndef ECD_LIB_STORE_LISTING_H_
#define ECD_LIB_STORE_LISTING_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/catalog/catalog_records.h"

namespace ecd::store {

inline constexpr size_t kDefaultPageSize = 1000;
inline constexpr size_t kMaxPageSize = 10000;

struct ListQuery {
  std::string prefix;     // only names that start with it ("": every name)
  std::string delimiter;  // "": none; else names that hold it after the prefix roll up
  size_t page_size = kDefaultPageSize;  // entries (objects and common prefixes); 0: the default
  // The page also ends before its entries' names pass this many bytes (each entry counts its
  // name plus `entry_overhead`), so that a page fits a message whatever the names. 0: no bound.
  size_t max_bytes = 0;
  size_t entry_overhead = 0;
  std::string page_token;  // "": the first page; else a previous page's next_page_token
};

// One page: the objects and the common prefixes (each a prefix of names up to and including the
// first delimiter after the query's prefix, listed once), together in name order.
struct ListPage {
  std::vector<ObjectRecord> objects;
  std::vector<std::string> common_prefixes;
  // "": nothing follows. Else the token of the next page: it resumes after the last entry of
  // this one, so entries that exist throughout a listing appear exactly once, whatever is
  // created or deleted between pages.
  std::string next_page_token;
};

// Up to `limit` objects by name from `from` (after it when `after`), below `before` unless
// that is empty: ObjectCatalog::ListObjectsFrom's contract.
using FetchObjects = std::function<absl::StatusOr<std::vector<ObjectRecord>>(
    absl::string_view from, bool after, absl::string_view before, size_t limit)>;

// The page `query` asks for. InvalidArgument for a page token that does not parse or belongs to
// a listing with another prefix or delimiter (say so: start again without it); page sizes above
// kMaxPageSize are taken as kMaxPageSize. Else `fetch`'s errors.
absl::StatusOr<ListPage> ListPageOf(const ListQuery& query, const FetchObjects& fetch);

// The least string greater than every string that starts with `prefix`; "" when there is none
// (an empty prefix, or one of 0xff bytes only).
std::string PrefixEnd(absl::string_view prefix);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_LISTING_H_
