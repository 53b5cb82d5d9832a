/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CRC16-XMODEM behind cp_keyslot (public in clusterpipe.h). Pure, any thread.
 */
#ifndef CLUSTERPIPE_SLOT_H
#define CLUSTERPIPE_SLOT_H

#include <stddef.h>
#include <stdint.h>

/* CRC16-XMODEM of buf[0..len): polynomial 0x1021, initial value 0, no reflection. */
uint16_t cp__crc16(const char *buf, size_t len);

/* The same CRC one byte at a time: the definition the fast version is tested against. */
uint16_t cp__crc16_bytewise(const char *buf, size_t len);

#endif
