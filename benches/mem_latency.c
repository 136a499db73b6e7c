/* Load latency of this machine's caches and memory, as the packet engine
 * sees them: a pointer chase over a random cyclic permutation of 64-byte
 * lines, for working sets from 16 KiB to 256 MiB; prints ns per load.
 * A clock loop only tells the core's speed; the engine's loop waits on
 * loads, so on a shared VM its speed follows how much of the last-level
 * cache the neighbours leave (docs/benchmarks.md, 2026-11-29).
 *
 *   gcc -O2 benches/mem_latency.c -o /tmp/mem_latency && /tmp/mem_latency
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void) {
  const size_t sizes[] = {16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  for (int s = 0; s < 7; s++) {
    size_t n = sizes[s] / 64;
    char *buf = aligned_alloc(64, n * 64);
    size_t *perm = malloc(n * sizeof(size_t));
    if (!buf || !perm) {
      fprintf(stderr, "mem_latency: out of memory at %zu KiB\n", sizes[s] >> 10);
      return 1;
    }
    for (size_t i = 0; i < n; i++) perm[i] = i;
    srand(1);
    for (size_t i = n - 1; i > 0; i--) {
      size_t j = ((size_t)rand() * 65536u + (size_t)rand()) % (i + 1);
      size_t t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    for (size_t i = 0; i < n; i++) *(void **)(buf + perm[i] * 64) = buf + perm[(i + 1) % n] * 64;
    void *p = buf + perm[0] * 64;
    const size_t loads = 20000000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (size_t i = 0; i < loads; i++) p = *(void **)p;
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)loads;
    /* Printing p keeps the chase from being optimised away. */
    printf("%8zu KiB: %7.2f ns per load (%p)\n", sizes[s] >> 10, ns, p);
    free(buf);
    free(perm);
  }
  return 0;
}
