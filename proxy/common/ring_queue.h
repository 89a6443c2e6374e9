// A FIFO over one growable ring buffer: push at the back, pop at the front, index from the front.
//
// Why not std::deque: libstdc++'s deque frees a 512-byte node each time its front crosses one and
// allocates another at the back, so a queue that stays short but sees steady traffic (a backend
// connection's requests in flight) allocates once every 512 / sizeof(T) pushes forever. This one
// doubles its capacity when full and never shrinks: once warm, pushing and popping allocate
// nothing. Elements are copied in and out (T is a small trivially copyable record).
#pragma once

#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace mcring::common {

template <typename T>
class RingQueue {
 public:
  template <bool kConst>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const T*, T*>;
    using reference = std::conditional_t<kConst, const T&, T&>;
    using Queue = std::conditional_t<kConst, const RingQueue, RingQueue>;

    Iterator() = default;
    Iterator(Queue* q, size_t i) : q_(q), i_(i) {}
    reference operator*() const { return (*q_)[i_]; }
    pointer operator->() const { return &(*q_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator was = *this;
      ++i_;
      return was;
    }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }

   private:
    Queue* q_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return buf_[head_]; }
  const T& front() const { return buf_[head_]; }
  T& back() { return (*this)[size_ - 1]; }
  T& operator[](size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }

  void push_back(const T& v) {
    if (size_ == buf_.size()) {
      grow();
    }
    buf_[(head_ + size_) & (buf_.size() - 1)] = v;
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
  }
  // Appends [first, last) in order.
  template <typename It>
  void append(It first, It last) {
    for (; first != last; ++first) {
      push_back(*first);
    }
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }
  void swap(RingQueue& o) noexcept {
    buf_.swap(o.buf_);
    std::swap(head_, o.head_);
    std::swap(size_, o.size_);
  }

  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, size_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

 private:
  // Capacity stays a power of two, so an index wraps with a mask.
  void grow() {
    std::vector<T> bigger(buf_.empty() ? 16 : 2 * buf_.size());
    for (size_t i = 0; i < size_; ++i) {
      bigger[i] = (*this)[i];
    }
    buf_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> buf_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace mcring::common
