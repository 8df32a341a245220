/* LD_PRELOAD shim for tests/bench/allocs.sh: counts malloc() calls per
 * thread and prints "THREAD <name> <count>" to stderr as each thread that
 * called malloc() exits (a pthread key destructor; the main thread, which
 * leaves through exit(), prints nothing). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
extern void* __libc_malloc(size_t);
static __thread long mine;
static __thread int registered;
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void report(void* p) { char name[32] = {0}; prctl(PR_GET_NAME, name); fprintf(stderr, "THREAD %s %ld\n", name, mine); }
static void mk(void) { pthread_key_create(&key, report); }
void* malloc(size_t s) {
  mine++;
  if (!registered) { registered = 1; pthread_once(&once, mk); pthread_setspecific(key, (void*)1); }
  return __libc_malloc(s);
}
