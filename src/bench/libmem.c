/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The counting allocator (libmem.h). A block is [header | the caller's bytes]: the header keeps
 * the size asked for and the index of the call site in a fixed open-addressing table keyed by
 * the return address, so free and realloc know what to take off where without a lookup.
 */
#include "bench/libmem.h"

#include "clusterpipe/clusterpipe.h"

#include <dlfcn.h>
#ifdef __GLIBC__
#include <malloc.h> /* mallinfo2 */
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SITES 4096 /* distinct call sites of the library's allocations: a few hundred */
#define OVERFLOW_SITE (SITES - 1) /* where the sites past the table are counted together */

typedef struct header {
    uint64_t size;
    uint32_t site;
    uint32_t pad; /* 16 bytes keep the caller's block aligned as malloc's is */
} header;

typedef struct site {
    _Atomic(uintptr_t) addr; /* 0: free entry */
    _Atomic int64_t bytes, blocks;
} site;

static site sites[SITES];
static _Atomic int64_t live_bytes, live_blocks;

static uint32_t site_of(const void *ret) {
    uintptr_t a = (uintptr_t)ret;
    uint32_t i = (uint32_t)((a >> 2) * 2654435761u) % OVERFLOW_SITE;
    for (int probe = 0; probe < OVERFLOW_SITE; probe++, i = (i + 1) % OVERFLOW_SITE) {
        uintptr_t cur = atomic_load_explicit(&sites[i].addr, memory_order_relaxed);
        if (cur == a)
            return i;
        if (cur == 0) {
            uintptr_t expect = 0;
            if (atomic_compare_exchange_strong(&sites[i].addr, &expect, a) || expect == a)
                return i;
        }
    }
    return OVERFLOW_SITE;
}

static void count(uint32_t s, int64_t bytes, int64_t blocks) {
    atomic_fetch_add_explicit(&sites[s].bytes, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&sites[s].blocks, blocks, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_bytes, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&live_blocks, blocks, memory_order_relaxed);
}

static void *settle(header *h, size_t n, const void *ret) {
    if (h == NULL)
        return NULL;
    h->size = n;
    h->site = site_of(ret);
    count(h->site, (int64_t)n, 1);
    return h + 1;
}

static void *count_malloc(size_t n) {
    if (n > SIZE_MAX - sizeof(header))
        return NULL;
    return settle(malloc(sizeof(header) + n), n, __builtin_return_address(0));
}

static void *count_calloc(size_t nmemb, size_t size) {
    if (size != 0 && nmemb > (SIZE_MAX - sizeof(header)) / size)
        return NULL;
    size_t n = nmemb * size;
    return settle(calloc(1, sizeof(header) + n), n, __builtin_return_address(0));
}

static void count_free(void *p) {
    if (p == NULL)
        return;
    header *h = (header *)p - 1;
    count(h->site, -(int64_t)h->size, -1);
    free(h);
}

static void *count_realloc(void *p, size_t n) {
    if (p == NULL)
        return count_malloc(n);
    if (n > SIZE_MAX - sizeof(header))
        return NULL;
    header *h = (header *)p - 1;
    uint32_t old_site = h->site;
    uint64_t old_size = h->size;
    header *nh = realloc(h, sizeof(header) + n);
    if (nh == NULL)
        return NULL; /* the old block stands, counted as it was */
    count(old_site, -(int64_t)old_size, -1);
    return settle(nh, n, __builtin_return_address(0));
}

int cp__libmem_install(void) {
    cp_allocators a = {count_malloc, count_calloc, count_realloc, count_free};
    return cp_set_allocators(&a, NULL);
}

void cp__libmem_live(uint64_t *bytes, uint64_t *blocks) {
    int64_t b = atomic_load_explicit(&live_bytes, memory_order_relaxed);
    int64_t k = atomic_load_explicit(&live_blocks, memory_order_relaxed);
    *bytes = b > 0 ? (uint64_t)b : 0;
    *blocks = k > 0 ? (uint64_t)k : 0;
}

static int by_bytes(const void *a, const void *b) {
    int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
    return x < y ? 1 : x > y ? -1 : 0;
}

void cp__libmem_write_sites(FILE *f, int max) {
    static int64_t held[SITES][2]; /* bytes, index: the callers are one thread at a time */
    int n = 0;
    for (int i = 0; i < SITES; i++) {
        int64_t b = atomic_load_explicit(&sites[i].bytes, memory_order_relaxed);
        if (b != 0) {
            held[n][0] = b;
            held[n][1] = i;
            n++;
        }
    }
    qsort(held, (size_t)n, sizeof(held[0]), by_bytes);
    for (int k = 0; k < n && k < max; k++) {
        const site *s = &sites[held[k][1]];
        uintptr_t a = atomic_load_explicit(&s->addr, memory_order_relaxed);
        Dl_info info;
        memset(&info, 0, sizeof(info));
        if (a == 0 || dladdr((void *)a, &info) == 0)
            info.dli_fbase = NULL;
        /* The return address minus one: the call itself, as addr2line wants it. */
        uintptr_t off = a - (uintptr_t)info.dli_fbase - 1;
        fprintf(f, "%lld %lld 0x%lx %s\n", (long long)held[k][0],
                (long long)atomic_load_explicit(&s->blocks, memory_order_relaxed),
                (unsigned long)off, info.dli_sname != NULL ? info.dli_sname : "?");
    }
}

/* The process's resident memory in KiB (0 when /proc cannot say). */
static unsigned long long rss_kib(void) {
    unsigned long long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%llu %llu", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * (unsigned long long)sysconf(_SC_PAGESIZE) / 1024;
}

void cp__libmem_sample(FILE *mem, const char *sites_path, double seconds) {
    uint64_t bytes, blocks;
    cp__libmem_live(&bytes, &blocks);
    size_t used = 0, free_ = 0, mmapped = 0, heap = 0; /* 0: not glibc's malloc */
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
    struct mallinfo2 mi = mallinfo2();
    used = mi.uordblks + mi.hblkhd;
    free_ = mi.fordblks;
    mmapped = mi.hblkhd;
    heap = mi.arena;
#endif
    fprintf(mem, "mem %.0f %llu %llu %llu %zu %zu %zu %zu\n", seconds, rss_kib(),
            (unsigned long long)bytes, (unsigned long long)blocks, used, free_, mmapped, heap);
    fflush(mem);
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", sites_path) >= (int)sizeof(tmp))
        return;
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return;
    cp__libmem_write_sites(f, 200);
    if (fclose(f) == 0)
        rename(tmp, sites_path);
}
