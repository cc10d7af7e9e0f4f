/* The whole core (core/app) against a scripted HAL: frames in, pulses and frames out. */
#include <string.h>

#include "../core/app.h"
#include "../core/bytes.h"
#include "../core/messages.h"
#include "../core/protocol.h"
#include "check.h"
#include "fake_hal.h"

static proto_sender_t host;

typedef struct {
    int pongs, telemetry, errors;
    msg_pong_t pong;
    msg_error_t error;
    uint8_t telemetry_payload[PROTO_MAX_PAYLOAD];
} replies_t;

static void start(void)
{
    fake_reset();
    host = (proto_sender_t){.dir = PROTO_DIR_TO_MCU};
    app_init(NULL);
    app_step();
}

static void send(uint8_t type, const uint8_t *payload, uint8_t len)
{
    uint8_t frame[PROTO_MAX_FRAME];
    fake_rx(frame, protocol_encode(&host, type, payload, len, frame));
    app_step();
}

static void enable(bool on)
{
    const uint8_t payload[1] = {on};
    send(MSG_ENABLE, payload, 1);
}

static void set_target(uint8_t channel, int16_t cdeg, uint16_t duration_ms)
{
    uint8_t payload[5];
    put_u16(payload, duration_ms);
    payload[2] = channel;
    put_u16(payload + 3, (uint16_t)cdeg);
    send(MSG_SET_TARGETS, payload, sizeof payload);
}

static void config_system(uint16_t watchdog_ms, uint8_t action)
{
    uint8_t payload[7];
    put_u16(payload, watchdog_ms);
    payload[2] = action;
    put_u16(payload + 3, 20);
    put_u16(payload + 5, 0);
    send(MSG_CONFIG_SYSTEM, payload, sizeof payload);
}

static void advance_ms(uint32_t ms)
{
    fake_now_us += ms * 1000u;
    app_step();
}

static void collect(void *ctx, const proto_frame_t *f)
{
    replies_t *r = ctx;
    if (f->type == MSG_PONG) {
        r->pongs++;
        r->pong.host_time_us = get_u64(f->payload);
        r->pong.mcu_time_us = get_u32(f->payload + 8);
        r->pong.boot_id = get_u32(f->payload + MSG_PONG_BOOT_ID);
    } else if (f->type == MSG_TELEMETRY) {
        r->telemetry++;
        memcpy(r->telemetry_payload, f->payload, f->len);
    } else if (f->type == MSG_ERROR) {
        r->errors++;
        r->error = (msg_error_t){f->payload[0], f->payload[1], get_u16(f->payload + 2)};
    }
}

/* Everything the firmware sent since the last call. */
static replies_t replies(void)
{
    replies_t r = {0};
    proto_parser_t p;
    protocol_parser_init(&p, NULL, PROTO_DIR_TO_HOST, fake_boot_id, collect, &r);
    protocol_feed(&p, fake_tx, fake_tx_len);
    fake_tx_len = 0;
    return r;
}

static uint16_t last_flags(const replies_t *r)
{
    return get_u16(r->telemetry_payload + 4);
}

static void boots_without_pulses(void)
{
    start();
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++) {
        CHECK_EQ(fake_pulse_us[ch], 0);
    }
    set_target(3, 4500, 0); /* preloaded while disabled */
    CHECK_EQ(fake_pulse_us[3], 0);
    enable(true);
    CHECK_EQ(fake_pulse_us[3], 2000);
    CHECK_EQ(fake_pulse_us[0], 1500);
    advance_ms(20);
    replies_t r = replies();
    CHECK(r.telemetry >= 1);
    CHECK(last_flags(&r) & FLAG_ENABLED);
    CHECK_EQ(get_u16(r.telemetry_payload + MSG_TELEMETRY_ARRAYS + 2 * SERVO_CHANNELS + 2 * 3), 2000);
}

static void estop_latches_until_enable(void)
{
    start();
    enable(true);
    set_target(0, 9000, 0);
    CHECK_EQ(fake_pulse_us[0], 2500);
    send(MSG_ESTOP, NULL, 0);
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++) {
        CHECK_EQ(fake_pulse_us[ch], 0);
    }
    replies(); /* drop what came before */
    set_target(0, 0, 0);
    advance_ms(20);
    replies_t r = replies();
    CHECK_EQ(r.errors, 1);
    CHECK_EQ(r.error.code, ERR_NOT_ARMED);
    CHECK(last_flags(&r) & FLAG_ESTOP);
    CHECK_EQ(fake_pulse_us[0], 0);
    enable(true);
    CHECK_EQ(fake_pulse_us[0], 2500);
}

static void watchdog_limp(void)
{
    start();
    config_system(100, 1);
    enable(true);
    set_target(1, -4500, 0);
    advance_ms(99);
    CHECK_EQ(fake_pulse_us[1], 1000);
    advance_ms(6); /* checked every control period (5 ms) */
    CHECK_EQ(fake_pulse_us[1], 0);
    advance_ms(20);
    replies_t r = replies();
    CHECK(last_flags(&r) & FLAG_WATCHDOG_TRIPPED);
    enable(true);
    CHECK_EQ(fake_pulse_us[1], 1000);
}

static void watchdog_hold_freezes_motion(void)
{
    start();
    config_system(100, 0);
    enable(true);
    set_target(0, 9000, 1000); /* 1500 -> 2500 us over 1 s */
    advance_ms(50);
    advance_ms(51); /* trips here, 10 % of the way */
    uint16_t held = fake_pulse_us[0];
    CHECK(held > 1500 && held < 1700);
    advance_ms(500);
    CHECK_EQ(fake_pulse_us[0], held);
    advance_ms(20);
    replies_t r = replies();
    CHECK(last_flags(&r) & FLAG_WATCHDOG_TRIPPED);
}

static void ping_answers_pong(void)
{
    start();
    uint8_t payload[8];
    put_u64(payload, 0x1122334455667788ull);
    send(MSG_PING, payload, 8);
    replies_t r = replies();
    CHECK_EQ(r.pongs, 1);
    CHECK(r.pong.host_time_us == 0x1122334455667788ull);
    CHECK_EQ(r.pong.mcu_time_us, fake_now_us);
    CHECK_EQ(r.pong.boot_id, fake_boot_id);
}

static void bad_frames_counted_not_acted_on(void)
{
    start();
    const uint8_t bad_enable[1] = {2};
    send(MSG_ENABLE, bad_enable, 1);
    uint8_t frame[PROTO_MAX_FRAME];
    const uint8_t on[1] = {1};
    size_t n = protocol_encode(&host, MSG_ENABLE, on, 1, frame);
    frame[n - 1] ^= 0x40; /* corrupt CRC */
    fake_rx(frame, n);
    send(0x33, NULL, 0); /* unknown type */
    advance_ms(20);
    replies_t r = replies();
    CHECK_EQ(fake_pulse_us[0], 0);
    CHECK(!(last_flags(&r) & FLAG_ENABLED));
    CHECK_EQ(r.errors, 2);
    const uint8_t *counters = r.telemetry_payload + MSG_TELEMETRY_COUNTERS;
    /* each frame counts in one counter: the bad payload and the unknown type are not ok */
    CHECK_EQ(get_u16(counters + 2 * CNT_FRAMES_OK), 0);
    CHECK_EQ(get_u16(counters + 2 * CNT_BAD_CRC), 1);
    CHECK_EQ(get_u16(counters + 2 * CNT_BAD_PAYLOAD), 2);
}

void run_app_tests(void (*run)(const char *name, void (*fn)(void)))
{
    run("boots_without_pulses", boots_without_pulses);
    run("estop_latches_until_enable", estop_latches_until_enable);
    run("watchdog_limp", watchdog_limp);
    run("watchdog_hold_freezes_motion", watchdog_hold_freezes_motion);
    run("ping_answers_pong", ping_answers_pong);
    run("bad_frames_counted_not_acted_on", bad_frames_counted_not_acted_on);
}
