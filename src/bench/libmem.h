/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The library's live memory, counted exactly (bench --lib-memory): a counting allocator set with
 * cp_set_allocators before any client exists. Every block the library allocates carries a
 * 16-byte header with its size and its call site (the library's code that called the allocator),
 * so the live bytes are the library's own, whatever malloc's arenas and fragmentation do to the
 * process's RSS, and they are known per call site: a structure that only grows shows as the site
 * that allocates it.
 *
 * Threads: any (relaxed atomics). Memory: the site table is static; once installed the allocator
 * stays for the life of the process (what the library allocated with it is freed with it).
 */
#ifndef CLUSTERPIPE_BENCH_LIBMEM_H
#define CLUSTERPIPE_BENCH_LIBMEM_H

#include <stdint.h>
#include <stdio.h>

/* Sets the counting allocator: 0, or the CP_E* code of cp_set_allocators. Call before any
 * client exists. */
int cp__libmem_install(void);

/* The library's live bytes (as asked for, headers not included) and blocks now. */
void cp__libmem_live(uint64_t *bytes, uint64_t *blocks);

/* Writes the call sites that hold memory now, most bytes first, one a line: "BYTES BLOCKS
 * OFFSET SYMBOL", OFFSET the call site's address in its object file (for addr2line -f -e),
 * SYMBOL the exported function's name or "?". At most max lines. */
void cp__libmem_write_sites(FILE *f, int max);

/* Appends "mem SECONDS RSS_KIB LIVE_BYTES LIVE_BLOCKS MALLOC_USED MALLOC_FREE MALLOC_MMAP
 * MALLOC_HEAP" to mem (flushed): the process's resident memory, the library's live memory, and
 * glibc malloc's own account over all its arenas (mallinfo2: bytes in use, free inside its heaps,
 * in mmapped blocks, and its heaps' size) at `seconds`; and replaces the file sites_path with the
 * call sites that hold it now (cp__libmem_write_sites, at most 200), through sites_path.tmp.
 * RSS against MALLOC_HEAP tells a heap that grew from one whose untouched pages got touched. */
void cp__libmem_sample(FILE *mem, const char *sites_path, double seconds);

#endif
