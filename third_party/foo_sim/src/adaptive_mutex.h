// Makes a std::mutex spin briefly before it sleeps, where the C library
// offers that (glibc's adaptive mutex).
//
// The scheduler's mutex is taken by the host for every launch and by an
// executor for every kernel it finishes, each time for a fraction of a
// microsecond. A plain mutex puts the loser of each collision to sleep in
// the kernel and makes the winner wake it: on a chain of small kernels that
// was a futex call every third launch. Spinning first, the loser almost
// always gets the lock within the holder's few hundred nanoseconds.
#pragma once

#include <mutex>

#include <pthread.h>

namespace foo_sim {

// Call before the mutex is first locked.
inline void spin_before_sleeping(std::mutex& m) {
#if defined(__GLIBC__) && defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
  pthread_mutex_init(m.native_handle(), &attr);
  pthread_mutexattr_destroy(&attr);
#else
  (void)m;
#endif
}

}  // namespace foo_sim
