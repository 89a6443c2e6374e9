// SendBatch over liburing: SEND for one piece, SENDMSG for several, all MSG_DONTWAIT so that
// none waits in the kernel (a full socket completes with -EAGAIN at once).
#include "proxy/net/send_batch.h"

#include <liburing.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mcring::net {

namespace {

constexpr int kSendFlags = MSG_NOSIGNAL | MSG_DONTWAIT;

// The cheapest setup this kernel takes: completions run when this thread asks for them
// (DEFER_TASKRUN, 6.1), by one issuer (SINGLE_ISSUER, 6.0); every send queued is submitted even
// if one is refused (SUBMIT_ALL, 5.18). Older kernels get fewer of these.
int initRing(io_uring* ring) {
#ifdef IORING_SETUP_DEFER_TASKRUN
  if (io_uring_queue_init(
          SendBatch::kEntries, ring,
          IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN) == 0) {
    return 0;
  }
#endif
  if (io_uring_queue_init(SendBatch::kEntries, ring, IORING_SETUP_SUBMIT_ALL) == 0) {
    return 0;
  }
  return io_uring_queue_init(SendBatch::kEntries, ring, 0);
}

}  // namespace

std::unique_ptr<SendBatch> SendBatch::open(std::string* why) {
  std::unique_ptr<SendBatch> b(new SendBatch());
  b->ring_ = std::make_unique<io_uring>();
  const int r = initRing(b->ring_.get());
  if (r < 0) {
    if (why != nullptr) {
      *why = std::strerror(-r);
    }
    b->ring_.reset();
    return nullptr;
  }
  b->iov_.resize(static_cast<size_t>(kEntries) * kMaxPieces);
  b->msgs_.resize(kEntries);
  b->results_.reserve(kEntries);
  return b;
}

SendBatch::~SendBatch() {
  if (ring_ != nullptr) {
    io_uring_queue_exit(ring_.get());
  }
}

void SendBatch::add(int fd, int pieces) {
  // The ring's submission queue has kEntries slots and is emptied by every run(): never full.
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  iovec* iov = &iov_[count_ * kMaxPieces];
  if (pieces == 1) {
    io_uring_prep_send(sqe, fd, iov[0].iov_base, iov[0].iov_len, kSendFlags);
  } else {
    msghdr& m = msgs_[count_];
    m = msghdr{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(pieces);
    io_uring_prep_sendmsg(sqe, fd, &m, kSendFlags);
  }
  io_uring_sqe_set_data64(sqe, count_);
  ++count_;
}

void SendBatch::run() {
  results_.assign(count_, -EAGAIN);
  unsigned submitted = 0;
  bool failed = false;
  while (submitted < count_) {
    const int r = io_uring_submit(ring_.get());
    if (r > 0) {
      submitted += static_cast<unsigned>(r);  // a short submission: the rest in the next call
    } else if (r != -EINTR) {
      failed = true;  // the kernel took none of the rest (it fails only when it took nothing)
      break;
    }
  }
  // A submitted send whose result cannot be read may have gone out: its connection must fail,
  // not write the bytes again.
  std::fill(results_.begin(), results_.begin() + submitted, -EIO);
  // Each submitted send has completed (MSG_DONTWAIT: none waits for room), so its result is
  // posted or deferred to this thread; waiting only runs what was deferred.
  unsigned seen = 0;
  while (seen < submitted) {
    io_uring_cqe* cqe = nullptr;
    const int r = io_uring_wait_cqe(ring_.get(), &cqe);
    if (r == -EINTR) {
      continue;
    }
    if (r < 0) {
      failed = true;
      break;
    }
    const uint64_t i = io_uring_cqe_get_data64(cqe);
    if (i < results_.size()) {
      results_[i] = cqe->res;
    }
    io_uring_cqe_seen(ring_.get(), cqe);
    ++seen;
  }
  count_ = 0;
  if (failed) {
    // Sends the kernel did not take must never go out later, after the caller has written
    // their bytes itself (they report -EAGAIN): only a new ring forgets them.
    io_uring_queue_exit(ring_.get());
    if (initRing(ring_.get()) < 0) {
      ring_.reset();
    }
  }
}

}  // namespace mcring::net
