#include "siphash.h"

#include "bytes.h"

#ifdef __AVR__
/* The rounds in assembly with the state in registers (siphash_avr.S, written by
 * tools/gen_siphash_avr.py): avr-gcc's 64-bit rotations loop bit by bit and its 64-bit words
 * do not fit the registers, so the C rounds take ~1100 cycles each. Not reentrant: called
 * from the main loop only. */
extern uint64_t siphash_avr_v[4];
void siphash_avr_rounds2(void);
void siphash_avr_rounds4(void);
#define STATE siphash_avr_v
#define ROUNDS2(v) siphash_avr_rounds2()
#define ROUNDS4(v) siphash_avr_rounds4()
#else
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = ROTL(v[1], 13);
    v[1] ^= v[0];
    v[0] = ROTL(v[0], 32);
    v[2] += v[3];
    v[3] = ROTL(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = ROTL(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = ROTL(v[1], 17);
    v[1] ^= v[2];
    v[2] = ROTL(v[2], 32);
}

static void sip_rounds(uint64_t v[4], uint8_t n)
{
    while (n--) {
        sip_round(v);
    }
}

static uint64_t host_state[4];
#define STATE host_state
#define ROUNDS2(v) sip_rounds(v, 2)
#define ROUNDS4(v) sip_rounds(v, 4)
#endif

static void sip_absorb(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    ROUNDS2(v);
    v[0] ^= m;
}

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const uint8_t *data, size_t len)
{
    const uint64_t k0 = get_u64(key), k1 = get_u64(key + 8);
    uint64_t *v = STATE;
    v[0] = k0 ^ 0x736f6d6570736575ull;
    v[1] = k1 ^ 0x646f72616e646f6dull;
    v[2] = k0 ^ 0x6c7967656e657261ull;
    v[3] = k1 ^ 0x7465646279746573ull;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        sip_absorb(v, get_u64(data + i));
    }
    uint64_t last = (uint64_t)len << 56;
    for (uint8_t shift = 0; i < len; i++, shift += 8) {
        last |= (uint64_t)data[i] << shift;
    }
    sip_absorb(v, last);
    v[2] ^= 0xff;
    ROUNDS4(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}
