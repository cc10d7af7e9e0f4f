/* SipHash-2-4 (Aumasson & Bernstein, 2012): 64-bit keyed hash with a 128-bit key. */
#ifndef SIPHASH_H
#define SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_LEN 16

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const uint8_t *data, size_t len);

#endif
