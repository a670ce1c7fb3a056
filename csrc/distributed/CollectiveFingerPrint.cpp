#include "distributed/CollectiveFingerPrint.h"

#include <ATen/Functions.h>
#include <c10/util/Exception.h>

#include "distributed/GlooWaits.h"

namespace foo::distributed {
namespace {

// Slots per rank: the fingerprint's length, its first entries, and a hash of
// all of them (a coalesced operation's fingerprint can be long).
constexpr int64_t kSlots = 16;
constexpr int64_t kShown = kSlots - 2;

int64_t fnv1a(const std::vector<int64_t>& values) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t v : values) {
    for (int byte = 0; byte < 8; ++byte) {
      h ^= (static_cast<uint64_t>(v) >> (8 * byte)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return static_cast<int64_t>(h);
}

std::vector<int64_t> shown(const int64_t* slots) {
  int64_t n = std::min(slots[0], kShown);
  return std::vector<int64_t>(slots + 1, slots + 1 + std::max<int64_t>(n, 0));
}

}  // namespace

FingerPrintExchange::FingerPrintExchange(c10d::Backend& group, std::vector<int64_t> mine, const PairCounts& pairs)
    : mine_(std::move(mine)), rank_(group.getRank()), size_(group.getSize()) {
  const int64_t per_rank = kSlots + 2 * size_;
  own_ = at::zeros({per_rank}, at::kLong);
  int64_t* slots = own_.data_ptr<int64_t>();
  slots[0] = static_cast<int64_t>(mine_.size());
  for (int64_t i = 0; i < std::min<int64_t>(slots[0], kShown); ++i) slots[1 + i] = mine_[i];
  slots[kSlots - 1] = fnv1a(mine_);
  TORCH_INTERNAL_ASSERT(pairs.sends_to.empty() || (static_cast<int>(pairs.sends_to.size()) == size_ &&
                                                   static_cast<int>(pairs.receives_from.size()) == size_));
  std::copy(pairs.sends_to.begin(), pairs.sends_to.end(), slots + kSlots);
  std::copy(pairs.receives_from.begin(), pairs.receives_from.end(), slots + kSlots + size_);
  all_ = at::empty({per_rank * size_}, at::kLong);
  work_ = group._allgather_base(all_, own_, c10d::AllgatherOptions());
}

void FingerPrintExchange::check(std::chrono::milliseconds timeout) const {
  wait_all({work_}, timeout);
  const int64_t* own = own_.const_data_ptr<int64_t>();
  const int64_t* all = all_.const_data_ptr<int64_t>();
  for (int64_t r = 0; r < size_; ++r) {
    const int64_t* theirs = all + r * own_.numel();
    if (std::equal(own, own + kSlots, theirs)) continue;
    std::vector<int64_t> t = shown(theirs);
    TORCH_CHECK(false, "the ranks' tensors do not match: rank ", rank_, " has ", c10::ArrayRef<int64_t>(mine_),
                ", rank ", r, " has ", c10::ArrayRef<int64_t>(t), theirs[0] > kShown ? " (and more)" : "",
                " (operation, its root if it has one, dtypes, element counts); a collective needs the same on every rank");
  }
  check_pairs();
}

void FingerPrintExchange::check_pairs() const {
  const int64_t* all = all_.const_data_ptr<int64_t>();
  const int64_t per_rank = own_.numel();
  for (int64_t from = 0; from < size_; ++from) {
    for (int64_t to = 0; to < size_; ++to) {
      const int64_t sent = all[from * per_rank + kSlots + to];
      const int64_t expected = all[to * per_rank + kSlots + size_ + from];
      TORCH_CHECK(sent == expected, "the ranks' split sizes do not match: rank ", from, " sends ", sent,
                  " elements to rank ", to, ", which expects ", expected, " from it; every rank's input split for a "
                  "peer must equal that peer's output split for it");
    }
  }
}

}  // namespace foo::distributed
