/* Division without the AVR's 32-bit library division (~700 cycles): a restoring division
 * whose quotient is known to be short, one compare-and-subtract per quotient bit. */
#ifndef UDIV_H
#define UDIV_H

#include <stdint.h>

/* floor(n / d) for a quotient of at most `bits` bits: requires d > 0, n < d << bits and
 * d << bits < 2^32 (bits <= 16). */
static inline uint16_t udiv_small(uint32_t n, uint32_t d, uint8_t bits)
{
    uint32_t dd = d << bits;
    uint16_t q = 0;
    for (uint8_t i = 0; i < bits; i++) {
        dd >>= 1;
        q = (uint16_t)(q << 1);
        if (n >= dd) {
            n -= dd;
            q |= 1u;
        }
    }
    return q;
}

#endif
