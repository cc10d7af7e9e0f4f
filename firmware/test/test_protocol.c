/* Framing, CRC, SipHash, resynchronisation, MAC and replay checks of core/protocol. */
#include <string.h>

#include "../core/bytes.h"
#include "../core/crc16.h"
#include "../core/messages.h"
#include "../core/protocol.h"
#include "../core/siphash.h"
#include "check.h"

static const uint8_t key[SIPHASH_KEY_LEN] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static const uint8_t other_key[SIPHASH_KEY_LEN] = {1};

typedef struct {
    int frames;
    uint16_t last_seq;
} count_t;

static void count(void *ctx, const proto_frame_t *f)
{
    count_t *c = ctx;
    c->frames++;
    c->last_seq = f->seq;
}

static size_t ping_frame(uint16_t seq, const uint8_t *k, uint32_t counter, uint8_t *out)
{
    proto_sender_t s = {.key = k, .dir = PROTO_DIR_TO_MCU, .seq = seq, .counter = counter};
    const uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    return protocol_encode(&s, MSG_PING, payload, sizeof payload, out);
}

/* Published check value of CRC-16/CCITT-FALSE (Williams' catalogue): "123456789" -> 29B1 */
static void crc_check_value(void)
{
    CHECK_EQ(crc16_update(CRC16_INIT, (const uint8_t *)"123456789", 9), 0x29B1);
}

/* SipHash-2-4 paper, appendix A: key 00..0f, messages 00..(n-1) */
static void siphash_reference(void)
{
    uint8_t msg[15];
    for (uint8_t i = 0; i < sizeof msg; i++) {
        msg[i] = i;
    }
    CHECK(siphash24(key, msg, 0) == 0x726fdb47dd0e0e31ull);
    CHECK(siphash24(key, msg, 8) == 0x93f5f5799a932462ull);
    CHECK(siphash24(key, msg, 15) == 0xa129ca6149be45e5ull);
}

static void resync_after_garbage(void)
{
    count_t c = {0};
    proto_parser_t p;
    protocol_parser_init(&p, NULL, PROTO_DIR_TO_MCU, 0, count, &c);
    uint8_t frame[PROTO_MAX_FRAME];
    size_t n = ping_frame(7, NULL, 0, frame);
    const uint8_t garbage[] = {0x00, PROTO_SYNC, 0xff, PROTO_SYNC, 0x03, 0x01, 0x55};
    protocol_feed(&p, garbage, sizeof garbage);
    protocol_feed(&p, frame, n);
    CHECK_EQ(c.frames, 1);
    CHECK_EQ(c.last_seq, 7);
    CHECK(p.counters.bad_length >= 1); /* 0xff is longer than any payload */
}

static void truncated_then_good(void)
{
    count_t c = {0};
    proto_parser_t p;
    protocol_parser_init(&p, NULL, PROTO_DIR_TO_MCU, 0, count, &c);
    uint8_t frame[PROTO_MAX_FRAME];
    size_t n = ping_frame(1, NULL, 0, frame);
    protocol_feed(&p, frame, n - 4); /* cut short: its CRC will span the next frame */
    n = ping_frame(2, NULL, 0, frame);
    protocol_feed(&p, frame, n);
    CHECK_EQ(c.frames, 1);
    CHECK_EQ(c.last_seq, 2);
    CHECK(p.counters.bad_crc >= 1);
}

static void every_flipped_bit_rejected(void)
{
    uint8_t frame[PROTO_MAX_FRAME];
    size_t n = ping_frame(3, NULL, 0, frame);
    for (size_t bit = 0; bit < 8 * n; bit++) {
        count_t c = {0};
        proto_parser_t p;
        protocol_parser_init(&p, NULL, PROTO_DIR_TO_MCU, 0, count, &c);
        uint8_t bad[PROTO_MAX_FRAME];
        memcpy(bad, frame, n);
        bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        protocol_feed(&p, bad, n);
        CHECK_EQ(c.frames, 0);
    }
}

static void auth_accepts_and_rejects(void)
{
    count_t c = {0};
    proto_parser_t p;
    protocol_parser_init(&p, key, PROTO_DIR_TO_MCU, 0, count, &c);
    uint8_t frame[PROTO_MAX_FRAME];

    size_t n = ping_frame(1, key, 10, frame);
    protocol_feed(&p, frame, n);
    CHECK_EQ(c.frames, 1);

    protocol_feed(&p, frame, n); /* replayed */
    CHECK_EQ(c.frames, 1);
    CHECK_EQ(p.counters.replayed, 1);

    n = ping_frame(2, other_key, 11, frame); /* wrong key */
    protocol_feed(&p, frame, n);
    CHECK_EQ(p.counters.bad_auth, 1);

    n = ping_frame(3, NULL, 0, frame); /* plain frame in authenticated mode */
    protocol_feed(&p, frame, n);
    CHECK_EQ(p.counters.bad_auth, 2);

    n = ping_frame(4, key, 12, frame); /* altered payload, CRC fixed up by the attacker */
    frame[PROTO_HEADER_LEN] ^= 1;
    uint16_t crc = crc16_update(CRC16_INIT, frame + 1, n - 3);
    frame[n - 2] = (uint8_t)crc;
    frame[n - 1] = (uint8_t)(crc >> 8);
    protocol_feed(&p, frame, n);
    CHECK_EQ(p.counters.bad_auth, 3);

    proto_sender_t reflect = {.key = key, .dir = PROTO_DIR_TO_HOST, .counter = 13};
    n = protocol_encode(&reflect, MSG_PING, frame, 8, frame + 64); /* wrong direction */
    protocol_feed(&p, frame + 64, n);
    CHECK_EQ(p.counters.bad_auth, 4);

    n = ping_frame(5, key, 14, frame);
    protocol_feed(&p, frame, n);
    CHECK_EQ(c.frames, 2);
    CHECK_EQ(p.counters.frames_ok, 2);
}

static void plain_mode_rejects_auth_frames(void)
{
    count_t c = {0};
    proto_parser_t p;
    protocol_parser_init(&p, NULL, PROTO_DIR_TO_MCU, 0, count, &c);
    uint8_t frame[PROTO_MAX_FRAME];
    size_t n = ping_frame(1, key, 1, frame);
    protocol_feed(&p, frame, n);
    CHECK_EQ(c.frames, 0);
    CHECK_EQ(p.counters.bad_auth, 1);
}

static void replay_window(void)
{
    proto_replay_t r = {0};
    CHECK(protocol_replay_accept(&r, 100));
    CHECK(!protocol_replay_accept(&r, 100));
    CHECK(protocol_replay_accept(&r, 98)); /* late but inside the window */
    CHECK(!protocol_replay_accept(&r, 98));
    CHECK(protocol_replay_accept(&r, 140));
    CHECK(!protocol_replay_accept(&r, 100)); /* now too old */
    CHECK(protocol_replay_accept(&r, 140 - PROTO_REPLAY_WINDOW + 1));
    CHECK(!protocol_replay_accept(&r, 140 - PROTO_REPLAY_WINDOW));
}

/* Frames recorded in one boot never verify in another (the boot id is in every MAC); a PING
 * MACs with boot id 0 and verifies in any boot; a PONG with the id it carries. */
static void mac_binds_the_boot_id(void)
{
    uint8_t frame[PROTO_MAX_FRAME];
    const uint8_t on[1] = {1};
    proto_sender_t host = {.key = key, .dir = PROTO_DIR_TO_MCU, .counter = 1, .boot_id = 5};
    size_t enable_n = protocol_encode(&host, MSG_ENABLE, on, 1, frame);
    uint8_t enable[PROTO_MAX_FRAME];
    memcpy(enable, frame, enable_n);
    const uint8_t ping_payload[8] = {9};
    size_t ping_n = protocol_encode(&host, MSG_PING, ping_payload, 8, frame);

    count_t c = {0};
    proto_parser_t mcu;
    protocol_parser_init(&mcu, key, PROTO_DIR_TO_MCU, 6, count, &c); /* restarted: boot 6 */
    protocol_feed(&mcu, enable, enable_n);
    CHECK_EQ(c.frames, 0);
    CHECK_EQ(mcu.counters.bad_auth, 1);
    protocol_feed(&mcu, frame, ping_n); /* a ping verifies in any boot */
    CHECK_EQ(c.frames, 1);

    protocol_parser_init(&mcu, key, PROTO_DIR_TO_MCU, 5, count, &c); /* the recording's boot */
    protocol_feed(&mcu, enable, enable_n);
    CHECK_EQ(c.frames, 2);

    uint8_t pong[MSG_PONG_LEN] = {0};
    put_u32(pong + MSG_PONG_BOOT_ID, 6);
    proto_sender_t mcu_tx = {.key = key, .dir = PROTO_DIR_TO_HOST, .counter = 1, .boot_id = 99};
    size_t pong_n = protocol_encode(&mcu_tx, MSG_PONG, pong, MSG_PONG_LEN, frame);
    proto_parser_t host_rx;
    protocol_parser_init(&host_rx, key, PROTO_DIR_TO_HOST, 1234, count, &c); /* any guess */
    protocol_feed(&host_rx, frame, pong_n);
    CHECK_EQ(c.frames, 3);
}

void run_protocol_tests(void (*run)(const char *name, void (*fn)(void)))
{
    run("crc_check_value", crc_check_value);
    run("siphash_reference", siphash_reference);
    run("resync_after_garbage", resync_after_garbage);
    run("truncated_then_good", truncated_then_good);
    run("every_flipped_bit_rejected", every_flipped_bit_rejected);
    run("auth_accepts_and_rejects", auth_accepts_and_rejects);
    run("plain_mode_rejects_auth_frames", plain_mode_rejects_auth_frames);
    run("replay_window", replay_window);
    run("mac_binds_the_boot_id", mac_binds_the_boot_id);
}
