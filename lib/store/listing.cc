// ListPageOf: pages of names with prefix, delimiter and resumable page tokens (listing.h).
#include "lib/store/listing.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ecd::store {
namespace {

// A page token: where the last page ended and the query it belongs to, as web-safe base64 of
// "1" (the format), the kind of the last entry ('o' an object, 'p' a common prefix), then the
// prefix, the delimiter and the last entry's name, each as its length and ':' then its bytes.
struct Cursor {
  char kind = 'o';
  std::string key;
};

void AppendField(std::string& out, absl::string_view field) {
  absl::StrAppend(&out, field.size(), ":", field);
}

// Reads one length-prefixed field from the front of `in`.
bool TakeField(absl::string_view& in, std::string& field) {
  const size_t colon = in.find(':');
  size_t n = 0;
  if (colon == absl::string_view::npos || colon == 0 || colon > 10) return false;
  for (char c : in.substr(0, colon)) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  if (in.size() - colon - 1 < n) return false;
  field = std::string(in.substr(colon + 1, n));
  in.remove_prefix(colon + 1 + n);
  return true;
}

std::string EncodeToken(const ListQuery& q, const Cursor& c) {
  std::string raw = absl::StrCat("1", std::string(1, c.kind));
  AppendField(raw, q.prefix);
  AppendField(raw, q.delimiter);
  AppendField(raw, c.key);
  return absl::WebSafeBase64Escape(raw);
}

absl::StatusOr<Cursor> DecodeToken(const ListQuery& q) {
  const auto bad = [](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token ", why,
                     "; pass the next_page_token of the previous page with the same "
                     "prefix and delimiter, or none to start again"));
  };
  std::string raw;
  if (!absl::WebSafeBase64Unescape(q.page_token, &raw) || raw.size() < 2 || raw[0] != '1' ||
      (raw[1] != 'o' && raw[1] != 'p')) {
    return bad("is not one ecd gave");
  }
  absl::string_view in(raw);
  in.remove_prefix(2);
  std::string prefix, delimiter;
  Cursor c{raw[1], {}};
  if (!TakeField(in, prefix) || !TakeField(in, delimiter) || !TakeField(in, c.key) || !in.empty()) {
    return bad("is not one ecd gave");
  }
  if (prefix != q.prefix || delimiter != q.delimiter) {
    return bad("belongs to a listing with another prefix or delimiter");
  }
  if (!absl::StartsWith(c.key, q.prefix)) return bad("is not one ecd gave");
  return c;
}

// Where the page after `c` starts: after its object, or past every name under its prefix.
std::pair<std::string, bool> ResumeAfter(const Cursor& c) {
  if (c.kind == 'o') return {c.key, true};
  return {PrefixEnd(c.key), false};
}

// The common prefix `name` rolls up into, or "" when it does not.
std::string RollUp(absl::string_view name, const ListQuery& q) {
  if (q.delimiter.empty()) return "";
  const size_t at = name.find(q.delimiter, q.prefix.size());
  if (at == absl::string_view::npos) return "";
  return std::string(name.substr(0, at + q.delimiter.size()));
}

// Fills one page: see ListPageOf.
class PageBuilder {
 public:
  PageBuilder(const ListQuery& q, size_t page_size) : q_(q), page_size_(page_size) {}

  // Takes `name`'s entry if the page has room. False when it is full (an entry follows: the
  // page gets its next token).
  bool Full(size_t name_bytes) const {
    if (entries_ == page_size_) return true;
    return q_.max_bytes != 0 && entries_ > 0 &&
           bytes_ + name_bytes + q_.entry_overhead > q_.max_bytes;
  }
  void AddObject(ObjectRecord o) {
    Count(o.name.size());
    last_ = {'o', o.name};
    page_.objects.push_back(std::move(o));
  }
  void AddPrefix(std::string prefix) {
    Count(prefix.size());
    last_ = {'p', prefix};
    page_.common_prefixes.push_back(std::move(prefix));
  }
  ListPage Finish(bool more) {
    if (more) page_.next_page_token = EncodeToken(q_, last_);
    return std::move(page_);
  }

 private:
  void Count(size_t name_bytes) {
    ++entries_;
    bytes_ += name_bytes + q_.entry_overhead;
  }

  const ListQuery& q_;
  const size_t page_size_;
  size_t entries_ = 0;
  size_t bytes_ = 0;
  Cursor last_;
  ListPage page_;
};

}  // namespace

std::string PrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

absl::StatusOr<ListPage> ListPageOf(const ListQuery& query, const FetchObjects& fetch) {
  const size_t page_size =
      query.page_size == 0 ? kDefaultPageSize : std::min(query.page_size, kMaxPageSize);
  std::string from = query.prefix;
  bool after = false;
  if (!query.page_token.empty()) {
    absl::StatusOr<Cursor> c = DecodeToken(query);
    if (!c.ok()) return c.status();
    std::tie(from, after) = ResumeAfter(*c);
    if (from.empty()) return ListPage{};  // the last page ended past every name
  }
  const std::string before = PrefixEnd(query.prefix);
  PageBuilder page(query, page_size);
  // One more than the page can take: a row past a full page says that more follow. With a
  // delimiter, a common prefix skips the rows after it, so fewer are fetched at a time.
  const size_t limit =
      query.delimiter.empty() ? page_size + 1 : std::min<size_t>(page_size + 1, 32);
  for (;;) {
    absl::StatusOr<std::vector<ObjectRecord>> rows = fetch(from, after, before, limit);
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return page.Finish(/*more=*/false);
    bool skipped = false;  // a common prefix moved `from` past the rest of `rows`
    for (ObjectRecord& o : *rows) {
      std::string prefix = RollUp(o.name, query);
      if (page.Full(prefix.empty() ? o.name.size() : prefix.size())) {
        return page.Finish(/*more=*/true);
      }
      if (prefix.empty()) {
        from = o.name;
        after = true;
        page.AddObject(std::move(o));
        continue;
      }
      from = PrefixEnd(prefix);
      after = false;
      page.AddPrefix(std::move(prefix));
      if (from.empty()) return page.Finish(/*more=*/false);
      skipped = true;
      break;
    }
    if (!skipped && rows->size() < limit) return page.Finish(/*more=*/false);
  }
}

}  // namespace ecd::store
