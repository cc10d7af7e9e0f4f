#include "siphash.h"

#include "bytes.h"

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

static void sip_absorb(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    sip_round(v);
    sip_round(v);
    v[0] ^= m;
}

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const uint8_t *data, size_t len)
{
    const uint64_t k0 = get_u64(key), k1 = get_u64(key + 8);
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
                     k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
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
    for (uint8_t r = 0; r < 4; r++) {
        sip_round(v);
    }
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}
