#include "distributed/P2PHeader.h"

#include <sstream>

#include <ATen/Functions.h>

#include "distributed/GlooWaits.h"

namespace foo::distributed {

P2PHeader P2PHeader::send(c10d::Backend& group, const at::Tensor& sent, int dst, int tag) {
  at::Tensor message = at::empty({2}, at::kLong);
  int64_t* m = message.data_ptr<int64_t>();
  m[0] = static_cast<int64_t>(sent.scalar_type());
  m[1] = sent.numel();
  std::vector<at::Tensor> one{message};
  auto work = group.send(one, dst, tag);
  return P2PHeader(dst, message, std::move(work));
}

P2PHeader P2PHeader::recv(c10d::Backend& group, int src, int tag) {
  at::Tensor message = at::empty({2}, at::kLong);
  std::vector<at::Tensor> one{message};
  auto work = group.recv(one, src, tag);
  return P2PHeader(src, message, std::move(work));
}

void P2PHeader::wait(std::chrono::milliseconds timeout) const { wait_all({work_}, timeout); }

bool P2PHeader::matches(const at::Tensor& receiving) const {
  const int64_t* m = message_.const_data_ptr<int64_t>();
  return m[0] == static_cast<int64_t>(receiving.scalar_type()) && m[1] == receiving.numel();
}

at::Tensor P2PHeader::buffer_for_sent() const {
  const int64_t* m = message_.const_data_ptr<int64_t>();
  TORCH_CHECK(m[0] >= 0 && m[0] < static_cast<int64_t>(at::ScalarType::NumOptions) && m[1] >= 0,
              "fooccl: rank ", peer_, " announced a send of ", m[1], " elements of dtype number ", m[0]);
  return at::empty({m[1]}, static_cast<at::ScalarType>(m[0]));
}

std::string P2PHeader::mismatch(const at::Tensor& receiving) const {
  const int64_t* m = message_.const_data_ptr<int64_t>();
  std::ostringstream s;
  s << "rank " << peer_ << " sent " << m[1] << " elements of " << static_cast<at::ScalarType>(m[0])
    << ", but the receiving tensor has " << receiving.numel() << " elements of " << receiving.scalar_type()
    << "; a send and its receive need the same dtype and element count";
  return s.str();
}

}  // namespace foo::distributed
