/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Durations as a user types them: a number with a unit, "250us", "0.5ms", "1ms", "2s" (ns, us,
 * ms, s; a bare "0" alone may go without one), and an RTT with its jitter, "500us~50us". Into
 * nanoseconds, and back into the shortest such text. Pure functions, any thread.
 */
#ifndef CLUSTERPIPE_UTIL_DUR_H
#define CLUSTERPIPE_UTIL_DUR_H

#include <stddef.h>
#include <stdint.h>

/* Parses s into *ns. Returns 0, or -EINVAL (no number, no unit, a negative value, trailing
 * text, or more than an hour). */
int cp__dur_parse(const char *s, uint64_t *ns);

/* "D" or "D~J": the delay into *ns and the jitter into *jitter_ns (0 without one). Returns 0 or
 * -EINVAL (either part as cp__dur_parse refuses it, or a jitter larger than D). */
int cp__dur_parse_jitter(const char *s, uint64_t *ns, uint64_t *jitter_ns);

/* ns as text in the largest unit that keeps it exact to 0.001: "0", "250us", "1.5ms", "2s".
 * Always NUL-terminated; returns buf. */
char *cp__dur_format(uint64_t ns, char *buf, size_t len);

#endif
