// Tests ListPageOf against a model: every page sequence over random names, prefixes, delimiters
// and page sizes gives exactly the model's objects and common prefixes, in order; names that
// exist throughout a listing appear once however the set changes between pages; the byte bound
// holds; foreign and damaged tokens are refused.
#include "lib/store/listing.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace ecd::store {
namespace {

// The objects, as the catalog would hold them (only names matter here).
class Model {
 public:
  FetchObjects Fetch() {
    return [this](absl::string_view from, bool after, absl::string_view before, size_t limit) {
      ++fetches_;
      std::vector<ObjectRecord> out;
      auto it =
          after ? names_.upper_bound(std::string(from)) : names_.lower_bound(std::string(from));
      for (; it != names_.end() && out.size() < limit; ++it) {
        if (!before.empty() && *it >= before) break;
        ObjectRecord o;
        o.name = *it;
        out.push_back(o);
      }
      return absl::StatusOr<std::vector<ObjectRecord>>(out);
    };
  }
  // What a listing of (prefix, delimiter) holds: objects and common prefixes, in name order.
  std::vector<std::string> Expect(const std::string& prefix, const std::string& delimiter) const {
    std::vector<std::string> out;
    for (const std::string& n : names_) {
      if (!absl::StartsWith(n, prefix)) continue;
      const size_t at = delimiter.empty() ? std::string::npos : n.find(delimiter, prefix.size());
      std::string entry = at == std::string::npos ? n : "P:" + n.substr(0, at + delimiter.size());
      if (out.empty() || out.back() != entry) out.push_back(entry);
    }
    return out;
  }
  std::set<std::string> names_;
  int fetches_ = 0;
};

// Every entry of every page, objects as names and prefixes as "P:" + prefix, in page order.
std::vector<std::string> ListAll(Model& m, ListQuery q, int* pages = nullptr,
                                 const std::function<void()>& between = nullptr) {
  std::vector<std::string> out;
  for (int n = 0;; ++n) {
    absl::StatusOr<ListPage> page = ListPageOf(q, m.Fetch());
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) return out;
    // Objects and prefixes interleave by name.
    std::map<std::string, std::string> entries;
    for (const ObjectRecord& o : page->objects) entries[o.name] = o.name;
    for (const std::string& p : page->common_prefixes) entries[p] = "P:" + p;
    EXPECT_LE(entries.size(), q.page_size == 0 ? kDefaultPageSize : q.page_size);
    for (const auto& [key, entry] : entries) out.push_back(entry);
    if (page->next_page_token.empty()) {
      if (pages != nullptr) *pages = n + 1;
      return out;
    }
    q.page_token = page->next_page_token;
    if (between) between();
  }
}

std::string RandomName(std::mt19937& rng) {
  static const char kParts[][6] = {"a", "b", "ab", "a/", "b/", "/", "x", "z.", "\xc3\xa9", "//"};
  std::string name;
  const int parts = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < parts; ++i) name += kParts[rng() % (sizeof(kParts) / sizeof(kParts[0]))];
  return name;
}

TEST(ListPageOf, EqualsTheModelForRandomQueries) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    Model m;
    const int n = static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) m.names_.insert(RandomName(rng));
    ListQuery q;
    q.prefix = rng() % 3 == 0 ? "" : RandomName(rng).substr(0, 1 + rng() % 3);
    q.delimiter = rng() % 3 == 0 ? "" : (rng() % 2 == 0 ? "/" : "b");
    q.page_size = 1 + rng() % 40;
    SCOPED_TRACE(testing::Message() << "prefix " << q.prefix << " delimiter " << q.delimiter
                                    << " page " << q.page_size);
    EXPECT_EQ(ListAll(m, q), m.Expect(q.prefix, q.delimiter));
  }
}

TEST(ListPageOf, PagesAreFullUntilTheLastAndTheLastHasNoToken) {
  Model m;
  for (int i = 0; i < 25; ++i) m.names_.insert("n" + std::to_string(100 + i));
  ListQuery q;
  q.page_size = 10;
  int pages = 0;
  EXPECT_EQ(ListAll(m, q, &pages).size(), 25u);
  EXPECT_EQ(pages, 3);
  q.page_size = 25;  // exactly one page: no token, no empty second page
  EXPECT_EQ(ListAll(m, q, &pages).size(), 25u);
  EXPECT_EQ(pages, 1);
  m.names_.clear();
  EXPECT_TRUE(ListAll(m, q, &pages).empty());
  EXPECT_EQ(pages, 1);
}

TEST(ListPageOf, NamesThatStayAppearOnceWhileOthersComeAndGo) {
  std::mt19937 rng(11);
  Model m;
  std::set<std::string> stable;
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "s/" + std::to_string(rng() % 100000);
    m.names_.insert(name);
    stable.insert(name);
  }
  ListQuery q;
  q.page_size = 37;
  int churn = 0;
  const std::vector<std::string> got = ListAll(m, q, nullptr, [&] {
    for (int i = 0; i < 20; ++i) {  // new names anywhere, and deletes of earlier new ones
      m.names_.insert("s/" + std::to_string(rng() % 100000) + "-new" + std::to_string(churn++));
    }
    for (auto it = m.names_.begin(); it != m.names_.end();) {
      it = (!stable.count(*it) && rng() % 3 == 0) ? m.names_.erase(it) : std::next(it);
    }
  });
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), got.size()) << "duplicates";
  for (const std::string& name : stable) {
    EXPECT_EQ(std::count(got.begin(), got.end(), name), 1) << name;
  }
}

TEST(ListPageOf, APrefixHidesOnlyItsNamesAndCostsOneFetch) {
  Model m;
  for (int i = 0; i < 500; ++i) m.names_.insert("dir/" + std::to_string(1000 + i));
  m.names_.insert("dis");
  m.names_.insert("dir.txt");
  ListQuery q;
  q.delimiter = "/";
  const std::vector<std::string> got = ListAll(m, q);
  EXPECT_EQ(got, (std::vector<std::string>{"dir.txt", "P:dir/", "dis"}));  // '.' < '/'
  EXPECT_LE(m.fetches_, 3);
  q.prefix = "dir/";
  EXPECT_EQ(ListAll(m, q).size(), 500u);
}

TEST(ListPageOf, PagesStayWithinTheByteBound) {
  Model m;
  for (int i = 0; i < 100; ++i)
    m.names_.insert(std::string(1000, 'a' + i % 26) + std::to_string(i));
  ListQuery q;
  q.page_size = kMaxPageSize;
  q.max_bytes = 10000;
  q.entry_overhead = 100;
  std::vector<std::string> all;
  for (;;) {
    absl::StatusOr<ListPage> page = ListPageOf(q, m.Fetch());
    ASSERT_TRUE(page.ok());
    size_t bytes = 0;
    for (const ObjectRecord& o : page->objects) bytes += o.name.size() + 100;
    EXPECT_LE(bytes, q.max_bytes);
    EXPECT_FALSE(page->objects.empty());
    for (const ObjectRecord& o : page->objects) all.push_back(o.name);
    if (page->next_page_token.empty()) break;
    q.page_token = page->next_page_token;
  }
  EXPECT_EQ(all.size(), 100u);
}

TEST(ListPageOf, RefusesForeignAndDamagedTokens) {
  Model m;
  for (int i = 0; i < 10; ++i) m.names_.insert("a/" + std::to_string(i));
  ListQuery q;
  q.page_size = 3;
  absl::StatusOr<ListPage> first = ListPageOf(q, m.Fetch());
  ASSERT_TRUE(first.ok());
  ListQuery other = q;
  other.page_token = first->next_page_token;
  other.prefix = "a/";
  absl::StatusOr<ListPage> p = ListPageOf(other, m.Fetch());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("another prefix or delimiter"), std::string::npos);
  for (const std::string& token :
       {std::string("!!"), std::string("MQ"), first->next_page_token.substr(0, 6)}) {
    other = q;
    other.page_token = token;
    EXPECT_EQ(ListPageOf(other, m.Fetch()).status().code(), absl::StatusCode::kInvalidArgument)
        << token;
  }
}

TEST(PrefixEnd, IsTheLeastStringAfterTheRange) {
  EXPECT_EQ(PrefixEnd("a/"), "a0");
  EXPECT_EQ(PrefixEnd("ab"), "ac");
  EXPECT_EQ(PrefixEnd(""), "");
  EXPECT_EQ(PrefixEnd("a\xff\xff"), "b");
  EXPECT_EQ(PrefixEnd("\xff"), "");
}

}  // namespace
}  // namespace ecd::store
