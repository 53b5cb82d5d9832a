/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Phase 1 of a cluster SCAN (scanwalk.c): every master walked. The engine (scan.c) calls these
 * for the phases CP__SCAN_PH_START and CP__SCAN_PH_MASTERS. Each returns CP__SCAN_STEP_ON, a
 * CP__SCAN_ASK_* for the driver, or a negative CP_E* with the client's errstr set. One thread,
 * the client's.
 */
#ifndef CLUSTERPIPE_SCANWALK_H
#define CLUSTERPIPE_SCANWALK_H

#include "lib/scan/scanstate.h"

/* The scan's first step: the map re-read (a cluster), then its masters listed (s->masters, the
 * scan's) and phase 1 begun. */
int cp__scan_start(cp_scan *s);

/* One round trip of master `at`'s walk: its MIGRATE count, view and first SCAN; a SCAN; or the
 * count and view after its last SCAN. With every master walked, phase 2 (or the end) begins. */
int cp__scan_walk_ask(cp_scan *s);

/* What the round trip answered: the keys (the batch), the next cursor, the certificates of a
 * walk's end. */
int cp__scan_walk_take(cp_scan *s);

#endif
