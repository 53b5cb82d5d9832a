/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Phase 2 of a cluster SCAN (scanlist.c): the slots without a certificate listed again. The
 * engine (scan.c) calls these for the phases CP__SCAN_PH_REREAD_START and CP__SCAN_PH_REREAD.
 * Each returns CP__SCAN_STEP_ON, a CP__SCAN_ASK_* for the driver, or a negative CP_E* with the
 * client's errstr set. One thread, the client's.
 */
#ifndef CLUSTERPIPE_SCANLIST_H
#define CLUSTERPIPE_SCANLIST_H

#include "lib/scan/scanstate.h"

/* With every slot certified the scan is complete; else the map is re-read and each slot is
 * first listed at its owner there. */
int cp__scan_reread_start(cp_scan *s);

/* One step of phase 2, going on from s->sub: a chunk or the pairs listed, their keys TYPE
 * filtered and copied out, their certificates given. */
int cp__scan_reread_step(cp_scan *s);

#endif
