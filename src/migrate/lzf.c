/* SPDX-License-Identifier: BSD-3-Clause
 *
 * LZF's decompression (lzf.h).
 */
#include "migrate/lzf.h"

#include <string.h>

int cp__lzf_unpack(const unsigned char *in, size_t in_len, unsigned char *out, size_t out_len) {
    size_t i = 0, o = 0;
    while (i < in_len) {
        unsigned ctrl = in[i++];
        if (ctrl < 32) {
            size_t run = ctrl + 1;
            if (run > in_len - i || run > out_len - o)
                return 0;
            memcpy(out + o, in + i, run);
            i += run;
            o += run;
            continue;
        }
        size_t n = ctrl >> 5;
        if (n == 7) {
            if (i >= in_len)
                return 0;
            n += in[i++];
        }
        n += 2;
        if (i >= in_len)
            return 0;
        size_t back = ((size_t)(ctrl & 31) << 8) + in[i++] + 1;
        if (back > o || n > out_len - o)
            return 0;
        for (size_t k = 0; k < n; k++, o++) /* may overlap what it writes: byte by byte */
            out[o] = out[o - back];
    }
    return o == out_len;
}
