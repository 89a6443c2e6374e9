// IoBatch over liburing: SEND/RECV for one piece, SENDMSG/RECVMSG for several, all MSG_DONTWAIT
// so that none waits in the kernel (a full or empty socket completes with -EAGAIN at once).
#include "proxy/net/io_batch.h"

#include <liburing.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mcring::net {

namespace {

constexpr int kSendFlags = MSG_NOSIGNAL | MSG_DONTWAIT;
constexpr int kRecvFlags = MSG_DONTWAIT;

// The cheapest setup this kernel takes: completions run when this thread asks for them
// (DEFER_TASKRUN, 6.1), by one issuer (SINGLE_ISSUER, 6.0); every send queued is submitted even
// if one is refused (SUBMIT_ALL, 5.18). Older kernels get fewer of these.
int initRing(io_uring* ring) {
#ifdef IORING_SETUP_DEFER_TASKRUN
  if (io_uring_queue_init(
          IoBatch::kEntries, ring,
          IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN) == 0) {
    return 0;
  }
#endif
  if (io_uring_queue_init(IoBatch::kEntries, ring, IORING_SETUP_SUBMIT_ALL) == 0) {
    return 0;
  }
  return io_uring_queue_init(IoBatch::kEntries, ring, 0);
}

}  // namespace

std::unique_ptr<IoBatch> IoBatch::open(std::string* why) {
  std::unique_ptr<IoBatch> b(new IoBatch());
  b->ring_ = std::make_unique<io_uring>();
  const int r = initRing(b->ring_.get());
  if (r < 0) {
    if (why != nullptr) {
      *why = std::strerror(-r);
    }
    b->ring_.reset();
    return nullptr;
  }
  // SEND and RECV came in 5.6, with the probe itself; a ring without them is no use.
  io_uring_probe* probe = io_uring_get_probe_ring(b->ring_.get());
  const bool ops = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_SEND) &&
                   io_uring_opcode_supported(probe, IORING_OP_RECV) &&
                   io_uring_opcode_supported(probe, IORING_OP_SENDMSG) &&
                   io_uring_opcode_supported(probe, IORING_OP_RECVMSG);
  if (probe != nullptr) {
    io_uring_free_probe(probe);
  }
  if (!ops) {
    if (why != nullptr) {
      *why = "the kernel's io_uring has no socket send and receive (before Linux 5.6)";
    }
    return nullptr;  // the destructor exits the ring
  }
  b->iov_.resize(static_cast<size_t>(kEntries) * kMaxPieces);
  b->msgs_.resize(kEntries);
  b->results_.reserve(kEntries);
  return b;
}

IoBatch::~IoBatch() {
  if (ring_ != nullptr) {
    io_uring_queue_exit(ring_.get());
  }
}

void IoBatch::add(Op op, int fd, int pieces) {
  // The ring's submission queue has kEntries slots and is emptied by every run(): never full.
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  iovec* iov = &iov_[count_ * kMaxPieces];
  if (pieces == 1) {
    if (op == Op::Send) {
      io_uring_prep_send(sqe, fd, iov[0].iov_base, iov[0].iov_len, kSendFlags);
    } else {
      io_uring_prep_recv(sqe, fd, iov[0].iov_base, iov[0].iov_len, kRecvFlags);
    }
  } else {
    msghdr& m = msgs_[count_];
    m = msghdr{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(pieces);
    if (op == Op::Send) {
      io_uring_prep_sendmsg(sqe, fd, &m, kSendFlags);
    } else {
      io_uring_prep_recvmsg(sqe, fd, &m, kRecvFlags);
    }
  }
  io_uring_sqe_set_data64(sqe, count_);
  ++count_;
}

void IoBatch::run() {
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
  // A submitted operation whose result cannot be read may have moved bytes: its connection must
  // fail, not write them again (or lose what was read).
  std::fill(results_.begin(), results_.begin() + submitted, -EIO);
  // Each submitted operation has completed (MSG_DONTWAIT: none waits for room or data), so its
  // result is posted or deferred to this thread; waiting only runs what was deferred.
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
    // Operations the kernel did not take must never run later, after the caller has done them
    // itself (they report -EAGAIN): only a new ring forgets them.
    io_uring_queue_exit(ring_.get());
    if (initRing(ring_.get()) < 0) {
      ring_.reset();
    }
  }
}

}  // namespace mcring::net
