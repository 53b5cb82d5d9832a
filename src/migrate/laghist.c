/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A source's offsets over time (laghist.h).
 */
#include "migrate/laghist.h"

static int at(const cp__laghist *h, int k) { /* the k-th oldest sample's index */
    return (h->head + k) % CP__LAGHIST_SAMPLES;
}

void cp__laghist_note(cp__laghist *h, int64_t now_ms, uint64_t off) {
    if (h->n > 0 && off < h->off[at(h, h->n - 1)])
        off = h->off[at(h, h->n - 1)];
    if (h->n >= 2) { /* the newest sample is kept; it stays only once it is spaced */
        int last = at(h, h->n - 1), prev = at(h, h->n - 2);
        if (h->t_ms[last] - h->t_ms[prev] < CP__LAGHIST_SPACING_MS) {
            h->t_ms[last] = now_ms;
            h->off[last] = off;
            return;
        }
    }
    if (h->n == CP__LAGHIST_SAMPLES) { /* full: the oldest goes */
        h->head = at(h, 1);
        h->n--;
    }
    int k = at(h, h->n++);
    h->t_ms[k] = now_ms;
    h->off[k] = off;
}

double cp__laghist_seconds(const cp__laghist *h, int64_t now_ms, uint64_t applied, int *at_least) {
    *at_least = 0;
    if (h->n == 0)
        return -1;
    int k = 0;
    while (k < h->n && h->off[at(h, k)] <= applied)
        k++;
    if (k == h->n)
        return 0;
    int b = at(h, k);
    if (k == 0) {
        *at_least = 1;
        return (double)(now_ms - h->t_ms[b]) / 1000.0;
    }
    /* The source passed applied between samples a and b: when, with the writes evenly spread. */
    int a = at(h, k - 1);
    double share = (double)(applied - h->off[a]) / (double)(h->off[b] - h->off[a]);
    double passed = (double)h->t_ms[a] + share * (double)(h->t_ms[b] - h->t_ms[a]);
    double lag = ((double)now_ms - passed) / 1000.0;
    return lag > 0 ? lag : 0;
}
